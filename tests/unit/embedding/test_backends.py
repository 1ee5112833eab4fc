"""embedding.backend / embedding.precision: the pairs, the checks, the export cache and the
fingerprints that keep each pair's vectors apart (no export here: the exports of the real
model are in tests/e2e/test_backends.py)."""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

import numpy as np
import pytest

from sweep.common.errors import SweepError
from sweep.common.files import folder_signature
from sweep.common.sqlite import text_key
from sweep.config.checks import check_config
from sweep.config.compose import compose
from sweep.config.schema import EncodeBackend, Precision
from sweep.config.specs import embedding_spec
from sweep.embedding import backends
from sweep.embedding.backends import (
    BACKENDS,
    MANIFEST,
    PRECISIONS,
    ensure_export,
    entry_file,
    export_key,
    verify,
)
from sweep.embedding.cache import EmbeddingCache
from sweep.embedding.models import EmbeddingSpec, LocalEmbedder, resolve_model_path


def test_every_precision_runs_on_some_backend_and_torch_fp32_is_the_reference() -> None:
    assert set(PRECISIONS) == {p for ps in BACKENDS.values() for p in ps}
    assert backends.REFERENCE == ("torch", "fp32")
    assert "fp32" in BACKENDS["torch"]


@pytest.mark.parametrize(("overrides", "message"), [
    (["embedding.backend=openvino", "embedding.precision=int8"],
     "embedding.precision='int8' is not available with embedding.backend=openvino "
     "(it runs fp32, bf16)"),
    (["embedding.backend=onnx", "embedding.precision=bf16"],
     "embedding.precision='bf16' is not available with embedding.backend=onnx "
     "(it runs fp32, int8)"),
    (["embedding=minilm_static", "embedding.backend=onnx"],
     "applies to family=sentence_transformers only, not model2vec_distill"),
    (["embedding.backend=onnx", "embedding.precision=int8", "embedding.device=cuda"],
     "runs on the CPU: embedding.device='cuda' needs backend=torch"),
])
def test_a_pair_that_cannot_run_is_one_line_before_any_work(overrides: list[str],
                                                            message: str) -> None:
    with pytest.raises(SweepError) as err:
        check_config(compose(overrides))
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_the_pairs_that_run_pass_the_checks() -> None:
    cfg = compose([])
    for backend, precisions in BACKENDS.items():
        if backend == "openvino" and not _installed("openvino"):
            continue  # the optional extra: its own test below checks the line it gets
        for precision in precisions:
            cfg.embedding.backend = EncodeBackend(backend)
            cfg.embedding.precision = Precision(precision)
            check_config(cfg)


def _installed(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def test_a_missing_optional_extra_is_one_line_naming_it(monkeypatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "openvino" else real(name, *a))
    with pytest.raises(SweepError) as err:
        check_config(compose(["embedding.backend=openvino"]))
    text = str(err.value)
    assert text == ("embedding.backend=openvino needs the Python package 'openvino', which "
                    "is not installed (install the optional extra: "
                    "pip install 'chunk-sweep[openvino]')")
    # a default dependency missing is a broken install, not an extra
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "onnxruntime" else real(name, *a))
    with pytest.raises(SweepError, match=r"'onnxruntime', which is not installed \(install "
                                         r"make install\)"):
        backends.require("onnx")


# --- the export cache, with an exporter that writes a small file ---------------------------

def _model_folder(tmp_path: Path) -> str:
    folder = tmp_path / "tiny-model"
    folder.mkdir()
    (folder / "weights.bin").write_bytes(b"w" * 100)
    return str(folder)


class CountingExporter:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, source: str, backend: str, precision: str, into: Path) -> str:
        self.calls += 1
        (into / "model.onnx").write_bytes(f"{source}|{backend}|{precision}".encode() * 10)
        (into / "config.json").write_text("{}", encoding="utf-8")
        return "model.onnx"


def test_an_export_is_made_once_and_its_manifest_holds_each_file_s_sha256(tmp_path) -> None:
    source, root, exporter = _model_folder(tmp_path), tmp_path / "exports", CountingExporter()
    folder = ensure_export(source, "onnx", "int8", root, exporter)
    assert ensure_export(source, "onnx", "int8", root, exporter) == folder
    assert exporter.calls == 1
    manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    assert manifest["files"] == {
        name: hashlib.sha256((folder / name).read_bytes()).hexdigest()
        for name in ("config.json", "model.onnx")}
    assert entry_file(folder) == folder / "model.onnx"
    assert folder.name == f"tiny-model-onnx-int8-{export_key(source, 'onnx', 'int8')}"
    assert [p.name for p in root.iterdir() if p.name.startswith(".export-")] == []


