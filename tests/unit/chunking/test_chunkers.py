"""Chunker invariants (DESIGN.md §2 "Chunking"): examples, then Hypothesis properties.

Most tests use the dependency-free `RegexTokenizer`, for which every non-whitespace character
belongs to exactly one token; a few use the bundled MiniLM `tokenizer.json` (fast, no model).
"""

from __future__ import annotations

from bisect import bisect_left
from itertools import pairwise

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sweep.chunking.chunkers import (
    TILING_BOUNDARIES,
    Chunk,
    ChunkSpec,
    chunk_corpus,
    chunk_document,
    chunk_stats,
    header_for,
)
from sweep.chunking.tokenizers import RegexTokenizer, load_chunk_tokenizer
from sweep.common.errors import SweepError
from sweep.data.corpus import Document, parse_document

REGEX = RegexTokenizer()
NEVER_OVERSIZE = ("fixed", "recursive", "heading")

POLICY = """\
# Refunds

You can return items within 30 days of delivery. Refunds go back to the original card.
Sale items are final, e.g. clearance stock. Gift cards cannot be refunded!

## Window

The window starts on the day the parcel arrives. Missing the window? Contact support.

- Unopened items: full refund.
- Opened items: store credit.

## Exceptions
### Electronics

Opened electronics cannot be returned. Faulty devices are repaired instead.

```bash
# not a heading: a comment in a code block
curl https://example.com/returns
```

### Perishables

Food and flowers are never returned.
"""


def make_doc(text: str = POLICY, path: str = "policy/refunds.md") -> Document:
    return parse_document(path, text)


def chunks_for(doc: Document, spec: ChunkSpec, tokenizer=REGEX) -> list[Chunk]:
    return chunk_document(doc, tokenizer.token_starts(doc.text), spec.validate())


# --------------------------------------------------------------------------- invariants


def _non_ws_positions(text: str) -> list[int]:
    return [i for i, ch in enumerate(text) if not ch.isspace()]


def _coverage_counts(doc: Document, chunks: list[Chunk]) -> np.ndarray:
    counts = np.zeros(len(doc.text) + 1, dtype=np.int64)
    for c in chunks:
        counts[c.start] += 1
        counts[c.end] -= 1
    return np.cumsum(counts)[: len(doc.text)]


def _has_body(doc: Document, start: int, end: int) -> bool:
    """Whether the section [start, end) holds anything after its heading line."""
    newline = doc.text.find("\n", start, end)
    return newline >= 0 and bool(doc.text[newline:end].strip())


def check_heading_boundary(doc: Document, chunks: list[Chunk]) -> None:
    """No chunk holds two heading lines unless every earlier one heads an empty section."""
    heading_sections = [s for s in doc.sections if s.level > 0]
    for c in chunks:
        inside = [s for s in heading_sections if c.start <= s.start < c.end]
        for s in inside[:-1]:
            assert not _has_body(doc, s.start, s.end), (
                f"{c.chunk_id} [{c.start}:{c.end}] crosses the heading at {s.start} "
                f"{doc.text[s.start:s.end][:40]!r} whose section has a body"
            )


