"""Corpus and golden paths that cannot be read, and file names that try to break the output.

Before (issue 30): a FIFO as golden.path blocked the read forever; a symlink loop as
golden.path was "golden file not found"; inside the corpus a FIFO, a symlink loop and a folder
without read permission were passed over without a word (their documents silently missing);
a file name with a line break printed a second line ("error: ..." forged by the name); a
golden item on a file the loader skipped stopped the run with "not in the corpus"."""

from __future__ import annotations

import errno
import logging
import os
from pathlib import Path

import pytest

from sweep.common.errors import SweepError
from sweep.data.corpus import load_corpus
from sweep.data.golden import load_golden
from sweep.evaluation.relevance import CorpusIndex, quote_metrics, resolve_all


def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    (root / "sub").mkdir(parents=True)
    (root / "a.md").write_text("# A\n\nHello world text here.\n")
    (root / "sub" / "b.md").write_text("# B\n\nAnother page.\n")
    return root


def one_line_error(**kwargs) -> str:
    with pytest.raises(SweepError) as info:
        load_corpus(**kwargs)
    assert "\n" not in str(info.value)
    return str(info.value)


# --------------------------------------------------------------------------- corpus


def test_fifo_in_the_corpus_is_refused_without_blocking(tmp_path: Path, caplog) -> None:
    root = corpus(tmp_path)
    os.mkfifo(root / "pipe.md")  # no writer: opening it blocking would wait forever
    message = one_line_error(root=root)
    assert message == f"{root / 'pipe.md'}: a FIFO (named pipe), not a regular file"
    with caplog.at_level(logging.WARNING):
        docs = load_corpus(root, on_error="skip")
    assert [d.doc_id for d in docs] == ["a", "sub/b"]
    assert any("pipe.md: a FIFO" in r.getMessage() for r in caplog.records)


def test_symlink_loop_in_the_corpus_is_named(tmp_path: Path) -> None:
    root = corpus(tmp_path)
    (root / "loop.md").symlink_to(root / "loop.md")
    assert one_line_error(root=root) == (f"{root / 'loop.md'}: a symlink loop (it never "
                                         "reaches a file)")
    assert [d.doc_id for d in load_corpus(root, on_error="skip")] == ["a", "sub/b"]


def test_unreadable_folder_is_named_not_silently_missing(tmp_path: Path, monkeypatch,
                                                         caplog) -> None:
    # Tests run as root, who reads any folder: the walk's listing fails as it does for a
    # user on a folder without read permission (os.walk reports it through onerror).
    root = corpus(tmp_path)
    real_scandir = os.scandir

    def scandir(path):
        if Path(path) == root / "sub":
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    message = one_line_error(root=root)
    assert message.startswith(f"{root / 'sub'}: cannot list this folder (Permission denied)")
    with caplog.at_level(logging.WARNING):
        docs = load_corpus(root, on_error="skip")
    assert [d.doc_id for d in docs] == ["a"]
    assert any("cannot list this folder" in r.getMessage() for r in caplog.records)


def test_unreadable_file_is_named(tmp_path: Path, monkeypatch) -> None:
    root = corpus(tmp_path)
    real_open = os.open

    def deny(path, flags, *args):
        if str(path).endswith("a.md"):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_open(path, flags, *args)

    monkeypatch.setattr(os, "open", deny)
    assert one_line_error(root=root) == f"{root / 'a.md'}: cannot read (Permission denied)"


def test_corpus_path_that_is_a_file_or_a_fifo(tmp_path: Path) -> None:
    root = corpus(tmp_path)
    assert one_line_error(root=root / "a.md").startswith("corpus.path is not a folder")
    os.mkfifo(tmp_path / "fifo")
    assert one_line_error(root=tmp_path / "fifo").startswith("corpus.path is not a folder")


# --------------------------------------------------------------------------- golden path


def golden_error(path: Path) -> str:
    with pytest.raises(SweepError) as info:
        load_golden(path)
    assert "\n" not in str(info.value)
    return str(info.value)


