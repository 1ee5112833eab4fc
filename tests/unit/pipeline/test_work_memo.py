"""`pipeline.memo.keep_work` / `recall_work`: a job's work is found again only under its key
and for equal chunks, and what is kept stays within `WORK_KEPT` jobs and `WORK_ROWS`
questions, the oldest let go first."""

from __future__ import annotations

import pytest

from sweep.chunking.chunkers import Chunk
from sweep.pipeline import memo


def _chunks(text: str) -> list[Chunk]:
    return [Chunk(chunk_id="d#0", doc_id="d", ordinal=0, start=0, end=len(text), text=text,
                  embed_text=text, n_tokens=1)]


@pytest.fixture(autouse=True)
def _fresh() -> None:
    memo.clear_memo()
    yield
    memo.clear_memo()


def test_found_under_its_key_for_equal_chunks_only() -> None:
    memo.keep_work("k", _chunks("a"), "work a", 10)
    memo.keep_work("k", _chunks("b"), "work b", 10)  # same settings, other chunks
    assert memo.recall_work("k", _chunks("a")) == "work a"  # equal, not the same objects
    assert memo.recall_work("k", _chunks("b")) == "work b"
    assert memo.recall_work("other", _chunks("a")) is None
    assert memo.recall_work("k", _chunks("c")) is None


def test_the_oldest_go_first_beyond_the_jobs_or_the_questions_kept() -> None:
    for i in range(memo.WORK_KEPT + 1):
        memo.keep_work("k", _chunks(str(i)), i, 1)
    assert memo.recall_work("k", _chunks("0")) is None
    assert [memo.recall_work("k", _chunks(str(i))) for i in range(1, memo.WORK_KEPT + 1)] \
        == list(range(1, memo.WORK_KEPT + 1))
    memo.keep_work("k", _chunks("big"), "big", memo.WORK_ROWS)
    # the questions in all now exceed the budget: every older entry went, the newest stays
    assert memo.recall_work("k", _chunks("big")) == "big"
    assert all(memo.recall_work("k", _chunks(str(i))) is None
               for i in range(memo.WORK_KEPT + 1))
    memo.keep_work("k", _chunks("huge"), "huge", memo.WORK_ROWS + 1)  # alone over budget
    assert memo.recall_work("k", _chunks("huge")) is None


def test_a_text_is_found_for_alike_inputs_of_its_kind_within_the_bounds() -> None:
    """`keep_text` / `recall_text`: a rendered file is found again for inputs `alike` to
    those it was made from (a copy), of its own kind, and kept within the same bounds."""
    memo.keep_text("csv", (["a"], [("q1", 1.0)]), "text 1", 10)
    assert memo.recall_text("csv", (["a"], [("q1", 1.0)])) == "text 1"
    assert memo.recall_text("csv", (["a"], [("q1", 1)])) is None  # equal, written otherwise
    assert memo.recall_text("html", (["a"], [("q1", 1.0)])) is None
    for i in range(memo.WORK_KEPT):
        memo.keep_text("csv", i, f"text {i}", 1)
        memo.keep_text("html", i, f"page {i}", 1)  # another kind: bounded on its own
    assert memo.recall_text("csv", (["a"], [("q1", 1.0)])) is None  # the oldest, let go
    assert [memo.recall_text("csv", i) for i in range(memo.WORK_KEPT)] == \
        [f"text {i}" for i in range(memo.WORK_KEPT)]
    memo.keep_text("csv", "huge", "huge", memo.WORK_ROWS + 1)  # alone over budget
    assert memo.recall_text("csv", "huge") is None
    assert memo.recall_text("html", 0) == "page 0"
