"""misses.json, written with orjson (issue 21): the document json.dumps would give, parsed back
value for value, on a real job's views; non-ASCII text as UTF-8."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from sweep.outputs.misses_html import load_views, write_views


def _views() -> list[dict[str, Any]]:
    """The views of the demo's BM25 run (no model), computed in-process."""
    from helpers import job_of
    from sweep.application.job import run_job

    job = job_of(["retrieval=bm25", "eval.latency_sample=0", "cache.enabled=false"])
    return run_job(job, progress=False).views


def _floats(value: Any) -> list[float]:
    if isinstance(value, float):
        return [value]
    if isinstance(value, dict):
        return [f for v in value.values() for f in _floats(v)]
    if isinstance(value, list):
        return [f for v in value for f in _floats(v)]
    return []


def test_misses_json_is_what_json_would_write(tmp_path: Path) -> None:
    views = _views()
    assert len(views) > 10
    # a view holds no NaN or infinity (orjson would write them as null)
    assert all(math.isfinite(f) for f in _floats(views))
    views[0] = {**views[0], "question": "Ünïcode — 質問 \u2028 \"quoted\" \\ back"}
    counts = {"n_missed": 3.0, "n_miss_not_retrieved": 1.0}
    write_views(tmp_path, views, "démo", counts)
    raw = (tmp_path / "misses.json").read_bytes()
    expected = {"title": "démo", "counts": counts, "questions": views}
    assert json.loads(raw.decode("utf-8")) == json.loads(json.dumps(expected, ensure_ascii=False))
    assert "質問".encode() in raw  # UTF-8, not \\u escapes
    assert load_views(str(tmp_path), None)["questions"][0]["question"] == views[0]["question"]


def test_the_files_made_without_their_title_are_the_whole_documents(tmp_path: Path) -> None:
    """write_views joins the title to what `render_untitled` made: the bytes of one orjson
    dump of the document and of the whole page, whatever the title holds."""
    import orjson

    from sweep.outputs.misses_html import render_page, render_untitled

    views = _views()
    counts = {"n_miss_never_retrieved": 2.0, "n_miss_orphan": 0.0, "n_missed": 2}
    untitled = render_untitled(views, counts)
    for i, title in enumerate(["recursive-128-ov0-none-bm25", 'a "quoted" <b>&</b> \\ title',
                               "démo — 質問 \u2028", ""]):
        for given in (None, untitled):
            folder = tmp_path / f"{i}-{given is None}"
            write_views(folder, views, title, counts, untitled=given)
            assert (folder / "misses.json").read_bytes() == orjson.dumps(
                {"title": title, "counts": counts, "questions": views})
            assert (folder / "misses.html").read_bytes() == \
                render_page(views, title, counts).encode("utf-8")
