"""MLflow traces into queue rows, on a real SQLite store whose traces the test makes with
MLflow's own tracing API: a traced retrieve-and-answer function, feedback logged on some
traces. Also: an unknown experiment, an experiment without traces, a missing store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import mlflow_tracking_uri
from sweep.common.errors import SweepError
from sweep.outputs import tracking
from sweep.questions.build import build_queue
from sweep.questions.traces import row_of_trace

QUESTIONS = ["How long do I have to return an item?", "how long do i have to return an item",
             "Do you ship to Canada?", "What does the warranty cover?"]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, list[str]]]:
    """One store for the module: creating and migrating a SQLite store is most of the cost."""
    patch = pytest.MonkeyPatch()
    # written at once, so log_feedback finds the trace in the store
    patch.setenv("MLFLOW_ENABLE_ASYNC_TRACE_LOGGING", "false")
    import mlflow
    from mlflow.entities import Document, SpanType

    try:
        uri = f"sqlite:///{tmp_path_factory.mktemp('traces') / 'mlflow.db'}"
        with mlflow_tracking_uri(uri):
            mlflow.set_experiment("assistant")

            @mlflow.trace(span_type=SpanType.RETRIEVER)
            def retrieve(query: str) -> list[Document]:
                doc = "returns" if "return" in query else "shipping"
                return [Document(page_content=f"All about {doc}. Call +44 20 7946 0958.",
                                 metadata={"doc_uri": f"{doc}.md"}, id=f"{doc}#0")]

            @mlflow.trace
            def answer(question: str) -> str:
                docs = retrieve(question)
                return docs[0].page_content

            ids = []
            for q in QUESTIONS:
                answer(q)
                ids.append(mlflow.get_last_active_trace_id())
            mlflow.log_feedback(trace_id=ids[0], name="thumbs", value=False)
            mlflow.log_feedback(trace_id=ids[2], name="rating", value=0.0)
            mlflow.log_feedback(trace_id=ids[3], name="thumbs", value=True)
            mlflow.set_experiment("empty")
            yield uri, ids
    finally:
        patch.undo()


def test_traces_become_rows_with_question_documents_and_feedback(store: tuple) -> None:
    uri, ids = store
    rows = [row_of_trace(t) for t in tracking.iter_traces(uri, "assistant")]
    assert [r.question for r in rows] == QUESTIONS  # oldest first
    assert [r.trace_id for r in rows] == ids
    assert all(r.source == "trace" and r.source_ref == r.trace_id for r in rows)
    assert rows[0].retrieved == [{"doc_id": "returns.md",
                                  "text": "All about returns. Call +44 20 7946 0958."}]
    assert [r.feedback for r in rows] == [[False], [], [0.0], [True]]
    assert all(r.time and r.time.endswith("Z") for r in rows)

    built = build_queue(rows, [], {})
    q = built.queue
    # the two return questions merge; both it and "ship" have negative feedback; the merged
    # one was asked twice
    assert [c.question for c in q] == [QUESTIONS[0], QUESTIONS[2], QUESTIONS[3]]
    assert (q[0].count, q[0].negative_count, q[0].trace_id) == (2, 1, ids[0])
    assert (q[1].negative_count, q[1].feedback) == (1, "negative")  # 0.0 on a 0-1 scale
    assert q[2].feedback == "positive"
    assert q[0].retrieved[0]["text"] == "All about returns. Call [phone]."
    assert built.report["redactions"]["phone"] == 3  # one per trace's document kept


def test_limit_stops_early(store: tuple) -> None:
    uri, ids = store
    assert [t.info.trace_id for t in tracking.iter_traces(uri, "assistant", limit=2)] == ids[:2]


def test_bad_stores_are_one_line(store: tuple, tmp_path: Path) -> None:
    uri, _ = store
    with pytest.raises(SweepError, match="has no traces"):
        list(tracking.iter_traces(uri, "empty"))
    with pytest.raises(SweepError, match=r"no experiment named 'nope'.*available: .*assistant"):
        list(tracking.iter_traces(uri, "nope"))
    with pytest.raises(SweepError, match="no MLflow store at"):
        list(tracking.iter_traces(f"sqlite:///{tmp_path / 'absent.db'}", "assistant"))
