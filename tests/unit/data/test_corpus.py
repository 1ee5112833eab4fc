"""Parsing rules of `sweep.data.corpus` (pure functions) and `load_corpus` on tiny folders."""

from __future__ import annotations

import logging
import unicodedata
from itertools import pairwise
from pathlib import Path

import pytest

from sweep.common.errors import SweepError
from sweep.data.corpus import (
    Section,
    corpus_fingerprint,
    load_corpus,
    markdown_headings,
    markdown_sections,
    normalize_text,
    parse_document,
    slugify_path,
    title_from,
)

# --------------------------------------------------------------------------- slugs


@pytest.mark.parametrize(
    ("path", "slug"),
    [
        ("Returns/Refund Policy.md", "returns/refund-policy"),
        ("faq.md", "faq"),
        ("policy/refunds.txt", "policy/refunds"),
        ("Returns\\Refund Policy.md", "returns/refund-policy"),
        ("a/b/C  D!!e.markdown", "a/b/c-d-e"),
        ("v1.2 notes.md", "v1.2-notes"),
        ("snake_case_name.md", "snake_case_name"),
        ("Ünïcode Straße.md", "ünïcode-straße"),
    ],
)
def test_slugify_path(path: str, slug: str) -> None:
    assert slugify_path(path) == slug


def test_slugify_path_never_empty_part() -> None:
    assert slugify_path("!!!/x.md") == "_/x"


# --------------------------------------------------------------------------- headings


def test_markdown_headings_basic_offsets_and_levels() -> None:
    text = "# One\ntext\n## Two ##\n###### Six\n####### seven is not a heading\n#nospace\n"
    heads = markdown_headings(text)
    assert heads == [(0, 1, "One"), (11, 2, "Two"), (21, 6, "Six")]
    for offset, level, _ in heads:
        assert text[offset : offset + level] == "#" * level


def test_markdown_headings_ignore_backtick_and_tilde_fences() -> None:
    text = (
        "# Real\n"
        "```python\n"
        "# comment in code\n"
        "```\n"
        "## Also real\n"
        "~~~\n"
        "# inside tildes\n"
        "```\n"  # a backtick line does not close a tilde fence
        "# still inside tildes\n"
        "~~~\n"
        "### Last\n"
    )
    assert [(lvl, t) for _, lvl, t in markdown_headings(text)] == [
        (1, "Real"), (2, "Also real"), (3, "Last"),
    ]


def test_fence_closed_by_longer_fence_but_not_shorter() -> None:
    text = (
        "````\n"
        "# in\n"
        "```\n"  # shorter: does not close
        "# still in\n"
        "``````\n"  # longer: closes
        "# out\n"
    )
    heads = markdown_headings(text)
    assert [t for _, _, t in heads] == ["out"]
    assert text[heads[0][0] :].startswith("# out")


def test_fence_with_text_after_it_does_not_close() -> None:
    text = "```\n# in\n``` not a closer\n# still in\n```\n# out\n"
    assert [t for _, _, t in markdown_headings(text)] == ["out"]


def test_unclosed_fence_hides_the_rest() -> None:
    assert markdown_headings("# a\n```\n# b\n# c\n") == [(0, 1, "a")]


def test_title_from_first_heading_else_file_name() -> None:
    assert title_from("intro\n\n## Refund window\n# Later\n", "x.md") == "Refund window"
    assert title_from("no heading here\n", "policy/refund-policy_v2.md") == "refund policy v2"
    # a heading with no title is skipped
    assert title_from("#\n## Named\n", "x.md") == "Named"
    # a heading inside a fence is not a title
    assert title_from("```\n# code\n```\n", "dir/my_notes.md") == "my notes"


def test_parse_document_txt_uses_file_name_title_and_one_section() -> None:
    doc = parse_document("notes/Release Notes.txt", "# not a heading in txt\nbody\n", markdown=False)
    assert doc.doc_id == "notes/release-notes"
    assert doc.title == "Release Notes"
    assert doc.sections == (Section(0, len(doc.text), 0, ()),)
    assert doc.source == "notes/Release Notes.txt"


# --------------------------------------------------------------------------- sections


def test_sections_cover_text_with_nested_heading_paths() -> None:
    text = "# A\na\n## B\nb\n### C\nc\n## D\nd\n"
    sections = markdown_sections(text)
    assert [s.heading_path for s in sections] == [
        ("A",), ("A", "B"), ("A", "B", "C"), ("A", "D"),
    ]
    assert [s.level for s in sections] == [1, 2, 3, 2]
    assert sections[0].start == 0
    assert sections[-1].end == len(text)
    for prev, nxt in pairwise(sections):
        assert prev.end == nxt.start
    assert [text[s.start : s.end] for s in sections] == [
        "# A\na\n", "## B\nb\n", "### C\nc\n", "## D\nd\n",
    ]


