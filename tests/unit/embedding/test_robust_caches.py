"""Caches that must not be trusted blindly (issue 44).

Before: an exported model whose manifest sums were updated to match an altered model.onnx was
loaded as is, and a damaged one ended in an InvalidProtobuf traceback; a served vector whose
components were finite but whose length overflowed float32 was normalised to zeros, cached and
scored; a parse cache that could not be written was reported as "cannot read" the PDF (and the
good PDF skipped under corpus.on_error=skip); `sweep show <unknown id>` created an MLflow store
in a folder that had none."""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from embedding_fault_server import Fault, FaultServer
from helpers import run_cli
from pdfgen import raw_pdf
from sweep.common.errors import CacheUnusable, SweepError
from sweep.common.seal import SECRET_ENV
from sweep.data.corpus import load_corpus
from sweep.embedding.backends import MANIFEST, ensure_export, load_runtime, verify
from sweep.embedding.cache import EmbeddingCache
from sweep.embedding.served import parse_embeddings

# --------------------------------------------------------------------------- exports


class Exporter:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, source: str, backend: str, precision: str, into: Path) -> str:
        self.calls += 1
        (into / "model.onnx").write_bytes(b"graph:" + f"{backend}|{precision}".encode() * 20)
        return "model.onnx"


def _export(tmp_path: Path, exporter: Exporter) -> Path:
    source = tmp_path / "tiny-model"
    source.mkdir(exist_ok=True)
    (source / "weights.bin").write_bytes(b"w" * 64)
    return ensure_export(str(source), "onnx", "fp32", tmp_path / "exports", exporter)


def test_an_altered_model_with_matching_sums_is_exported_again(tmp_path: Path, caplog) -> None:
    exporter = Exporter()
    folder = _export(tmp_path, exporter)
    good = (folder / "model.onnx").read_bytes()
    # the attack: swap the model and update the manifest's sha256 to match it
    (folder / "model.onnx").write_bytes(b"graph:something else entirely")
    manifest = json.loads((folder / MANIFEST).read_text())
    manifest["files"]["model.onnx"] = hashlib.sha256(b"graph:something else entirely"
                                                     ).hexdigest()
    (folder / MANIFEST).write_text(json.dumps(manifest))
    assert verify(folder) == (f"{MANIFEST}: its content does not match its seal (edited, or "
                              f"sealed under another ${SECRET_ENV})")
    with caplog.at_level(logging.WARNING, logger="sweep.embedding.backends"):
        assert _export(tmp_path, exporter) == folder
    assert exporter.calls == 2 and (folder / "model.onnx").read_bytes() == good
    assert verify(folder) is None
    assert any("exporting it again" in r.getMessage() for r in caplog.records)


def test_an_export_sealed_without_the_secret_is_not_trusted_with_it(tmp_path: Path,
                                                                     monkeypatch) -> None:
    exporter = Exporter()
    folder = _export(tmp_path, exporter)  # a job without the secret (a fork's pull request)
    monkeypatch.setenv(SECRET_ENV, "ci-secret")
    assert verify(folder) == (f"{MANIFEST} is sealed with self-check, and this check has "
                              f"${SECRET_ENV}")
    assert _export(tmp_path, exporter) == folder and exporter.calls == 2
    assert json.loads((folder / MANIFEST).read_text())["sealed_with"] == "secret"
    assert verify(folder) is None


def test_an_unsealed_export_of_an_older_version_is_made_again(tmp_path: Path) -> None:
    exporter = Exporter()
    folder = _export(tmp_path, exporter)
    manifest = json.loads((folder / MANIFEST).read_text())
    del manifest["seal"], manifest["sealed_with"]
    (folder / MANIFEST).write_text(json.dumps(manifest))
    assert verify(folder) is not None
    assert _export(tmp_path, exporter) == folder and exporter.calls == 2