def check_invariants(doc: Document, chunks: list[Chunk], spec: ChunkSpec, starts) -> None:
    text = doc.text
    starts = np.asarray(starts).tolist()
    assert [c.chunk_id for c in chunks] == [f"{doc.doc_id}#{i}" for i in range(len(chunks))]
    assert len({c.chunk_id for c in chunks}) == len(chunks)
    for i, c in enumerate(chunks):
        assert c.ordinal == i
        assert c.doc_id == doc.doc_id
        assert 0 <= c.start < c.end <= len(text)
        assert c.text == text[c.start : c.end]
        assert c.text.strip() == c.text, f"{c.chunk_id} is not trimmed: {c.text!r}"
        n_tokens = bisect_left(starts, c.end) - bisect_left(starts, c.start)
        assert c.n_tokens == n_tokens
        assert c.oversize == (c.n_tokens > spec.size)
        if spec.boundary in NEVER_OVERSIZE:
            assert not c.oversize, f"{spec}: {c.chunk_id} has {c.n_tokens} tokens"
        section = doc.section_at(c.start)
        assert c.heading_path == (section.heading_path if section else ())
        if spec.header == "none":
            assert c.embed_text == c.text
        else:
            assert c.embed_text.endswith(c.text)
    for prev, nxt in pairwise(chunks):
        assert prev.start < nxt.start, (prev, nxt)
        assert prev.end < nxt.end, (prev, nxt)
        if spec.overlap == 0:
            assert prev.end <= nxt.start, (prev, nxt)
        else:
            # the shared text holds at most `overlap` tokens
            shared = bisect_left(starts, prev.end) - bisect_left(starts, nxt.start)
            assert shared <= spec.overlap, (prev, nxt, shared)
    counts = _coverage_counts(doc, chunks)
    positions = _non_ws_positions(text)
    if positions:
        covered = counts[positions]
        if spec.overlap == 0:
            missing = [p for p, n in zip(positions, covered, strict=True) if n != 1]
            assert not missing, f"{spec}: characters not in exactly one chunk at {missing[:5]}"
        else:
            missing = [p for p, n in zip(positions, covered, strict=True) if n < 1]
            assert not missing, f"{spec}: characters in no chunk at {missing[:5]}"
    else:
        assert chunks == []
    if spec.boundary == "heading":
        check_heading_boundary(doc, chunks)


# --------------------------------------------------------------------------- examples


@pytest.mark.parametrize("boundary", TILING_BOUNDARIES)
@pytest.mark.parametrize(("size", "overlap"), [(8, 0), (20, 0), (20, 5), (64, 0), (1000, 0), (3, 2)])
def test_invariants_on_policy_document(boundary: str, size: int, overlap: int) -> None:
    doc = make_doc()
    spec = ChunkSpec(boundary, size, overlap)
    chunks = chunks_for(doc, spec)
    assert chunks
    check_invariants(doc, chunks, spec, REGEX.token_starts(doc.text))


@pytest.mark.parametrize("boundary", TILING_BOUNDARIES)
def test_deterministic(boundary: str) -> None:
    spec = ChunkSpec(boundary, 16, 4, "path")
    first = chunks_for(make_doc(), spec)
    second = chunks_for(make_doc(), spec)
    assert first == second


@pytest.mark.parametrize("boundary", TILING_BOUNDARIES)
def test_whole_document_fits_in_one_chunk(boundary: str) -> None:
    doc = make_doc("\n\n  Short text. Two sentences.  \n\n")
    (chunk,) = chunks_for(doc, ChunkSpec(boundary, 100, 0))
    assert chunk.text == "Short text. Two sentences."
    assert chunk.chunk_id == "policy/refunds#0"


@pytest.mark.parametrize("boundary", TILING_BOUNDARIES)
def test_blank_document_has_no_chunks(boundary: str) -> None:
    doc = make_doc(" \n\t\n")
    assert chunks_for(doc, ChunkSpec(boundary, 10, 0)) == []


def test_fixed_windows_hand_checked() -> None:
    doc = make_doc("a b c d e f g", "x.txt")
    assert [c.text for c in chunks_for(doc, ChunkSpec("fixed", 3, 0))] == ["a b c", "d e f", "g"]
    assert [c.text for c in chunks_for(doc, ChunkSpec("fixed", 3, 1))] == [
        "a b c", "c d e", "e f g",
    ]
    assert [c.n_tokens for c in chunks_for(doc, ChunkSpec("fixed", 3, 1))] == [3, 3, 3]


def test_sentence_packing_hand_checked() -> None:
    doc = make_doc("One two. Three four. Five six seven. Eight.", "x.txt")
    # tokens: "One two ." = 3, "Three four ." = 3, "Five six seven ." = 4, "Eight ." = 2
    got = [c.text for c in chunks_for(doc, ChunkSpec("sentence", 6, 0))]
    assert got == ["One two. Three four.", "Five six seven. Eight."]
    # a sentence longer than size is kept whole and flagged
    (big,) = [c for c in chunks_for(doc, ChunkSpec("sentence", 3, 0)) if c.oversize]
    assert big.text == "Five six seven." and big.n_tokens == 4