def test_sections_preamble_and_level_jumps() -> None:
    text = "intro line\n\n### Deep\nx\n# Top\ny\n## Sub\nz"
    sections = markdown_sections(text)
    assert sections[0] == Section(0, text.index("### Deep"), 0, ())
    assert [s.heading_path for s in sections[1:]] == [("Deep",), ("Top",), ("Top", "Sub")]
    assert sections[-1].end == len(text)
    for prev, nxt in pairwise(sections):
        assert prev.end == nxt.start


def test_sections_blank_preamble_is_not_a_section() -> None:
    text = "\n\n# A\nx\n"
    sections = markdown_sections(text)
    assert len(sections) == 1
    assert sections[0].start == 2


def test_sections_without_headings() -> None:
    assert markdown_sections("just text") == (Section(0, 9, 0, ()),)
    assert markdown_sections("   \n") == ()


def test_section_at() -> None:
    doc = parse_document("a.md", "# A\nx\n## B\ny\n")
    assert doc.section_at(0).heading_path == ("A",)
    assert doc.section_at(7).heading_path == ("A", "B")
    assert doc.section_at(len(doc.text)) is None


# --------------------------------------------------------------------------- normalisation


def test_normalize_text() -> None:
    decomposed = "Cafe\u0301"
    assert unicodedata.is_normalized("NFD", decomposed)
    assert normalize_text("\ufeff# T\r\nline\rnext " + decomposed) == "# T\nline\nnext Caf\u00e9"
    assert normalize_text("plain\n") == "plain\n"


def test_parse_document_offsets_are_in_normalized_text() -> None:
    doc = parse_document("x.md", "\ufeff# T\r\n\r\nbody\r\n")
    assert doc.text == "# T\n\nbody\n"
    assert doc.title == "T"


# --------------------------------------------------------------------------- load_corpus


def _write(root: Path, rel: str, data: str | bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data, encoding="utf-8")
    return path


def test_load_corpus_recursive_sorted_and_filtered(tmp_path: Path) -> None:
    _write(tmp_path, "b.md", "# Bee\nbuzz\n")
    _write(tmp_path, "a.txt", "plain text\n")
    _write(tmp_path, "sub/c.md", "# See\nsea\n")
    _write(tmp_path, "sub/deeper/d.markdown", "# Dee\n")
    _write(tmp_path, "notes.rst", "ignored extension\n")
    _write(tmp_path, ".hidden/e.md", "# hidden folder\n")
    _write(tmp_path, "sub/.git/f.md", "# hidden nested folder\n")
    _write(tmp_path, ".dotfile.md", "# hidden file\n")
    docs = load_corpus(tmp_path)
    assert [d.doc_id for d in docs] == ["a", "b", "sub/c", "sub/deeper/d"]
    assert [d.source for d in docs] == ["a.txt", "b.md", "sub/c.md", "sub/deeper/d.markdown"]
    assert [d.title for d in docs] == ["a", "Bee", "See", "Dee"]


def test_load_corpus_normalizes_text(tmp_path: Path) -> None:
    _write(tmp_path, "x.md", "\ufeff# T\r\nCafe\u0301\r\n".encode())
    (doc,) = load_corpus(tmp_path)
    assert doc.text == "# T\nCaf\u00e9\n"


def test_load_corpus_extensions_argument(tmp_path: Path) -> None:
    _write(tmp_path, "a.md", "# A\n")
    _write(tmp_path, "b.TXT", "bee\n")
    assert [d.doc_id for d in load_corpus(tmp_path, extensions=[".txt"])] == ["b"]


def test_load_corpus_skips_empty_file_with_warning(tmp_path: Path, caplog) -> None:
    _write(tmp_path, "empty.md", "")
    _write(tmp_path, "blank.md", "  \n\n\t\n")
    _write(tmp_path, "ok.md", "# ok\n")
    with caplog.at_level(logging.WARNING, logger="sweep.data.corpus"):
        docs = load_corpus(tmp_path)
    assert [d.doc_id for d in docs] == ["ok"]
    warned = " ".join(r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING)
    assert "empty.md" in warned
    assert "blank.md" in warned
    assert "empty" in warned


