"""BM25 over chunks: rank-bm25 (the reference) or bm25s (fast), with one tokenisation.

Tokenisation (documented, shared by both backends and by queries): NFC text, lowercased,
split into Unicode word tokens (``\\w+``: letters, digits and underscore, so ``ERR_4021`` and
``kt-200`` -> ``err_4021``, ``kt``, ``200``), minus stop words. Query tokens are deduplicated:
a word typed twice does not count twice.

Scoring is Okapi BM25 with Robertson's idf floored at 0:
``idf(t) = max(0, ln((N - df + 0.5) / (df + 0.5)))`` and
``score(d, q) = Σ_t idf(t) · tf·(k1 + 1) / (tf + k1·(1 - b + b·|d| / avgdl))``.
rank-bm25's ``BM25Okapi`` gives exactly this with ``epsilon=0``; bm25s' ``robertson`` method
leaves out the constant ``(k1 + 1)``, which is multiplied back so both report the same scores.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import tempfile
from array import array
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from types import ModuleType

import numpy as np

from sweep.common.errors import SweepError
from sweep.common.files import read_text_regular
from sweep.common.sqlite import parts_key, source_key

log = logging.getLogger(__name__)
# bm25s indexes kept on disk (`cache.dir`), one folder per key (`BM25Index._key`).
CACHE_FOLDER = "bm25"

_WORD = re.compile(r"\w+")

# A short English list: function words only, so that content words (and every code or
# number) keep their weight.
ENGLISH_STOPWORDS = frozenset(["a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are", "as", "at", "be", "because", "been", "before", "being", "below", "between", "both", "but", "by", "can", "could", "did", "do", "does", "doing", "down", "during", "each", "few", "for", "from", "further", "had", "has", "have", "having", "he", "her", "here", "hers", "herself", "him", "himself", "his", "how", "i", "if", "in", "into", "is", "it", "its", "itself", "just", "me", "more", "most", "my", "myself", "no", "nor", "not", "now", "of", "off", "on", "once", "only", "or", "other", "our", "ours", "ourselves", "out", "over", "own", "same", "she", "should", "so", "some", "such", "than", "that", "the", "their", "theirs", "them", "themselves", "then", "there", "these", "they", "this", "those", "through", "to", "too", "under", "until", "up", "very", "was", "we", "were", "what", "when", "where", "which", "while", "who", "whom", "why", "will", "with", "would", "you", "your", "yours", "yourself", "yourselves", "s", "t", "don", "doesn", "didn", "isn", "aren", "wasn", "weren", "won", "wouldn", "shouldn", "couldn"])


@lru_cache(maxsize=16)
def stopwords_for(spec: str) -> frozenset[str]:
    """``english``, ``none``, or a path to a file with one word per line."""
    if spec == "english":
        return ENGLISH_STOPWORDS
    if spec in ("none", ""):
        return frozenset()
    path = Path(spec)
    if not path.is_file():
        raise SweepError(f"retrieval.bm25_stopwords={spec!r}: not 'english', 'none' or a file")
    try:
        return frozenset(w.strip().lower() for w in read_text_regular(path).split())
    except (OSError, UnicodeDecodeError) as exc:
        raise SweepError(f"{path}: cannot read stop words ({exc})") from None


def tokenize(text: str, stopwords: frozenset[str] = ENGLISH_STOPWORDS) -> list[str]:
    return [t for t in _WORD.findall(text.lower()) if t not in stopwords]


def query_tokens(text: str, stopwords: frozenset[str] = ENGLISH_STOPWORDS) -> list[str]:
    return list(_query_words(text, stopwords))


@lru_cache(maxsize=2**14)
def _query_words(text: str, stopwords: frozenset[str]) -> tuple[str, ...]:
    """A sweep asks the same questions of every configuration (and again in the latency
    pass): each is tokenised once (~2 us a question, 1,380 per COVID-QA job)."""
    return tuple(dict.fromkeys(tokenize(text, stopwords)))


def token_ids(texts: Sequence[str], stopwords: frozenset[str]
              ) -> tuple[list[array], dict[str, int]]:
    """Each text's `tokenize` tokens as 4-byte word ids, and the vocabulary (word -> id, in
    order of first use). Lists of words held a string object per occurrence, about 60 bytes a
    token: building the index of a 52 MB document peaked 440 MB above where it started
    (issue 14, item 3). A text's words are freed before the next text is read."""
    vocab: dict[str, int] = {}
    ids = [array("i", [vocab.setdefault(w, len(vocab)) for w in tokenize(t, stopwords)])
           for t in texts]
    return ids, vocab