def test_sentence_does_not_split_before_lowercase() -> None:
    doc = make_doc("Use e.g. this one. Then stop.", "x.txt")
    got = [c.text for c in chunks_for(doc, ChunkSpec("sentence", 6, 0))]
    assert got == ["Use e.g. this one.", "Then stop."]


def test_paragraph_packing_hand_checked() -> None:
    doc = make_doc("Alpha beta.\n\nGamma delta.\n\nEpsilon zeta eta theta.", "x.txt")
    got = [c.text for c in chunks_for(doc, ChunkSpec("paragraph", 6, 0))]
    assert got == ["Alpha beta.\n\nGamma delta.", "Epsilon zeta eta theta."]


def test_heading_boundary_never_crosses_a_heading() -> None:
    doc = make_doc()
    chunks = chunks_for(doc, ChunkSpec("heading", 1000, 0))
    # one chunk per section, except the heading-only "## Exceptions" merged into the next
    assert [c.text.split("\n", 1)[0] for c in chunks] == [
        "# Refunds", "## Window", "## Exceptions", "### Perishables",
    ]
    assert chunks[2].text.startswith("## Exceptions\n### Electronics\n")
    assert "curl" in chunks[2].text  # the fenced "# not a heading" does not start a chunk
    check_heading_boundary(doc, chunks)


def test_recursive_prefers_section_cuts() -> None:
    doc = make_doc("# A\nalpha beta gamma.\n# B\ndelta epsilon.\n", "x.md")
    # the whole text is 12 regex tokens; with size 8 the section level already suffices
    chunks = chunks_for(doc, ChunkSpec("recursive", 8, 0))
    assert [c.text for c in chunks] == ["# A\nalpha beta gamma.", "# B\ndelta epsilon."]
    assert [c.heading_path for c in chunks] == [("A",), ("B",)]


def test_fence_is_not_split_at_blank_lines() -> None:
    text = "Intro.\n\n```\nline one\n\nline two\n```\n\nOutro."
    doc = make_doc(text, "x.md")
    chunks = chunks_for(doc, ChunkSpec("paragraph", 9, 0))
    assert any("line one\n\nline two" in c.text for c in chunks)


# --------------------------------------------------------------------------- headers


def test_header_path_only_in_embed_text() -> None:
    doc = make_doc()
    chunks = chunks_for(doc, ChunkSpec("heading", 1000, 0, "path"))
    window = chunks[1]
    assert window.heading_path == ("Refunds", "Window")
    assert window.embed_text == "Refunds > Window\n\n" + window.text
    assert window.text == doc.text[window.start : window.end]
    assert not window.text.startswith("Refunds >")
    perishables = chunks[3]
    assert perishables.heading_path == ("Refunds", "Exceptions", "Perishables")
    assert perishables.embed_text.startswith("Refunds > Exceptions > Perishables\n\n### Perishables")
    # the title itself is not repeated
    assert chunks[0].embed_text.startswith("Refunds\n\n# Refunds")


def test_header_title_and_none() -> None:
    doc = make_doc()
    titled = chunks_for(doc, ChunkSpec("heading", 1000, 0, "title"))
    plain = chunks_for(doc, ChunkSpec("heading", 1000, 0, "none"))
    assert [c.embed_text for c in titled] == ["Refunds\n\n" + c.text for c in plain]
    assert [c.embed_text for c in plain] == [c.text for c in plain]
    assert [(c.start, c.end) for c in titled] == [(c.start, c.end) for c in plain]


def test_header_for_without_headings_uses_title() -> None:
    doc = make_doc("plain text", "docs/shipping-times.txt")
    assert header_for(doc, (), "path") == doc.title
    assert header_for(doc, ("Other",), "path") == f"{doc.title} > Other"
    assert header_for(doc, ("X",), "none") == ""


# --------------------------------------------------------------------------- spec validation


@pytest.mark.parametrize(
    "spec",
    [
        ChunkSpec("fixed", 10, 10),
        ChunkSpec("fixed", 10, 11),
        ChunkSpec("fixed", 10, -1),
        ChunkSpec("fixed", 0, 0),
        ChunkSpec("fixed", -5, 0),
        ChunkSpec("meaning", 10, 0),  # "semantic" is a boundary now (needs a model)
        ChunkSpec("fixed", 10, 0, "breadcrumbs"),
    ],
)
def test_spec_validate_rejects(spec: ChunkSpec) -> None:
    with pytest.raises(SweepError):
        spec.validate()


