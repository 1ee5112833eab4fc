"""A symlink to a file outside the corpus folder is skipped with a warning everywhere (the
labelling page already hid it; runs indexed and scored it) (issue 14, item 7)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from sweep.data.corpus import load_corpus


def test_symlink_outside_is_skipped_with_a_warning(tmp_path: Path,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    corpus = tmp_path / "corpus"
    (corpus / "sub").mkdir(parents=True)
    (corpus / "a.md").write_text("# A\n\nInside text.\n", encoding="utf-8")
    outside = tmp_path / "private.md"
    outside.write_text("# Private\n\nNot part of the corpus.\n", encoding="utf-8")
    (corpus / "b.md").symlink_to(outside)
    (corpus / "sub" / "alias.md").symlink_to(corpus / "a.md")  # inside: fine
    with caplog.at_level(logging.WARNING):
        docs = load_corpus(corpus)
    assert sorted(d.source for d in docs) == ["a.md", "sub/alias.md"]
    assert any("b.md" in r.getMessage() and "outside" in r.getMessage() for r in caplog.records)