class _RankBm25:
    """rank-bm25's BM25Okapi (epsilon 0: a negative idf is not floored)."""

    def __init__(self, ids: list[array], vocab: dict[str, int], k1: float, b: float) -> None:
        from rank_bm25 import BM25Okapi

        # rank-bm25 takes words: one shared str object per distinct word, so a document's
        # list holds pointers, not a fresh string per occurrence.
        words = list(vocab)
        self.index = BM25Okapi([[words[i] for i in doc] for doc in ids], k1=k1, b=b,
                               epsilon=0.0)

    def scores(self, tokens: list[str], n: int) -> np.ndarray:
        return np.asarray(self.index.get_scores(tokens), dtype=np.float64)

    def size_bytes(self) -> int:
        total = 0
        for freqs in self.index.doc_freqs:
            total += sum(len(w) + 8 for w in freqs)
        return total + 16 * len(self.index.idf)


def _import_bm25s() -> ModuleType:
    """bm25s, imported without numba. When numba is installed (ranx pulls it in), bm25s imports
    it and compiles its JIT selection at import, ~0.3 s of a warm CI gate's ~1.5 s; bm25s only
    builds and saves an index here, which is numpy/scipy either way. Hiding numba for that one
    import changes nothing else: a later `import numba` (ranx in the tests) still works."""
    import sys

    if "bm25s" in sys.modules or "numba" in sys.modules:
        import bm25s
    else:
        sys.modules["numba"] = None  # type: ignore[assignment]  # makes `import numba` fail
        try:
            import bm25s
        finally:
            del sys.modules["numba"]
    # bm25s 0.3 sets its own logger to DEBUG at import, so every index build printed "DEBUG
    # bm25s: Building index from IDs" past the CLI's WARNING level: back to the root's level.
    logging.getLogger("bm25s").setLevel(logging.NOTSET)
    return bm25s