def test_spec_validate_accepts_and_chunk_corpus_validates() -> None:
    spec = ChunkSpec("fixed", 10, 9, "path")
    assert spec.validate() is spec
    with pytest.raises(SweepError):
        chunk_corpus([make_doc()], ChunkSpec("fixed", 4, 4), REGEX)


def test_chunk_corpus_and_stats() -> None:
    docs = [make_doc(), make_doc("Just one line.", "faq.txt")]
    spec = ChunkSpec("sentence", 3, 0)
    chunks = chunk_corpus(docs, spec, REGEX)
    assert {c.doc_id for c in chunks} == {"policy/refunds", "faq"}
    assert chunks[-1].chunk_id == "faq#0"
    stats = chunk_stats(chunks)
    assert stats["n_chunks"] == len(chunks)
    assert stats["chunk_tokens_max"] == max(c.n_tokens for c in chunks)
    assert stats["n_oversize_chunks"] == sum(c.oversize for c in chunks) > 0
    assert chunk_stats([])["n_chunks"] == 0


# --------------------------------------------------------------------------- MiniLM tokenizer


def test_minilm_tokenizer_chunks() -> None:
    tok = load_chunk_tokenizer("minilm")
    doc = make_doc()
    starts = tok.token_starts(doc.text)
    assert len(starts) > 50
    assert list(starts) == sorted(starts)
    # every token starts on a non-whitespace character
    assert all(not doc.text[s].isspace() for s in starts)
    for boundary in TILING_BOUNDARIES:
        for size, overlap in ((16, 0), (16, 6), (64, 0)):
            spec = ChunkSpec(boundary, size, overlap, "path")
            chunks = chunks_for(doc, spec, tok)
            check_invariants(doc, chunks, spec, starts)
            assert chunks == chunks_for(doc, spec, tok)


def test_minilm_sizes_count_wordpieces() -> None:
    tok = load_chunk_tokenizer("minilm")
    doc = make_doc("Unbelievably, refundability is paramount.", "x.txt")
    (chunk,) = chunks_for(doc, ChunkSpec("fixed", 100, 0), tok)
    # WordPiece splits the long words, so there are more tokens than words + punctuation
    assert chunk.n_tokens > 6


def test_minilm_multi_token_characters_do_not_force_oversize() -> None:
    """Hangul syllables are 2-3 WordPiece tokens that share one start offset; a chunk of
    `size` >= 3 tokens can always be cut between syllables, so fixed/recursive/heading
    chunks must stay within `size`."""
    tok = load_chunk_tokenizer("minilm")
    doc = make_doc(
        "# 환불 정책\n\n구매 후 삼십일 이내에 반품할 수 있습니다 환불은 원래 카드로 처리됩니다 "
        "세일 상품은 반품할 수 없습니다\n",
        "ko.md",
    )
    starts = tok.token_starts(doc.text)
    assert len(starts) > len(set(starts.tolist()))  # several tokens per character
    for boundary in NEVER_OVERSIZE:
        for size in (4, 8, 16):
            spec = ChunkSpec(boundary, size, 0)
            chunks = chunks_for(doc, spec, tok)
            too_big = [(c.chunk_id, c.n_tokens) for c in chunks if c.n_tokens > size]
            assert not too_big, f"{boundary} size={size}: {too_big}"


# --------------------------------------------------------------------------- Hypothesis

_LETTERS = st.characters(
    codec="utf-8",
    categories=("Lu", "Ll", "Lo", "Nd", "Mn"),
    exclude_characters="\u0345",
)
_WORD = st.one_of(
    st.sampled_from(
        ["refund", "the", "days", "e.g.", "Policy", "30", "café", "naïve", "straße", "日本語",
         "données", "x", "API_KEY", "--flag", "C++", "n't", "“quoted”", "(see", "above)"]
    ),
    st.text(_LETTERS, min_size=1, max_size=10),
)
_SPACE = st.sampled_from([" ", " ", " ", "  ", "\t", "\u00a0", " \u2003"])
_END = st.sampled_from([".", ".", "!", "?", "", "…", '."', ".)", ":", ";"])