@pytest.mark.parametrize("damage", ["flip a byte", "truncate", "delete a file",
                                    "delete the manifest"])
def test_a_damaged_export_is_detected_and_made_again_with_a_warning(tmp_path, caplog,
                                                                    damage: str) -> None:
    source, root, exporter = _model_folder(tmp_path), tmp_path / "exports", CountingExporter()
    folder = ensure_export(source, "onnx", "fp32", root, exporter)
    good = (folder / "model.onnx").read_bytes()
    if damage == "flip a byte":
        (folder / "model.onnx").write_bytes(bytes([good[0] ^ 1]) + good[1:])
    elif damage == "truncate":
        (folder / "model.onnx").write_bytes(good[:-3])
    elif damage == "delete a file":
        (folder / "config.json").unlink()
    else:
        (folder / MANIFEST).unlink()
    assert verify(folder) is not None
    with caplog.at_level(logging.WARNING, logger="sweep.embedding.backends"):
        again = ensure_export(source, "onnx", "fp32", root, exporter)
    assert again == folder and exporter.calls == 2
    assert verify(folder) is None and (folder / "model.onnx").read_bytes() == good
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 1 and "is damaged" in warned[0] and "exporting it again" in warned[0]


def test_an_export_is_keyed_by_model_pair_and_library_versions(tmp_path, monkeypatch) -> None:
    source = _model_folder(tmp_path)
    keys = {export_key(source, b, p) for b in ("onnx", "openvino") for p in ("fp32", "int8")}
    assert len(keys) == 3  # openvino fp32 and int8 would share one IR (a compile-time hint)
    assert export_key(source, "openvino", "bf16") == export_key(source, "openvino", "fp32")
    before = export_key(source, "onnx", "int8")
    monkeypatch.setattr(backends, "library_versions", lambda: "onnxruntime=0.0.1")
    assert export_key(source, "onnx", "int8") != before
    monkeypatch.undo()
    (Path(source) / "weights.bin").write_bytes(b"v" * 100)  # other weights, same size
    assert export_key(source, "onnx", "int8") != before


# --- the embedding cache keeps each pair's vectors apart -----------------------------------

def _spec(backend: str, precision: str) -> EmbeddingSpec:
    return EmbeddingSpec(backend=backend, precision=precision)


def test_the_spec_carries_both_keys() -> None:
    spec = embedding_spec(compose(["embedding.backend=onnx", "embedding.precision=int8"]))
    assert (spec.backend, spec.precision) == ("onnx", "int8")


def test_the_reference_fingerprint_is_the_one_from_before_the_backend_axis() -> None:
    # vectors cached by every earlier sweep stay valid
    e = LocalEmbedder(_spec("torch", "fp32"))
    path = resolve_model_path("minilm")
    assert e.fingerprint == hashlib.sha256(
        f"{folder_signature(path)}|||{e.max_seq_length}|l2".encode()).hexdigest()[:16]
    assert e.loads == 0


def test_each_pair_has_its_own_fingerprint_without_loading_the_model() -> None:
    pairs = [(b, p) for b, ps in BACKENDS.items() for p in ps]
    embedders = [LocalEmbedder(_spec(b, p)) for b, p in pairs]
    assert len({e.fingerprint for e in embedders}) == len(pairs)
    assert all(e.loads == 0 for e in embedders)


class FakeModel:
    """What an int8 model returns: other vectors than torch's."""

    max_seq_length = 256
    tokenizer = None

    def encode(self, texts, **kwargs):
        return np.tile(np.asarray([0.0, 1.0], dtype=np.float32), (len(texts), 1))


def test_vectors_of_another_pair_are_never_read_from_the_cache(tmp_path) -> None:
    cache = EmbeddingCache(tmp_path / "embeddings.sqlite")
    texts = ["masks reduce transmission", "the virus binds ACE2"]
    reference = LocalEmbedder(_spec("torch", "fp32"))
    cache.put_many(reference.fingerprint,
                   [(text_key(t), np.asarray([1.0, 0.0], dtype=np.float32)) for t in texts])
    int8 = LocalEmbedder(_spec("onnx", "int8"))
    int8.cache = cache
    int8._model = FakeModel()
    vectors = int8.encode(texts, progress=False)
    # had the pair shared the reference's fingerprint, these would be the cached [1, 0]
    assert int8.encoded_texts == 2
    assert np.array_equal(vectors, [[0.0, 1.0], [0.0, 1.0]])
    assert set(cache.info()["models"]) == {reference.fingerprint, int8.fingerprint}
    cache.close()