@lru_cache(maxsize=1)
def _bm25s_version() -> str:
    """``bm25s.__version__`` without importing bm25s (and scipy, ~65 ms): bm25s takes its
    version from the installed distribution's metadata, with this same fallback."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("bm25s")
    except PackageNotFoundError:
        return "0.0.0"


# The files of a folder bm25s's `BM25.save` writes (its default names): the score matrix as
# CSC arrays, the vocabulary and the parameters.
_ARRAYS = ("data", "indices", "indptr")
_VOCAB, _PARAMS = "vocab.index.json", "params.index.json"


class _Bm25s:
    """bm25s's precomputed sparse scores, Robertson's variant: rank-bm25's scores divided by
    (k1 + 1), so they are multiplied back.

    bm25s builds and saves the index; it is held as bm25s's plain arrays, a (texts x words)
    CSC matrix (word ``w``'s postings are ``indices``/``data[indptr[w]:indptr[w + 1]]``) and
    the vocabulary, and scored with numpy alone, so an index read back from the cache needs
    neither bm25s nor scipy (their imports and `BM25.load` were ~0.1 s of a warm process)."""

    def __init__(self, ids: list[array], vocab: dict[str, int], k1: float, b: float) -> None:
        bm25s = _import_bm25s()
        index = bm25s.BM25(k1=k1, b=b, method="robertson", dtype="float64")
        # The (token ids, vocabulary) form: bm25s then never sees a list of words. Scores do not
        # depend on which id a word gets (each (document, word) score is computed alone, and a
        # query sums its words' columns in query order); bm25s's own numbering comes from a
        # set of strings, so it was never fixed anyway.
        index.index((ids, vocab), show_progress=False)
        self._built = index  # what `save` writes
        self._hold(k1, index.vocab_dict, *(index.scores[k] for k in _ARRAYS))

    def _hold(self, k1: float, vocab: dict[str, int], data: np.ndarray, indices: np.ndarray,
              indptr: np.ndarray) -> None:
        self.k1, self.vocab = k1, vocab
        self.data = np.asarray(data, dtype=np.float64)
        self.indices, self.indptr = indices, indptr

    def scores(self, tokens: list[str], n: int) -> np.ndarray:
        """bm25s's `get_scores` of the query's known words, times (k1 + 1); zeros when none
        is known. The one path `scores_many` takes, so both give the same bits."""
        return self.scores_many([tokens], n)[0]

    def scores_many(self, queries: Sequence[list[str]], n: int) -> np.ndarray:
        """`scores` of each query, one row each, bit for bit bm25s's `get_scores`: bm25s adds a
        query's words' postings into a zeroed row word by word, in query order (``np.add.at``);
        here every (query, text) sum is one `np.bincount` bin, whose weights are added one by
        one in input order from 0.0, laid out query by query and word by word in that same
        order. One numpy pass for the block instead of a call per query (~30 us each, 8,000 a
        warm COVID-QA sweep)."""
        vocab, indices, indptr = self.vocab, self.indices, self.indptr
        words = [[vocab[t] for t in q if t in vocab] for q in queries]
        ids = np.fromiter((i for w in words for i in w), dtype=np.int64,
                          count=sum(map(len, words)))
        # each (query, word)'s first bin: its query's row
        row_at = np.repeat(np.arange(0, len(words) * n, n, dtype=np.int64),
                           [len(w) for w in words])
        lo, hi = indptr[ids].astype(np.int64), indptr[ids + 1].astype(np.int64)
        sizes = hi - lo
        if not sizes.sum():  # no query has a known word (bincount of nothing is int64)
            return np.zeros((len(queries), n), dtype=np.float64)
        # every posting of every (query, word), in that order
        at = np.repeat(lo - np.cumsum(sizes) + sizes, sizes) + np.arange(int(sizes.sum()))
        flat = np.bincount(np.repeat(row_at, sizes) + indices[at], weights=self.data[at],
                           minlength=len(queries) * n)
        flat *= self.k1 + 1.0
        return flat.reshape(len(queries), n)

    def size_bytes(self) -> int:
        return int(self.data.nbytes + self.indices.nbytes + self.indptr.nbytes)

    def save(self, folder: Path) -> None:
        self._built.save(str(folder), show_progress=False)

    @classmethod
    def load(cls, folder: Path, n: int, k1: float, b: float) -> _Bm25s | None:
        """The index `save` wrote, or None when it is not one of ``n`` texts with these
        parameters or its arrays do not hold together (a damaged or foreign folder): read with
        numpy and orjson, as bm25s's `BM25.load` reads it, and checked before any of it is
        trusted, so that a bad folder is rebuilt rather than scored or crashed on."""
        import orjson

        try:
            params = orjson.loads((folder / _PARAMS).read_bytes())
            vocab = orjson.loads((folder / _VOCAB).read_bytes())
            data, indices, indptr = (np.load(folder / f"{k}.csc.index.npy", allow_pickle=False)
                                     for k in _ARRAYS)
            ok = (params["num_docs"] == n and params["k1"] == k1 and params["b"] == b
                  and params["method"] == "robertson"
                  and params.get("idf_method", "robertson") == "robertson"
                  and data.dtype == np.float64
                  and indices.dtype.kind == "i" and indptr.dtype.kind == "i"
                  and data.ndim == indices.ndim == indptr.ndim == 1 and indptr.shape[0] >= 1
                  and int(indptr[0]) == 0
                  and int(indptr[-1]) == data.shape[0] == indices.shape[0]
                  and bool(np.all(np.diff(indptr) >= 0))
                  and (indices.shape[0] == 0
                       or (int(indices.min()) >= 0 and int(indices.max()) < n)))
            vocab = _columns(vocab, indptr.shape[0] - 1) if ok else None
        except (OSError, ValueError, KeyError, TypeError, AttributeError, EOFError):
            return None
        if vocab is None:
            return None
        loaded = cls.__new__(cls)
        loaded._hold(k1, vocab, data, indices, indptr)
        return loaded


def _columns(vocab: object, columns: int) -> dict[str, int] | None:
    """A saved vocabulary (word -> column) checked against the matrix's ``columns``, or None.
    bm25s may add the empty word with an id past the last column (it has no postings); no
    tokenisation here yields it, so it is left out. Any other id outside the matrix: None."""
    if not isinstance(vocab, dict):
        return None
    if isinstance(vocab.get(""), int) and vocab[""] >= columns:
        del vocab[""]
    ids = np.array(list(vocab.values()))
    if ids.size and (ids.dtype.kind != "i" or int(ids.min()) < 0 or int(ids.max()) >= columns):
        return None
    return vocab


# The retrieval.bm25_backend axis: name -> implementation (built from the tokenised texts, k1
# and b; scores a tokenised query). The schema's `Bm25Backend` enum is built from these names.
BACKENDS: dict[str, type[_RankBm25] | type[_Bm25s]] = {"rank_bm25": _RankBm25, "bm25s": _Bm25s}


# Okapi BM25's parameters when nothing says otherwise (Robertson and Zaragoza's usual range):
# the one place they are stated; config.schema's retrieval.bm25_k1/bm25_b defaults read them.
BM25_K1 = 1.5
BM25_B = 0.75


class BM25Index:
    """A BM25 index over a fixed list of texts; `scores` returns one float64 per text."""

    def __init__(self, texts: Sequence[str], *, k1: float = BM25_K1, b: float = BM25_B,
                 backend: str = "rank_bm25", stopwords: str = "english",
                 cache_dir: str | Path | None = None, texts_key: bytes | None = None) -> None:
        """``texts_key``: `parts_key` of ``texts``, where the caller has it already (the
        process memo keys its indexes by it): the cache folder's key hashes it again
        otherwise."""
        if backend not in BACKENDS:
            raise SweepError(f"retrieval.bm25_backend={backend!r} is not one of "
                             f"{', '.join(BACKENDS)}")
        self.k1, self.b, self.backend = k1, b, backend
        self.stopwords = stopwords_for(stopwords)
        self.n = len(texts)
        self.from_cache = False
        folder = (Path(cache_dir) / CACHE_FOLDER / self._key(texts, texts_key)
                  if cache_dir is not None and backend == "bm25s" else None)
        if folder is not None and folder.is_dir():
            loaded = _Bm25s.load(folder, self.n, k1, b)
            if loaded is not None:
                self._index: _RankBm25 | _Bm25s = loaded
                self.from_cache = True
                return
            log.warning("BM25 cache %s cannot be read back; building the index again", folder)
            shutil.rmtree(folder, ignore_errors=True)  # so that the fresh one takes its place
        ids, vocab = token_ids(texts, self.stopwords)
        if not any(ids):
            raise SweepError("BM25: no chunk has a single indexable word")
        self._index = BACKENDS[backend](ids, vocab, k1, b)
        if folder is not None:
            self._save(folder)

    def _key(self, texts: Sequence[str], texts_key: bytes | None = None) -> str:
        """Everything the index depends on: this module's code (its tokenisation), the backend
        and its version, k1, b, the stop words, and the texts in order."""
        head = [source_key(__file__), self.backend, _bm25s_version(), repr(self.k1),
                repr(self.b), *sorted(self.stopwords)]
        return parts_key([*head, (texts_key or parts_key(texts)).hex()]).hex()[:32]

    def _save(self, folder: Path) -> None:
        """Written beside, then moved into place: a reader never sees half an index."""
        assert isinstance(self._index, _Bm25s)
        try:
            folder.parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(dir=folder.parent, prefix=".tmp-"))
            try:
                self._index.save(tmp)
                os.replace(tmp, folder)
            except OSError:
                if not folder.is_dir():  # another job may have put the same index there
                    raise
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
        except OSError as exc:  # the index is built and correct; only the cache failed
            log.warning("BM25 cache: cannot write %s (%s); continuing without it", folder,
                        exc.strerror or exc)

    def scores(self, query: str) -> np.ndarray:
        return self._index.scores(query_tokens(query, self.stopwords), self.n)

    def scores_many(self, queries: Sequence[str]) -> np.ndarray:
        """`scores` of each query, as a (queries x texts) matrix: equal row for row."""
        tokens = [query_tokens(q, self.stopwords) for q in queries]
        if isinstance(self._index, _Bm25s):
            return self._index.scores_many(tokens, self.n)
        out = np.empty((len(queries), self.n), dtype=np.float64)
        for j, t in enumerate(tokens):
            out[j] = self._index.scores(t, self.n)
        return out

    def size_bytes(self) -> int:
        """Approximate memory held by the index (for the index-size metric)."""
        return self._index.size_bytes()
