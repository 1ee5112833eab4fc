"""Fuzzing the input boundary: whatever the bytes, the outcome is a clean `SweepError` or
well-formed output, never an unhandled exception.

- golden loader: random bytes, random JSON values, golden-shaped objects with random-typed
  fields (`parse_golden_lines`, `load_golden` on a real file), random reference sidecars;
- corpus: random bytes to `decode_file`, random text (control characters, fences, headings,
  CRLF, BOM, NUL) to `parse_document`;
- chunkers: random text and random `ChunkSpec`s (valid specs give valid chunks, invalid ones
  raise `SweepError` from `.validate()`);
- relevance: random `EvidenceRef`s against a small corpus (problems or valid spans).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sweep.chunking.chunkers import HEADERS, TILING_BOUNDARIES, ChunkSpec, chunk_document
from sweep.chunking.tokenizers import RegexTokenizer
from sweep.common.errors import SweepError
from sweep.data.corpus import Document, decode_file, parse_document, utf16_codec
from sweep.data.golden import (
    EvidenceRef,
    GoldenItem,
    GoldenSet,
    Problem,
    load_golden,
    parse_golden_lines,
)
from sweep.evaluation.relevance import CorpusIndex, resolve_item
from sweep.evaluation.validate import check_golden
from sweep.pipeline.memo import reference_spec

FUZZ = settings(max_examples=200, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.filter_too_much,
                                       HealthCheck.function_scoped_fixture])

TOKENIZER = RegexTokenizer()

# --------------------------------------------------------------------------- strategies

json_leaf = (st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
             | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=12))
json_value = st.recursive(
    json_leaf,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=4),
    max_leaves=12,
)
# Values near the ones a golden file really holds, so the checks past the type tests run too.
plausible_str = st.sampled_from(["returns", "shipping", "returns.md", "./shipping.md",
                                 "returns#0", "returns#1", "shipping#0", "30 days", "Orders",
                                 "", " ", "q1", "q2", "ship"]) | st.text(max_size=15)
plausible_int = st.integers(min_value=-3, max_value=400)
anything = st.one_of(json_value, plausible_str, plausible_int)

# Extra keys with arbitrary names (a typo, a key with a newline or a quote in it).
extra_keys = st.dictionaries(st.text(max_size=6), anything, max_size=2)


def _with_extra(fixed: st.SearchStrategy[dict]) -> st.SearchStrategy[dict]:
    return st.tuples(fixed, extra_keys).map(lambda t: {**t[1], **t[0]})


evidence_obj = _with_extra(st.fixed_dictionaries({}, optional={
    "doc_id": anything, "path": anything, "start": anything, "end": anything,
    "quote": anything, "text": anything,
}))
str_list_field = st.one_of(anything, st.lists(anything, max_size=4))
golden_obj = _with_extra(st.fixed_dictionaries({}, optional={
    "qid": st.one_of(anything, st.sampled_from(["q1", "q2", 1, 2])),
    "question": st.one_of(anything, st.sampled_from(["how long", "How  long", "when"])),
    "relevant_chunk_ids": str_list_field,
    "answer_must_mention": str_list_field,
    "relevant_doc_ids": str_list_field,
    "evidence": st.one_of(anything, st.lists(st.one_of(evidence_obj, anything), max_size=3)),
    "notes": anything,
    "tags": anything,
}))


def _dump(value: object) -> str:
    return json.dumps(value)  # NaN / Infinity written as JSON's extensions, as Python reads them


golden_line = st.one_of(
    golden_obj.map(_dump),
    json_value.map(_dump),
    st.text(max_size=40),
    golden_obj.map(_dump).flatmap(  # a good-looking line cut short or with junk appended
        lambda s: st.integers(0, len(s)).map(lambda i: s[:i])),
)
golden_text = st.tuples(st.lists(golden_line, max_size=8),
                        st.sampled_from(["\n", "\r\n"]),
                        st.booleans()).map(
    lambda t: ("\ufeff" if t[2] else "") + t[1].join(t[0]))

FRAGMENTS = ["# ", "## Part\n", "### ", "```\n", "~~~\n", "````python\n", "\r\n", "\r", "\n",
             "\n\n", "\ufeff", "\x00", "\x0b", "\x0c", "\x1c", "\u2028", "\u0085", ". ",
             "? ", "! ", "e.g. ", "- ", "* ", "1. ", "| a | b |\n", "> ", "    ", "\t",
             "İ", "ß", "e\u0301", "\U0001f600", "word", "Sentence one. Sentence two.",
             " #", "#"]
doc_text = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=25)),
                    max_size=40).map("".join)
file_name = st.text(st.characters(blacklist_characters="/\\\x00",
                                  blacklist_categories=("Cs",)), min_size=1, max_size=12).filter(
    lambda s: not s.startswith(".")).map(lambda s: s + ".md") | st.sampled_from(
    ["a.md", "Docs/Guide One.md", "notes.txt", "ü/ß straße.markdown", "x/y/z.md"])

valid_spec = st.integers(min_value=1, max_value=60).flatmap(lambda size: st.builds(
    ChunkSpec,
    boundary=st.sampled_from(TILING_BOUNDARIES),
    size=st.just(size),
    overlap=st.integers(min_value=0, max_value=size - 1),
    header=st.sampled_from(HEADERS),
))
any_spec = valid_spec | st.builds(  # half valid, half anything (mostly invalid)
    ChunkSpec,
    boundary=st.sampled_from(TILING_BOUNDARIES) | st.text(max_size=6),
    size=st.integers(min_value=-3, max_value=80),
    overlap=st.integers(min_value=-3, max_value=80),
    header=st.sampled_from(HEADERS) | st.text(max_size=6),
)


def spec_is_valid(spec: ChunkSpec) -> bool:
    return (spec.boundary in TILING_BOUNDARIES and spec.header in HEADERS and spec.size >= 1
            and 0 <= spec.overlap < spec.size)


# --------------------------------------------------------------------------- checks


def assert_well_formed(items: list[GoldenItem], problems: list[Problem], file: str) -> None:
    assert items or problems, "an input with no items must say why"
    for p in problems:
        assert isinstance(p, Problem)
        assert p.file == file
        assert isinstance(p.line, int) and p.line >= 0
        assert p.severity in ("error", "warning")
        assert isinstance(p.field, str) and isinstance(p.message, str) and p.message
        assert "\n" not in str(p), f"problem is not one line: {str(p)!r}"
    error_lines = {p.line for p in problems if p.severity == "error"}
    qids = [it.qid for it in items]
    assert len(qids) == len(set(qids)), "duplicate qids must not both be kept"
    for it in items:
        assert isinstance(it, GoldenItem)
        assert it.line >= 1 and it.line not in error_lines, "an item kept despite an error"
        assert isinstance(it.qid, str) and it.qid.strip()
        assert isinstance(it.question, str) and it.question.strip()
        for seq in (it.relevant_chunk_ids, it.answer_must_mention, it.relevant_doc_ids):
            assert isinstance(seq, tuple)
            assert all(isinstance(s, str) and s.strip() for s in seq)
        assert isinstance(it.evidence, tuple)
        assert it.relevant_chunk_ids or it.evidence or it.relevant_doc_ids
        for ev in it.evidence:
            assert isinstance(ev, EvidenceRef)
            assert ev.doc_id is not None or ev.path is not None
            for name in (ev.doc_id, ev.path):
                assert name is None or (isinstance(name, str) and name.strip())
            if ev.start is not None or ev.end is not None:
                assert type(ev.start) is int and type(ev.end) is int
                assert 0 <= ev.start < ev.end
            else:
                assert ev.quote is not None
            assert ev.quote is None or (isinstance(ev.quote, str) and ev.quote.strip())


def parse_or_clean_error(text: str, file: str) -> None:
    try:
        items, problems = parse_golden_lines(text, file)
    except SweepError as exc:
        assert str(exc)
        return
    assert_well_formed(items, problems, file)


def load_or_clean_error(path: Path) -> GoldenSet | None:
    try:
        golden = load_golden(path)
    except SweepError as exc:
        assert "\n" not in str(exc), f"error is not one line: {str(exc)!r}"
        return None
    assert golden.path == str(path)
    assert_well_formed(golden.items, golden.problems, str(path))
    return golden


@pytest.fixture(scope="module")
def fuzz_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


# --------------------------------------------------------------------------- golden loader


@FUZZ
@given(data=st.binary(max_size=400))
def test_golden_parser_random_bytes(data: bytes) -> None:
    parse_or_clean_error(data.decode("utf-8", errors="replace"), "golden.jsonl")


@FUZZ
@given(text=golden_text)
def test_golden_parser_random_json_lines(text: str) -> None:
    parse_or_clean_error(text, "golden.jsonl")


@FUZZ
@given(objs=st.lists(golden_obj, min_size=1, max_size=6))
def test_golden_parser_golden_shaped_objects(objs: list[dict]) -> None:
    parse_or_clean_error("\n".join(_dump(o) for o in objs), "g.jsonl")


@FUZZ
@given(data=st.one_of(st.binary(max_size=400),
                      golden_text.map(lambda s: s.encode("utf-8", errors="surrogatepass"))))
def test_load_golden_random_file(fuzz_dir: Path, data: bytes) -> None:
    path = fuzz_dir / "golden.jsonl"
    path.write_bytes(data)
    load_or_clean_error(path)


@FUZZ
@given(depth=st.integers(min_value=1, max_value=200_000),
       opener=st.sampled_from(["[", '{"a":']))
def test_load_golden_deeply_nested_json(fuzz_dir: Path, depth: int, opener: str) -> None:
    closer = "]" if opener == "[" else "}"
    inner = "" if opener == "[" else "1"
    path = fuzz_dir / "deep.jsonl"
    path.write_text('{"qid": "q1", "question": "x", "relevant_doc_ids": ["a"]}\n'
                    + opener * depth + inner + closer * depth + "\n")
    golden = load_or_clean_error(path)
    if golden is not None:
        assert [it.qid for it in golden.items] == ["q1"]
        assert any(p.line == 2 and p.severity == "error" for p in golden.problems)


sidecar_chunk = st.fixed_dictionaries({}, optional={
    "boundary": st.one_of(st.sampled_from(TILING_BOUNDARIES), anything),
    "size": st.one_of(st.integers(-5, 600), st.floats(), anything),
    "overlap": st.one_of(st.integers(-5, 600), st.floats(), anything),
    "tokenizer": st.one_of(st.just("regex"), anything),
})


def _yaml(value: object) -> str:
    import yaml

    return yaml.safe_dump(value, allow_unicode=True)


def _golden_with_sidecar(fuzz_dir: Path, sidecar: bytes) -> GoldenSet | None:
    path = fuzz_dir / "ref.jsonl"
    path.write_text('{"qid": "q1", "question": "x", "relevant_chunk_ids": ["a#0"]}\n')
    (fuzz_dir / "ref.reference.yaml").write_bytes(sidecar)
    return load_or_clean_error(path)


@FUZZ
@given(sidecar=st.binary(max_size=200) | st.text(max_size=60).map(str.encode))
def test_reference_sidecar_random_bytes(fuzz_dir: Path, sidecar: bytes) -> None:
    """A random `*.reference.yaml` file: loaded, or a clean one-line `SweepError`."""
    _golden_with_sidecar(fuzz_dir, sidecar)


@FUZZ
@given(sidecar=st.one_of(
    sidecar_chunk.map(lambda c: _yaml({"chunk": c}).encode()),
    json_value.map(lambda v: _yaml(v).encode()),
))
def test_reference_sidecar_random_values(fuzz_dir: Path, sidecar: bytes) -> None:
    """Well-formed YAML with random values: `reference_spec` gives a valid spec or a clean
    one-line `SweepError`."""
    golden = _golden_with_sidecar(fuzz_dir, sidecar)
    if golden is None:
        return
    try:
        ref = reference_spec(golden)
    except SweepError as exc:
        assert "\n" not in str(exc), f"error is not one line: {str(exc)!r}"
        return
    if ref is not None:
        spec, tokenizer = ref
        assert spec_is_valid(spec) and isinstance(tokenizer, str)


# --------------------------------------------------------------------------- corpus


@FUZZ
@given(data=st.binary(max_size=600) | st.text(max_size=200).map(
    lambda s: ("\ufeff" + s).encode("utf-8")))
def test_decode_file_random_bytes(data: bytes) -> None:
    path = Path("corpus/some file.md")
    try:
        text = decode_file(path, data)
    except SweepError as exc:
        assert str(path) in str(exc) and "\n" not in str(exc)
        return
    assert isinstance(text, str)
    codec = utf16_codec(data)
    if codec is not None:  # UTF-16, by its BOM or its NUL bytes: decoded as that, exactly
        assert text == data.decode(codec)
        return
    assert b"\x00" not in data[:8192]
    assert text.encode("utf-8") == data.removeprefix(b"\xef\xbb\xbf")


def assert_valid_document(doc: Document, raw: str) -> None:
    text = doc.text
    assert "\r" not in text and not text.startswith("\ufeff")
    assert doc.doc_id and isinstance(doc.title, str) and doc.title
    prev_end = 0
    for sec in doc.sections:
        assert 0 <= sec.start <= sec.end <= len(text)
        assert sec.start >= prev_end
        prev_end = sec.end
    if doc.sections:
        assert doc.sections[-1].end == len(text)


@FUZZ
@given(raw=doc_text, name=file_name)
def test_parse_document_random_text(raw: str, name: str) -> None:
    doc = parse_document(name, raw, markdown=not name.endswith(".txt"))
    assert_valid_document(doc, raw)


# --------------------------------------------------------------------------- chunkers


@FUZZ
@given(raw=doc_text, spec=any_spec, markdown=st.booleans())
def test_chunkers_random_text_and_specs(raw: str, spec: ChunkSpec, markdown: bool) -> None:
    doc = parse_document("docs/page.md", raw, markdown=markdown)
    if not spec_is_valid(spec):
        with pytest.raises(SweepError):
            spec.validate()
        return
    assert spec.validate() is spec
    starts = TOKENIZER.token_starts(doc.text)
    chunks = chunk_document(doc, starts, spec)
    text = doc.text
    prev = None
    for i, c in enumerate(chunks):
        assert c.chunk_id == f"{doc.doc_id}#{i}" and c.ordinal == i and c.doc_id == doc.doc_id
        assert 0 <= c.start < c.end <= len(text)
        assert c.text == text[c.start:c.end]
        assert c.text.strip() == c.text, "chunks are trimmed of surrounding whitespace"
        assert c.embed_text.endswith(c.text)
        n = int(((starts >= c.start) & (starts < c.end)).sum())
        assert c.n_tokens == n
        if spec.boundary in ("fixed", "heading", "recursive"):
            # regex tokens never share a start, so these boundaries always fit `size`
            assert c.n_tokens <= spec.size, (spec, c)
        if prev is not None:
            assert c.start > prev.start and c.end > prev.end, "chunks out of order"
            if spec.overlap == 0:
                assert c.start >= prev.end, "chunks overlap with overlap=0"
        prev = c
    # Every non-blank character of the document is in some chunk.
    covered = bytearray(len(text))
    for c in chunks:
        covered[c.start:c.end] = b"\x01" * (c.end - c.start)
    missing = [i for i, ch in enumerate(text) if not ch.isspace() and not covered[i]]
    assert not missing, f"characters not in any chunk: {[text[i] for i in missing[:10]]}"


# --------------------------------------------------------------------------- relevance

CORPUS_TEXTS = {
    "returns.md": "# Returns\n\nYou can return items within 30 days of delivery.\n\n"
                  "## Fees\n\nA restocking fee of 15% applies. İstanbul orders: 30 DAYS.\n",
    "shipping.md": "# Shipping\n\nOrders ship within 2 business days.\nOrders   ship fast.\n",
    "notes.txt": "Plain notes.\n\n\nWith (regex) [chars] *and* spaces.\n",
}
DOCS = [parse_document(p, t, markdown=not p.endswith(".txt")) for p, t in CORPUS_TEXTS.items()]
INDEX = CorpusIndex(DOCS)
REFERENCE = {c.chunk_id: c for d in DOCS
             for c in chunk_document(d, TOKENIZER.token_starts(d.text),
                                     ChunkSpec("heading", 12, 0))}
DOC_IDS = [d.doc_id for d in DOCS]


@st.composite
def corpus_substring(draw: st.DrawFn) -> str:
    doc = draw(st.sampled_from(DOCS))
    a = draw(st.integers(0, len(doc.text) - 1))
    b = draw(st.integers(a + 1, len(doc.text)))
    return doc.text[a:b]


@st.composite
def evidence_ref(draw: st.DrawFn) -> EvidenceRef:
    """EvidenceRefs within the parser's contract (what `resolve_item` is given)."""
    names = st.sampled_from([*DOC_IDS, "nope", "RETURNS"]) | st.text(min_size=1, max_size=8)
    paths = (st.sampled_from([*CORPUS_TEXTS, "./returns.md", "returns", "x/returns.md"])
             | st.text(min_size=1, max_size=8))
    doc_id, path = draw(st.sampled_from([(True, False), (False, True), (True, True)]))
    doc_id = draw(names) if doc_id else None
    path = draw(paths) if path else None
    quote = draw(st.none() | corpus_substring() | st.text(min_size=1, max_size=20)
                 | st.sampled_from(["30 days", "Orders ship", "orders\nship", "(regex)"]))
    if quote is not None and not quote.strip():
        quote = "x" + quote
    span = draw(st.none() | st.tuples(st.integers(0, 300), st.integers(1, 300)).filter(
        lambda t: t[0] < t[1]))
    if span is None and quote is None:
        quote = "30 days"
    start, end = span if span else (None, None)
    return EvidenceRef(doc_id, path, start, end, quote)