def test_a_model_the_runtime_cannot_load_is_one_line(tmp_path: Path) -> None:
    entry = tmp_path / "export" / "model.onnx"
    entry.parent.mkdir()
    entry.write_bytes(b"\x08\x07 not a protobuf at all \xff\xfe")
    st = [SimpleNamespace(model=SimpleNamespace(config=None))]
    with pytest.raises(SweepError) as info:
        load_runtime(st, entry, "onnx", "fp32")
    message = str(info.value)
    assert message.startswith(f"{entry}: embedding.backend=onnx cannot load this exported "
                              "model (")
    assert "\n" not in message and f"remove {entry.parent}" in message


# --------------------------------------------------------------------------- served vectors


def test_a_vector_whose_length_overflows_float32_is_refused() -> None:
    big = {"data": [{"index": 0, "embedding": [3e38] * 4},
                    {"index": 1, "embedding": [0.1, 0.2, 0.3, 0.4]}]}
    with np.errstate(over="ignore"):
        assert not np.isfinite(np.linalg.norm(np.float32([3e38] * 4)))  # the trap
    with pytest.raises(SweepError) as info:
        parse_embeddings(big, 2, 4, "http://x/v1/embeddings")
    assert str(info.value) == ("embedding: http://x/v1/embeddings: vector 0 cannot be "
                               "normalised (its length overflows float32: components up to "
                               "3e+38)")
    # an ordinary answer is normalised as before
    ok = parse_embeddings({"data": [{"embedding": [3.0, 4.0]}]}, 1, 2, "u")
    assert ok.tolist() == [[pytest.approx(0.6), pytest.approx(0.8)]]


def test_an_overflowing_served_vector_is_neither_cached_nor_scored(tmp_path: Path) -> None:
    from sweep.embedding.models import EmbeddingSpec
    from sweep.embedding.served import ServedEmbedder, ServedSpec
    from sweep.endpoints.spec import EndpointSpec

    cache = EmbeddingCache(tmp_path / "e.sqlite")
    huge = Fault(edit=lambda d: {**d, "data": [{**x, "embedding": [3e38] * len(x["embedding"])}
                                               for x in d["data"]]})
    with FaultServer() as srv:
        srv.faults = [huge]
        endpoint = EndpointSpec("embedding", srv.base_url, max_retries=0)
        emb = ServedEmbedder(EmbeddingSpec("fake", "openai",
                                           served=ServedSpec(endpoint, "fake-model")))
        emb.cache = cache
        with pytest.raises(SweepError, match="cannot be normalised"):
            emb.encode(["one text", "another"], progress=False)
    assert cache.info()["vectors"] == 0


# --------------------------------------------------------------------------- parse cache


def test_a_parse_cache_that_cannot_be_written_names_the_cache(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "policy.pdf").write_bytes(raw_pdf([[(12, False, "Refunds within thirty days.")]]))
    blocked = tmp_path / "cache"
    blocked.write_text("a file where the cache folder should be\n")  # every write fails
    for on_error in ("raise", "skip"):  # skip is for bad documents, not a bad cache
        with pytest.raises(CacheUnusable) as info:
            load_corpus(corpus, on_error=on_error, cache_dir=blocked)
        message = str(info.value)
        assert message.startswith(f"cache.dir: cannot write the parse cache in "
                                  f"{blocked / 'parsed'} (")
        assert "policy.pdf" not in message and "cannot read" not in message
    # the same PDF reads with a writable cache
    [doc] = load_corpus(corpus, cache_dir=tmp_path / "good-cache")
    assert "thirty days" in doc.text


# --------------------------------------------------------------------------- read commands


def test_show_of_an_unknown_id_creates_no_store(tmp_path: Path) -> None:
    env = {"MLFLOW_TRACKING_URI": ""}
    proc = run_cli("-m", "sweep.cli", "show", "0123abcd", cwd=tmp_path, env=env)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [
        f"error: run 0123abcd: no MLflow store at {tmp_path / 'mlflow.db'} (neither a job "
        "folder here) (pass a job folder, or --tracking-uri of the store that holds the run)"]
    assert list(tmp_path.iterdir()) == []
