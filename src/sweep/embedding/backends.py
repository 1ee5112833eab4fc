"""Where a local sentence-transformers model runs (``embedding.backend``) and at what
precision (``embedding.precision``): the registry of the two axes, the exported models cached
on disk, and the module that puts an exported model where sentence-transformers runs its
transformer.

sentence-transformers loads ONNX and OpenVINO models through Optimum (``backend="onnx"``),
but no Optimum release resolves beside the transformers 5 that sentence-transformers 6 runs
on here (optimum-onnx 0.1.0 asks for transformers<4.58; optimum-intel 2.2.0 pulls torch 2.14
with CUDA). So the export is done with the libraries Optimum itself calls: ``torch.onnx``
writes the graph, ``onnxruntime.quantization`` quantises its weights, OpenVINO converts the
ONNX graph to its own format; ONNX Runtime or OpenVINO runs it. sentence-transformers still
tokenises, batches, pools and normalises: only its transformer's forward pass is replaced, so
a vector differs from torch's by what the runtime and the precision change, nothing else.

An export is made once per (model folder signature, backend, precision, library versions,
recipe) into ``<cache.dir>/exports/``, moved into place whole, and checked on every load
against the sha256 of each file it wrote (``manifest.json``). The manifest is sealed as the
gate's memo is (`sweep.common.seal`: an HMAC under ``$CHUNK_SWEEP_MEMO_SECRET``, kept in the
manifest, apart from the model files), so sums updated to match an altered ``model.onnx`` do
not pass: a damaged, altered or unsealed export is made again, with a warning. A model the
runtime cannot load is one line, not the runtime's traceback.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

from sweep.common.errors import SweepError
from sweep.common.files import atomic_write, folder_signature, open_regular, read_text_regular
from sweep.common.seal import seal, seal_problem, sealed_with

log = logging.getLogger(__name__)

# The embedding.backend axis -> the precisions it runs on a CPU (the schema's enums are built
# from these). torch fp32 is the reference every other pair is measured against (the
# quantisation tax). int8 is ONNX Runtime's weight-only 8-bit MatMul (`_quantise_int8`);
# bf16 runs on CPUs with AVX512-BF16/AMX (elsewhere emulated, and slow). ONNX Runtime's CPU
# kernels have no fast fp16/bf16 path, and OpenVINO's int8 needs NNCF's calibration (a data set from the hub), so
# neither is offered.
BACKENDS: dict[str, tuple[str, ...]] = {
    "torch": ("fp32", "bf16"),
    "onnx": ("fp32", "int8"),
    "openvino": ("fp32", "bf16"),
}
PRECISIONS: tuple[str, ...] = ("fp32", "int8", "bf16")
REFERENCE = ("torch", "fp32")

# What each exporting backend imports, and what to install when it is missing: onnx and
# onnxruntime are default dependencies (a broken install), openvino is the optional extra.
_NEEDS: dict[str, tuple[tuple[str, str], ...]] = {
    "onnx": (("onnx", "make install"), ("onnxruntime", "make install")),
    "openvino": (("onnx", "make install"),
                 ("openvino", "the optional extra: pip install 'chunk-sweep[openvino]'")),
}
# The libraries whose versions shape an exported graph or its weights.
_VERSIONED = ("torch", "transformers", "onnx", "onnxruntime", "openvino")
# Bumped when the export code changes what it writes.
RECIPE = "2"  # 2: int8 weight-only (MatMulNBits), was dynamic quantisation
MANIFEST = "manifest.json"
# Where the exports live inside cache.dir (`sweep cache info|clear` count and remove them).
EXPORTS_FOLDER = "exports"


def check_pair(backend: str, precision: str) -> None:
    """One line when the backend does not run that precision (the schema checked each name)."""
    allowed = BACKENDS.get(backend)
    if allowed is None:
        raise SweepError(f"embedding.backend={backend!r} is not one of {', '.join(BACKENDS)}")
    if precision not in allowed:
        raise SweepError(f"embedding.precision={precision!r} is not available with "
                         f"embedding.backend={backend} (it runs {', '.join(allowed)})")


def require(backend: str) -> None:
    """One line naming what to install when a module the backend needs is missing."""
    import importlib.util

    for module, fix in _NEEDS.get(backend, ()):
        if importlib.util.find_spec(module) is None:
            raise SweepError(f"embedding.backend={backend} needs the Python package "
                             f"'{module}', which is not installed", hint=f"install {fix}")


def library_versions() -> str:
    """``torch=2.13.0|transformers=5.3.0|...``: what an export was made with."""
    out = []
    for name in _VERSIONED:
        try:
            out.append(f"{name}={metadata.version(name)}")
        except metadata.PackageNotFoundError:
            out.append(f"{name}=-")
    return "|".join(out)


def exported_precision(backend: str, precision: str) -> str:
    """The precision of the files an export writes: OpenVINO takes its precision as a hint
    when it compiles (`load_runtime`), so fp32 and bf16 share one export."""
    return "fp32" if backend == "openvino" else precision


def export_key(source: str, backend: str, precision: str, digests: Path | None = None) -> str:
    """The identity of an export: the model folder, the pair, the libraries and the recipe
    (``digests``: `folder_signature`'s memo folder, or None)."""
    precision = exported_precision(backend, precision)
    return hashlib.sha256(f"{folder_signature(source, digests)}|{backend}|{precision}|"
                          f"{library_versions()}|recipe={RECIPE}".encode()).hexdigest()[:16]


def _sha256(path: Path) -> str:
    with open_regular(path) as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def verify(folder: Path) -> str | None:
    """None when the manifest's seal holds and every file it lists is there with its sha256,
    else what is wrong."""
    try:
        manifest = json.loads(read_text_regular(folder / MANIFEST))
        files = manifest["files"]
    except (OSError, ValueError, KeyError, TypeError):
        return f"{MANIFEST} missing or unreadable"
    if not isinstance(files, dict) or not files:
        return f"{MANIFEST} lists no file"
    problem = seal_problem(manifest)
    if problem is not None:
        return f"{MANIFEST} is {problem}" if problem.startswith("sealed") else \
            f"{MANIFEST}: {problem}"
    for name, digest in files.items():
        path = folder / name
        if not path.is_file():
            return f"{name} is missing"
        if _sha256(path) != digest:
            return f"{name} does not match its sha256"
    return None


# (source folder, backend, precision, into folder) -> the file the runtime loads, relative to
# the folder. The default is `export_model`; tests pass a cheap one.
Exporter = Callable[[str, str, str, Path], str]


def ensure_export(source: str, backend: str, precision: str, root: Path,
                  exporter: Exporter | None = None) -> Path:
    """The checked export of ``source`` for (backend, precision) under ``root``: made once,
    reused while its files match their manifest, made again (with a warning) when they do
    not. Safe under parallel jobs: a file lock serialises the export, which is written into a
    temporary folder and moved into place whole."""
    from filelock import FileLock

    name = Path(source.rstrip("/\\")).name or "model"
    target = root / (f"{name}-{backend}-{exported_precision(backend, precision)}-"
                     f"{export_key(source, backend, precision)}")
    if target.is_dir() and verify(target) is None:
        return target
    root.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target) + ".lock"):
        if target.exists():
            problem = verify(target)
            if problem is None:
                return target
            log.warning("exported model %s is damaged (%s): exporting it again", target,
                        problem)
            shutil.rmtree(target, ignore_errors=True)
        log.info("exporting %s for embedding.backend=%s precision=%s (once, cached in %s)",
                 source, backend, precision, target)
        tmp = Path(tempfile.mkdtemp(dir=root, prefix=".export-"))
        try:
            entry = (exporter or export_model)(source, backend, precision, tmp)
            files = {str(p.relative_to(tmp)): _sha256(p)
                     for p in sorted(tmp.rglob("*")) if p.is_file()}
            manifest: dict[str, Any] = {
                "entry": entry, "source": source, "backend": backend, "precision": precision,
                "libraries": library_versions(), "recipe": RECIPE, "files": files,
                "sealed_with": sealed_with()}
            manifest["seal"] = seal(manifest)
            atomic_write(tmp / MANIFEST, json.dumps(manifest, indent=2) + "\n")
            os.replace(tmp, target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def exported_models(root: Path) -> list[Path]:
    """The finished exports under ``root`` (not the temporary folders of one under way)."""
    return sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")) \
        if root.is_dir() else []


def entry_file(folder: Path) -> Path:
    return folder / json.loads(read_text_regular(folder / MANIFEST))["entry"]


def export_model(source: str, backend: str, precision: str, into: Path) -> str:
    """Write the model for (backend, precision) into ``into``; returns the file to load."""
    require(backend)
    onnx_path = into / "model.onnx"
    _export_onnx(source, onnx_path)
    if backend == "onnx" and precision == "int8":
        _quantise_int8(onnx_path, into / "model_int8.onnx")
        onnx_path.unlink()
        return "model_int8.onnx"
    if backend == "openvino":
        import openvino as ov

        # The precision is a compile-time hint (`load_runtime`): one IR serves fp32 and bf16.
        ov.save_model(ov.convert_model(str(onnx_path)), str(into / "model.xml"),
                      compress_to_fp16=False)
        onnx_path.unlink()
        return "model.xml"
    return onnx_path.name


def _quantise_int8(source: Path, target: Path) -> None:
    """The weights of every constant MatMul as symmetric int8 in blocks of 128 along the
    inner axis (ONNX Runtime's ``MatMulNBits``, ``accuracy_level=4``: int8 products).

    Dynamic quantisation (``quantize_dynamic``, recipe 1) scaled the activations per batch
    tensor, so a text's vector depended on the texts batched with it (cosine 0.994 between
    the same passage alone and in a batch of 48) and a cached vector on which batch computed
    it first. MatMulNBits quantises an activation row by row, so a text gets the same vector
    bit for bit in any batch, and it stayed closer to torch's (worst cosine on 48 COVID-QA
    passages 0.9988 against 0.984-0.992). Blocks of 32 were closer still (0.9995) but slower.
    """
    import onnx
    from onnxruntime.quantization import QuantFormat
    from onnxruntime.quantization.matmul_nbits_quantizer import (
        DefaultWeightOnlyQuantConfig,
        MatMulNBitsQuantizer,
    )

    config = DefaultWeightOnlyQuantConfig(block_size=128, is_symmetric=True, accuracy_level=4,
                                          bits=8, quant_format=QuantFormat.QOperator,
                                          op_types_to_quantize=("MatMul",))
    root = logging.getLogger()
    level = root.level
    # a line per quantised node on the root logger
    root.setLevel(max(level, logging.WARNING))
    try:
        quantizer = MatMulNBitsQuantizer(onnx.load(str(source)), algo_config=config)
        quantizer.process()
        quantizer.model.save_model_to_file(str(target), use_external_data_format=False)
    finally:
        root.setLevel(level)


def _export_onnx(source: str, path: Path) -> None:
    """The transformer of a sentence-transformers folder as an ONNX graph with dynamic batch
    and sequence axes, traced from the torch model (what Optimum's exporter calls too)."""
    import torch
    from sentence_transformers import SentenceTransformer

    from sweep.common.hf import quiet_transformers

    quiet_transformers()
    st = SentenceTransformer(source, device="cpu")
    transformer = st[0]
    model = getattr(transformer, "model", None)
    if model is None or not isinstance(model, torch.nn.Module):
        raise SweepError(f"embedding.name={source!r}: its first module is not a transformer "
                         "that can be exported (use embedding.backend=torch)")
    names = list(st.tokenizer.model_input_names)
    sample = st.tokenizer(["a first sample text", "a second, longer sample text to pad"],
                          padding=True, return_tensors="pt")

    class Forward(torch.nn.Module):
        # Keyword arguments: transformers 5 moved the positional parameters of forward.
        def __init__(self) -> None:
            super().__init__()
            self.inner = model

        def forward(self, *args: Any) -> Any:
            return self.inner(**dict(zip(names, args, strict=True)),
                              return_dict=True).last_hidden_state

    axes = {n: {0: "batch", 1: "sequence"} for n in [*names, "last_hidden_state"]}
    import warnings

    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # the tracer's notes on shapes it records
        torch.onnx.export(Forward().eval(), tuple(sample[n] for n in names), str(path),
                          input_names=names, output_names=["last_hidden_state"],
                          dynamic_axes=axes, opset_version=17, dynamo=False)


def load_error(entry: Path, backend: str, exc: BaseException) -> SweepError:
    """One line for an exported model the runtime will not load (its first line of why)."""
    first = (str(exc).strip().splitlines() or [""])[0][:160]
    return SweepError(f"{entry}: embedding.backend={backend} cannot load this exported model "
                      f"({type(exc).__name__}: {first})",
                      hint=f"remove {entry.parent} (or run `sweep cache clear`) to export it "
                           "again")


def load_runtime(st: Any, entry: Path, backend: str, precision: str) -> None:
    """Put the exported graph where ``st`` (a SentenceTransformer loaded on the CPU) runs its
    transformer's forward pass, in place."""
    import numpy as np
    import torch
    from transformers.modeling_outputs import BaseModelOutput

    require(backend)
    transformer = st[0]
    config = transformer.model.config
    if backend == "onnx":
        import onnxruntime as ort

        try:
            session = ort.InferenceSession(str(entry), providers=["CPUExecutionProvider"])
        except Exception as exc:  # InvalidProtobuf, Fail, ...: the runtime's own types
            raise load_error(entry, backend, exc) from None
        names = [i.name for i in session.get_inputs()]

        def run(feed: dict[str, np.ndarray]) -> np.ndarray:
            return session.run(None, feed)[0]
    else:
        import openvino as ov

        # OpenVINO runs an fp32 graph in bf16 on CPUs with AMX unless told otherwise.
        hint = {"fp32": "f32", "bf16": "bf16"}[precision]
        try:
            compiled = ov.Core().compile_model(str(entry), "CPU",
                                               {"INFERENCE_PRECISION_HINT": hint})
        except Exception as exc:
            raise load_error(entry, backend, exc) from None
        names = [i.get_any_name() for i in compiled.inputs]

        def run(feed: dict[str, np.ndarray]) -> np.ndarray:
            return np.asarray(compiled(feed)[0])

    class Exported(torch.nn.Module):
        """What sentence-transformers' Transformer module calls: ``forward(**features)``
        returning ``last_hidden_state``, and the model's ``config``."""

        def __init__(self) -> None:
            super().__init__()
            self.config = config

        def forward(self, **features: Any) -> Any:
            feed = {n: features[n].cpu().numpy().astype(np.int64) for n in names}
            return BaseModelOutput(last_hidden_state=torch.from_numpy(run(feed)))

    transformer.model = Exported()
