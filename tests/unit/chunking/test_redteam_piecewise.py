"""Long documents are tokenised in pieces (issue 14, item 3: one call with offsets on a 52 MB
file peaked at ~10 GB). Piecewise must give exactly the token starts of one call, on real
text, wherever the nominal piece end falls: inside a word, inside a run of whitespace, in
text with no safe cut at all. (The memory figure itself is `make bench`'s `big_file` line.)"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from tokenizers import Tokenizer
from tokenizers.models import WordLevel

from helpers import DEMO, ROOT
from sweep.chunking import tokenizers as tok_mod
from sweep.chunking.tokenizers import HFTokenizer, load_chunk_tokenizer, piece_bounds


def real_text() -> str:
    """About 80k characters of real text that ships with the repo: the documentation pages
    (prose, code, tables, runs of blank lines, ±, —, →, ≤, ligatures) and the demo corpus."""
    demo = "\n\n".join(p.read_text(encoding="utf-8")
                       for p in sorted((DEMO / "corpus").rglob("*.md")))
    docs = "\n\n".join(p.read_text(encoding="utf-8") for p in sorted((ROOT / "docs").rglob("*.md")))
    return docs[:50_000] + "\n\n" + demo[:30_000]


@pytest.fixture(scope="module")
def text() -> str:
    return real_text()


def one_call(name: str, text: str) -> np.ndarray:
    return load_chunk_tokenizer(name)._one_call(text)  # type: ignore[attr-defined]


def test_piece_bounds_tile_the_text_and_cut_only_between_words(text: str) -> None:
    for n in (1, 13, 500):
        bounds = piece_bounds(text, n)
        assert bounds[0][0] == 0 and bounds[-1][1] == len(text)
        assert all(b == c for (_, b), (c, _) in itertools.pairwise(bounds))
        for a, _ in bounds[1:]:
            assert text[a] == " " and not text[a - 1].isspace() and not text[a + 1].isspace()
    # The nominal ends (start + 13) land inside words and inside whitespace runs alike, so the
    # tests below do cover both.
    nominal = [a + 13 for a, _ in piece_bounds(text, 13)[:-1]]
    assert any(text[p - 1].isalnum() and text[p].isalnum() for p in nominal)
    assert any(text[p - 1].isspace() and text[p].isspace() for p in nominal)


@pytest.mark.parametrize("name", ["minilm", "cl100k"])
@pytest.mark.parametrize("piece_chars", [1, 13, 500, 4096])
def test_piecewise_starts_equal_one_call_on_real_text(text: str, name: str,
                                                      piece_chars: int,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    expected = one_call(name, text)
    assert len(expected) > 10_000
    monkeypatch.setattr(tok_mod, "PIECE_CHARS", piece_chars)
    tokenizer = load_chunk_tokenizer(name)
    got = tokenizer.token_starts(text)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, expected)
    count = getattr(tokenizer, "count", None)
    if count is not None:  # cl100k counts ids piecewise too
        assert count(text) == len(expected)


@pytest.mark.parametrize("name", ["minilm", "cl100k"])
def test_text_without_a_safe_cut_is_one_piece(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Only double spaces, newlines and a long unbroken token: no single space between words.
    text = "alpha  beta\n\ngamma\tdelta  " + "x" * 300 + "\n  epsilon  zeta"
    monkeypatch.setattr(tok_mod, "PIECE_CHARS", 5)
    assert piece_bounds(text) == [(0, len(text))]
    np.testing.assert_array_equal(load_chunk_tokenizer(name).token_starts(text),
                                  one_call(name, text))


def test_a_tokenizer_that_does_not_split_words_first_is_tokenised_in_one_call(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # No pre-tokenizer: the whole text is one "word", one [UNK]; pieces would give several.
    tokenizer = HFTokenizer("unk-only", Tokenizer(WordLevel({"[UNK]": 0}, unk_token="[UNK]")))
    assert not tokenizer._piecewise
    monkeypatch.setattr(tok_mod, "PIECE_CHARS", 3)
    text = "one two three four five"
    assert tokenizer.token_starts(text).tolist() == [0]
    assert len(tok_mod.piecewise_starts(text, tokenizer._one_call, 3)) > 1


@pytest.mark.parametrize("name", ["minilm", "cl100k"])
def test_piecewise_starts_equal_one_call_on_homebrew_docs(shared_data: Path, name: str) -> None:
    """The public Homebrew docs: accents, dashes, box drawing, emoji with variation selectors."""
    files = sorted((shared_data / "homebrew_docs" / "docs").rglob("*.md"))
    text = "\n\n".join(p.read_text(encoding="utf-8") for p in files)[:120_000]
    np.testing.assert_array_equal(
        tok_mod.piecewise_starts(text, load_chunk_tokenizer(name)._one_call, 97),  # type: ignore[attr-defined]
        one_call(name, text))