def test_load_corpus_size_limit_refuses_unread(tmp_path: Path, monkeypatch, caplog) -> None:
    big = _write(tmp_path, "big.pdf", b"%PDF-1.4\n" + b"x" * 2_991)  # 3,000 bytes
    _write(tmp_path, "small.md", "# small\n")
    read = []
    import sweep.data.corpus as corpus_module

    real_read = corpus_module.read_regular

    def spy(path: Path, shown: str | None = None) -> bytes:
        read.append(path.name)
        return real_read(path, shown)

    monkeypatch.setattr(corpus_module, "read_regular", spy)
    with pytest.raises(SweepError) as info:
        load_corpus(tmp_path, max_file_mb=0.002)  # 2,000 bytes
    assert str(info.value).startswith(f"{big}: 0 MB (3,000 bytes) is over the size limit "
                                      "corpus.max_file_mb=0.002")
    assert "big.pdf" not in read  # refused from its size: never read, never parsed
    with caplog.at_level(logging.WARNING, logger="sweep.data.corpus"):
        docs = load_corpus(tmp_path, max_file_mb=0.002, on_error="skip")
    assert [d.doc_id for d in docs] == ["small"]
    assert any("big.pdf" in r.getMessage() and "3,000 bytes" in r.getMessage()
               for r in caplog.records)
    # At the limit is allowed (the check is "over"), and 0 means no limit: the file is read
    # and reaches the PDF parser, which refuses this non-PDF body on its own terms.
    for limit in (0.003, 0):
        with pytest.raises(SweepError, match="truncated or corrupt PDF"):
            load_corpus(tmp_path, max_file_mb=limit)
    assert "big.pdf" in read


def test_corpus_config_size_limit_default_is_the_loaders() -> None:
    from sweep.config.schema import CorpusConfig
    from sweep.data.corpus import DEFAULT_MAX_FILE_MB

    assert CorpusConfig(name="x", path="y").max_file_mb == DEFAULT_MAX_FILE_MB == 100


def test_load_corpus_non_utf8_names_path_and_line(tmp_path: Path) -> None:
    bad = _write(tmp_path, "bad.md", b"# ok\nsecond line\ncaf\xe9 third line\n")
    _write(tmp_path, "good.md", "# good\n")
    with pytest.raises(SweepError) as info:
        load_corpus(tmp_path)
    message = str(info.value)
    assert f"{bad}:3:" in message
    assert "UTF-8" in message


def test_load_corpus_non_utf8_skip(tmp_path: Path, caplog) -> None:
    _write(tmp_path, "bad.md", b"caf\xe9\n")
    _write(tmp_path, "good.md", "# good\n")
    with caplog.at_level(logging.WARNING, logger="sweep.data.corpus"):
        docs = load_corpus(tmp_path, on_error="skip")
    assert [d.doc_id for d in docs] == ["good"]
    assert any("bad.md" in r.getMessage() for r in caplog.records)


def test_load_corpus_binary_file_is_an_error(tmp_path: Path) -> None:
    _write(tmp_path, "blob.md", b"abc\x00\x01\x02def")
    _write(tmp_path, "good.md", "# good\n")
    with pytest.raises(SweepError, match=r"blob\.md"):
        load_corpus(tmp_path)
    # and skipped when asked
    assert [d.doc_id for d in load_corpus(tmp_path, on_error="skip")] == ["good"]


def test_load_corpus_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(SweepError, match="not found"):
        load_corpus(tmp_path / "nope")


def test_load_corpus_path_is_a_file(tmp_path: Path) -> None:
    f = _write(tmp_path, "a.md", "# A\n")
    with pytest.raises(SweepError):
        load_corpus(f)


def test_load_corpus_no_documents(tmp_path: Path) -> None:
    _write(tmp_path, "only.rst", "x\n")
    with pytest.raises(SweepError):
        load_corpus(tmp_path)


def test_load_corpus_duplicate_slug(tmp_path: Path) -> None:
    _write(tmp_path, "a.md", "# A\n")
    _write(tmp_path, "a.txt", "a\n")
    with pytest.raises(SweepError) as info:
        load_corpus(tmp_path)
    message = str(info.value)
    assert "'a'" in message
    assert "a.md" in message and "a.txt" in message


def test_load_corpus_duplicate_slug_from_spelling(tmp_path: Path) -> None:
    _write(tmp_path, "Refund Policy.md", "# A\n")
    _write(tmp_path, "refund-policy.md", "# B\n")
    with pytest.raises(SweepError, match="refund-policy"):
        load_corpus(tmp_path)


# --------------------------------------------------------------------------- fingerprint


def test_corpus_fingerprint_stable_and_sensitive() -> None:
    a = parse_document("a.md", "# A\nalpha\n")
    b = parse_document("b.md", "# B\nbeta\n")
    fp = corpus_fingerprint([a, b])
    assert fp == corpus_fingerprint([b, a])  # order-independent
    assert fp == corpus_fingerprint([parse_document("a.md", "# A\nalpha\n"), b])
    assert len(fp) == 16
    assert fp != corpus_fingerprint([parse_document("a.md", "# A\nalpha!\n"), b])
    assert fp != corpus_fingerprint([a])
    assert fp != corpus_fingerprint([parse_document("c.md", "# A\nalpha\n"), b])