def test_golden_path_fifo_loop_folder(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "golden.jsonl")
    assert golden_error(tmp_path / "golden.jsonl") == (
        f"{tmp_path / 'golden.jsonl'}: a FIFO (named pipe), not a regular file")
    (tmp_path / "loop.jsonl").symlink_to(tmp_path / "loop.jsonl")
    assert golden_error(tmp_path / "loop.jsonl") == (
        f"{tmp_path / 'loop.jsonl'}: a symlink loop (it never reaches a file)")
    assert golden_error(tmp_path).startswith("golden.path is a folder")
    assert golden_error(tmp_path / "nope.jsonl").startswith("golden file not found")


# --------------------------------------------------------------------------- names


NAMES = ["two\nlines.md", 'quote"and\'apostrophe.md', "semi;rm -rf $HOME`x`|&.md",
         "<script>alert(1)<\\script>.md", "evil\nerror: all 3 files OK\n.md",
         "bell\x07and\x1b[31mred.md"]


@pytest.mark.parametrize("name", NAMES)
def test_hostile_file_names_stay_on_one_line(name: str, tmp_path: Path, caplog) -> None:
    root = corpus(tmp_path)
    (root / name).write_bytes(b"")  # empty: a warning naming it
    (root / (name[:-3] + ".pdf")).write_bytes(b"not a pdf at all")  # an error naming it
    message = one_line_error(root=root)
    assert "named .pdf but its content is plain text" in message
    assert "\x1b" not in message and "\x07" not in message
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        docs = load_corpus(root, on_error="skip")
    shown = [r.getMessage() for r in caplog.records]
    assert all("\n" not in m and "\x1b" not in m for m in shown), shown
    assert not any(m.startswith("error:") for m in shown)
    assert len([m for m in shown if m.startswith("skipped ")]) == 2
    assert [d.doc_id for d in docs] == ["a", "sub/b"]


def test_a_readable_hostile_name_keeps_its_id_and_source(tmp_path: Path) -> None:
    root = tmp_path / "c"
    root.mkdir()
    (root / "semi;rm -rf $HOME.md").write_text("# Shell\n\nText.\n")
    (doc,) = load_corpus(root)
    assert doc.source == "semi;rm -rf $HOME.md" and doc.doc_id == "semi-rm-rf-home"


# --------------------------------------------------------------------------- skipped


def test_golden_item_on_a_skipped_document_is_an_orphan_with_the_reason(tmp_path: Path
                                                                         ) -> None:
    root = corpus(tmp_path)
    (root / "broken.pdf").write_bytes(b"%PDF-1.4\ngarbage")
    golden = tmp_path / "golden.jsonl"
    golden.write_text(
        '{"qid": "q1", "question": "a?", "evidence": [{"doc_id": "broken", "quote": "x"}]}\n'
        '{"qid": "q2", "question": "b?", "relevant_doc_ids": ["broken"]}\n'
        '{"qid": "q3", "question": "c?", "evidence": [{"path": "broken.pdf", "start": 0, '
        '"end": 4}]}\n'
        '{"qid": "q4", "question": "d?", "evidence": [{"doc_id": "a", "quote": "Hello"}]}\n'
        '{"qid": "q5", "question": "e?", "relevant_doc_ids": ["nowhere"]}\n')
    skipped: dict[str, str] = {}
    docs = load_corpus(root, on_error="skip", skipped=skipped)
    assert skipped["broken"].startswith("broken.pdf was skipped: truncated or corrupt PDF")
    resolved = resolve_all(load_golden(golden).items, CorpusIndex(docs, skipped), None)
    by = {r.item.qid: r for r in resolved}
    for qid in ("q1", "q2", "q3"):
        assert by[qid].level == "orphan", qid
        assert "broken.pdf was skipped: truncated or corrupt PDF" in by[qid].orphan_reason
        assert {p.severity for p in by[qid].problems} == {"warning"}
    assert by["q4"].level == "span"
    # a document that is really absent is still an error: the label is wrong
    assert [p.severity for p in by["q5"].problems] == ["error"]
    # one quote, missing: counted as missing, never found; the span evidence is no quote
    assert quote_metrics(resolved)["n_quotes_missing"] == 1.0