@st.composite
def _sentence(draw) -> str:
    words = draw(st.lists(_WORD, min_size=1, max_size=12))
    out = words[0]
    for w in words[1:]:
        out += draw(_SPACE) + w
    return out + draw(_END)


@st.composite
def _paragraph(draw) -> str:
    sentences = draw(st.lists(_sentence(), min_size=1, max_size=5))
    out = sentences[0]
    for s in sentences[1:]:
        out += draw(st.sampled_from([" ", "\n", "  "])) + s
    return out


@st.composite
def _heading(draw) -> str:
    level = draw(st.integers(1, 6))
    title = draw(st.lists(_WORD, min_size=0, max_size=4))
    closing = draw(st.sampled_from(["", "", " #", " ##"]))
    indent = draw(st.sampled_from(["", "", " ", "   "]))
    return indent + "#" * level + (" " + " ".join(title) if title else "") + closing


@st.composite
def _list_block(draw) -> str:
    items = draw(st.lists(_sentence(), min_size=1, max_size=4))
    marker = draw(st.sampled_from(["- ", "* ", "+ ", "1. ", "2) "]))
    return "\n".join(marker + item for item in items)


@st.composite
def _fence(draw) -> str:
    char = draw(st.sampled_from(["`", "~"]))
    opening = char * draw(st.integers(3, 5))
    info = draw(st.sampled_from(["", "python", "bash"]))
    body = draw(
        st.lists(
            st.one_of(_sentence(), _heading(), st.just(""), st.just("# comment"), st.just("x = 1")),
            max_size=5,
        )
    )
    closing = draw(
        st.sampled_from([opening, opening + char, "", char * 3])
    )  # sometimes unclosed or closed by a shorter fence (not a close)
    return "\n".join([opening + info, *body, closing])


_BLOCK = st.one_of(
    _heading(),
    _heading(),
    _paragraph(),
    _paragraph(),
    _list_block(),
    _fence(),
    _sentence().map(lambda s: "> " + s),
    st.lists(_WORD, min_size=1, max_size=3).map(lambda ws: "| " + " | ".join(ws) + " |"),
)
_SEPARATOR = st.sampled_from(["\n", "\n\n", "\n\n", "\n \n", "\n\n\n", "\n\t\n  "])


@st.composite
def markdown_docs(draw) -> Document:
    blocks = draw(st.lists(_BLOCK, min_size=0, max_size=14))
    text = draw(st.sampled_from(["", "", "\n", "  \n\n"]))
    for block in blocks:
        text += block + draw(_SEPARATOR)
    if draw(st.booleans()):
        text = text.rstrip("\n")
    return parse_document("gen/doc.md", text)


_PROPERTY_SETTINGS = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@_PROPERTY_SETTINGS
@given(doc=markdown_docs(), size=st.integers(1, 64), header=st.sampled_from(["none", "path"]))
def test_property_no_overlap(doc: Document, size: int, header: str) -> None:
    starts = REGEX.token_starts(doc.text)
    for boundary in TILING_BOUNDARIES:
        spec = ChunkSpec(boundary, size, 0, header)
        chunks = chunk_document(doc, starts, spec.validate())
        check_invariants(doc, chunks, spec, starts)
        assert chunks == chunk_document(doc, starts, spec)


@st.composite
def _size_and_overlap(draw) -> tuple[int, int]:
    size = draw(st.integers(1, 64))
    return size, draw(st.integers(0, size - 1))


@_PROPERTY_SETTINGS
@given(doc=markdown_docs(), size_overlap=_size_and_overlap())
def test_property_with_overlap(doc: Document, size_overlap: tuple[int, int]) -> None:
    size, overlap = size_overlap
    starts = REGEX.token_starts(doc.text)
    for boundary in TILING_BOUNDARIES:
        spec = ChunkSpec(boundary, size, overlap)
        chunks = chunk_document(doc, starts, spec.validate())
        check_invariants(doc, chunks, spec, starts)
        assert chunks == chunk_document(doc, starts, spec)


def test_tiling_boundaries_are_registered() -> None:
    from sweep.chunking.chunkers import BOUNDARIES

    assert set(TILING_BOUNDARIES) <= set(BOUNDARIES)