golden_item = st.builds(
    GoldenItem,
    qid=st.just("q1"),
    question=st.just("a question"),
    relevant_chunk_ids=st.lists(st.sampled_from([*REFERENCE, "returns#99", "nope#0"])
                                | st.text(min_size=1, max_size=8), max_size=3).map(tuple),
    answer_must_mention=st.lists(
        st.sampled_from(["30 days", "i̇stanbul", "İ", "[", ".*", "ß", "\\"])
        | st.text(min_size=1, max_size=6).filter(str.strip), max_size=3).map(tuple),
    relevant_doc_ids=st.lists(st.sampled_from([*DOC_IDS, "nope"]), max_size=2).map(tuple),
    evidence=st.lists(evidence_ref(), max_size=3).map(tuple),
    line=st.integers(1, 50),
)


@FUZZ
@given(item=golden_item, with_reference=st.booleans())
def test_resolve_item_random_evidence(item: GoldenItem, with_reference: bool) -> None:
    resolved = resolve_item(item, INDEX, REFERENCE if with_reference else None, "g.jsonl")
    assert resolved.item is item
    assert resolved.source in ("evidence", "chunk_ids", "doc_ids", "none")
    assert resolved.level in ("span", "doc", "orphan")
    for p in resolved.problems:
        assert p.file == "g.jsonl" and p.line == item.line and p.severity in ("error",
                                                                              "warning")
        assert "\n" not in str(p), f"problem is not one line: {str(p)!r}"
    for doc_id, start, end in resolved.spans:
        assert doc_id in INDEX.by_id
        assert 0 <= start < end <= len(INDEX.by_id[doc_id].text)
    assert resolved.doc_ids <= set(INDEX.by_id)
    # evidence that resolved is used as is: an exact quote points at its own text
    for ref in item.evidence:
        doc = INDEX.find(ref)
        if (doc is not None and ref.start is None and ref.quote is not None
                and ref.quote in doc.text):
            assert (doc.doc_id, doc.text.find(ref.quote),
                    doc.text.find(ref.quote) + len(ref.quote)) in resolved.spans
    # the validator accepts whatever the resolver produced
    golden = GoldenSet("g.jsonl", [item], [], "fp")
    result = check_golden(golden, [resolved], DOCS)
    assert all(isinstance(p, Problem) for p in result.problems)

