"""``misses.html``: why each question was missed, as one self-contained page.

No network, no scripts, no external resources: inline CSS and ``<details>`` only, so the page
opens from disk and in MLflow's artifact view alike. Every text on it comes from the golden set
or the corpus (user input) and is escaped.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape
from itertools import pairwise
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sweep.common.errors import SweepError
from sweep.common.files import atomic_write, read_text_regular

# The seed's decision table: what to try for each cause.
ADVICE = {
    "lost_in_parsing": "another parser (corpus.*_parser), or a quote copied from this parser's text",
    "orphan": "fix the label: its evidence is not in this configuration's chunks",
    "truncated": "smaller chunks, or a model with a longer max_seq_length",
    "evidence_split": "a boundary that keeps passages whole (sentence, paragraph, heading), "
                      "overlap, or larger chunks",
    "lost_by_index": "a larger ef_search / nprobe, or exact search at this corpus size",
    "ranked_below_k": "a reranker over a deeper pool",
    "never_retrieved": "hybrid search (BM25 + dense) or a better embedding model",
}

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:1.5em auto;max-width:70em;color:#222}
h1{font-size:1.3em} table{border-collapse:collapse;margin:.5em 0}
td,th{border:1px solid #ccc;padding:2px 8px;text-align:left;vertical-align:top}
details{border:1px solid #ddd;border-radius:4px;margin:.4em 0;padding:.3em .6em}
summary{cursor:pointer} .cause{font-weight:600}
.passage{white-space:pre-wrap;font-family:ui-monospace,monospace;font-size:12.5px;
 background:#fafafa;border:1px solid #eee;padding:.5em;margin:.4em 0}
.c0{background:#e3eefc}.c1{background:#fdf0d8}.rel{outline:1px solid #6a6}
.lab{font-size:10.5px;color:#555;background:#fff;border:1px solid #bbb;border-radius:3px;
 padding:0 3px;margin-right:2px}
mark{background:#ffe066;font-weight:600}
.cut{color:#fff;background:#c00;font-size:10.5px;border-radius:3px;padding:0 3px}
.unseen{color:#777;text-decoration:line-through #c00}
.yes{color:#070}.no{color:#a00} .page{margin:.4em 0 0;color:#555;font-size:12px}
"""


def _pieces(p: Mapping[str, Any]) -> list[tuple[int, int]]:
    """The passage window cut at every chunk boundary, evidence edge and truncation point."""
    w0, w1 = p["window"]
    points = {w0, w1, max(w0, min(w1, p["evidence"][0])), max(w0, min(w1, p["evidence"][1]))}
    for c in p["chunks"]:
        points.update((c["start"], c["end"]))
        if c.get("cut") is not None and w0 < c["cut"] < w1:
            points.add(c["cut"])
    cuts = sorted(points)
    return [(a, b) for a, b in pairwise(cuts) if b > a]


def render_passage(p: Mapping[str, Any]) -> str:
    """The evidence inside its window of document text, chunk boundaries drawn over it."""
    w0 = p["window"][0]
    e0, e1 = p["evidence"]
    started: set[str] = set()
    cut_marks = {c["cut"] for c in p["chunks"] if c.get("cut") is not None}
    out = []
    for a, b in _pieces(p):
        owners = [c for c in p["chunks"] if c["start"] <= a and b <= c["end"]]
        labels = []
        for c in owners:
            if c["chunk_id"] not in started:
                started.add(c["chunk_id"])
                header = f" · header: {c['header']}" if c["header"] else ""
                labels.append(f'<span class="lab" data-chunk="{escape(c["chunk_id"])}">'
                              f'{escape(c["chunk_id"])} · {c["n_tokens"]} tok'
                              f'{escape(header)}</span>')
        if a in cut_marks:
            labels.append('<span class="cut" title="the embedding model stops reading here">'
                          '✂ model stops reading</span>')
        text = escape(p["text"][a - w0:b - w0])
        if e0 <= a and b <= e1:
            text = f"<mark>{text}</mark>"
        shade = ""
        if owners:
            first = owners[0]
            # Neighbouring chunks alternate shades by their order in the window: an id need
            # not end in "#<ordinal>" (a returned unit is "<doc>@<start>-<end>").
            shade = f"c{p['chunks'].index(first) % 2}" + (" rel" if first["relevant"] else "")
        if any(c.get("cut") is not None and a >= c["cut"] for c in owners):
            shade += " unseen"
        ids = " ".join(c["chunk_id"] for c in owners)
        out.append("".join(labels) + f'<span class="{shade}" data-chunks="{escape(ids)}">'
                                     f"{text}</span>")
    # The page of a PDF's evidence goes above the passage, never into it: the passage holds
    # the document's text only.
    where = (f'<p class="page">{escape(str(p["doc_id"]))} · page {p["page"]}</p>'
             if p.get("page") else "")
    return (f'{where}<div class="passage" data-doc="{escape(str(p["doc_id"]))}">'
            f"{''.join(out)}</div>")


def _on_page(hit: Mapping[str, Any]) -> str:
    return f" (p. {hit['page']})" if hit.get("page") else ""


def _hits_table(hits: Sequence[Mapping[str, Any]]) -> str:
    rows = "".join(
        f"<tr><td>{h['rank']}</td><td>{escape(h['chunk_id'])}{_on_page(h)}"
        f"</td><td>{h['score']:.4f}</td>"
        f"<td>{escape(h['found_by'] or '-')}</td><td>{h.get('dense_rank') or '-'}</td>"
        f"<td>{h.get('bm25_rank') or '-'}</td>"
        f"<td class=\"{'yes' if h['relevant'] else 'no'}\">{'yes' if h['relevant'] else 'no'}"
        f"</td><td>{h['n_tokens']}</td><td>{escape(h['heading'])}</td></tr>" for h in hits)
    return ("<table><tr><th>rank</th><th>chunk</th><th>score</th><th>found by</th>"
            "<th>dense rank</th><th>BM25 rank</th>"
            f"<th>relevant</th><th>tokens</th><th>heading</th></tr>{rows}</table>")


def render_question(v: Mapping[str, Any], edit_links: bool = False) -> str:
    ranks = (f"first relevant rank: {v['first_relevant_rank']} · dense: {v['dense_rank']} · "
             f"BM25: {v['bm25_rank']}")
    body = "".join(render_passage(p) for p in v["passages"]) or "<p>no evidence span</p>"
    return (f'<details id="q-{escape(str(v["qid"]))}" data-cause="{escape(v["cause"])}">'
            f'<summary><b>{escape(str(v["qid"]))}</b> · <span class="cause">'
            f'{escape(v["cause"] or "found")}</span> · {escape(v["detail"])}'
            f'{" · in " + escape(v["content_kind"]) if v.get("content_kind") else ""} — '
            f'{escape(str(v["question"]))}</summary>'
            f"<p>{escape(ranks)}</p>{_answer_block(v)}{_edit_link(v) if edit_links else ''}"
            f"{body}"
            f"{_hits_table(v['hits'])}</details>")


# What each answer diagnosis says to do (sweep.generation.run.diagnose).
ANSWER_ADVICE = {
    "ok": "the live answer is right",
    "retrieval_bug": "right with the evidence, wrong without it: fix retrieval (the cause above)",
    "generation_bug": "the evidence was in the live context and the answer is still wrong: "
                      "fewer or better-ordered chunks, or the prompt",
    "oracle_fail": "wrong even with the evidence handed over: the model, the prompt or the label",
    "ungraded": "a side could not be graded (no answer_must_mention and no judge)",
}
ANSWER_KEYS = ("diagnosis", "live_correct", "oracle_correct", "evidence_in_live", "live_answer",
               "oracle_answer")


def add_answers(views: Sequence[dict[str, Any]], rows: Sequence[Mapping[str, Any]]) -> None:
    """Each view of a question the answer half answered gets its ``answer`` (the diagnosis,
    both verdicts and both answers), in place."""
    by_qid = {r.get("qid"): r for r in rows if r.get("diagnosis")}
    for v in views:
        row = by_qid.get(v.get("qid"))
        if row is not None:
            v["answer"] = {k: row.get(k) for k in ANSWER_KEYS}


def _verdict(value: Any) -> str:
    return {True: "right", False: "wrong"}.get(value, "ungraded")


def _answer_block(v: Mapping[str, Any]) -> str:
    a = v.get("answer")
    if not a:
        return ""
    return (f'<p>answer: <span class="cause">{escape(str(a["diagnosis"]))}</span> · live '
            f'{_verdict(a["live_correct"])}: “{escape(str(a["live_answer"] or ""))}” · oracle '
            f'{_verdict(a["oracle_correct"])}: “{escape(str(a["oracle_answer"] or ""))}”</p>')


def _answers_section(views: Sequence[Mapping[str, Any]]) -> str:
    """The diagnosis of every answered question, found or missed, with its counts."""
    answered = [v for v in views if v.get("answer")]
    if not answered:
        return ""
    counts = {d: sum(1 for v in answered if v["answer"]["diagnosis"] == d)
              for d in ANSWER_ADVICE}
    head = "".join(f"<tr><td>{escape(d)}</td><td>{n}</td><td>{escape(ANSWER_ADVICE[d])}"
                   "</td></tr>" for d, n in counts.items())
    rows = "".join(
        f"<tr><td>{escape(str(v['qid']))}</td><td>{escape(str(v['answer']['diagnosis']))}</td>"
        f"<td>{_verdict(v['answer']['live_correct'])}</td>"
        f"<td>{_verdict(v['answer']['oracle_correct'])}</td>"
        f"<td>{escape(v['cause'] or 'found')}</td><td>{escape(str(v['question']))}</td></tr>"
        for v in answered)
    return (f"<h2>Answers ({len(answered)} questions answered live and oracle)</h2>"
            "<table><tr><th>diagnosis</th><th>questions</th><th>what it means</th></tr>"
            f"{head}</table><details><summary>each question</summary><table><tr><th>qid</th>"
            "<th>diagnosis</th><th>live</th><th>oracle</th><th>retrieval</th><th>question</th>"
            f"</tr>{rows}</table></details>")


def _edit_link(v: Mapping[str, Any]) -> str:
    """A link to the item's labelling view, on `sweep label`'s own page (same origin)."""
    return (f'<p><a href="/?edit={escape(quote(str(v["qid"])))}">fix this label in '
            "sweep label</a></p>")


def render_page(views: Sequence[Mapping[str, Any]], title: str,
                counts: Mapping[str, float], *, nonce: str | None = None,
                edit_links: bool = False) -> str:
    """The whole page. ``nonce`` marks its style for a Content-Security-Policy; ``edit_links``
    links each question to its labelling view (when `sweep label` serves the page)."""
    return _page_head(title, nonce) + _page_body(views, counts, edit_links)


def _page_head(title: str, nonce: str | None) -> str:
    """The page up to its heading: all of it that names the configuration."""
    style_attr = f' nonce="{escape(nonce)}"' if nonce else ""
    return ('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            f"<title>{escape(title)}</title>"
            f"<style{style_attr}>{_CSS}</style></head><body>"
            f"<h1>Misses: {escape(title)}</h1>")


def _page_body(views: Sequence[Mapping[str, Any]], counts: Mapping[str, float],
               edit_links: bool) -> str:
    missed = [v for v in views if v["cause"]]
    found = [v for v in views if not v["cause"] and v["status"] == "scored"]
    cause_rows = "".join(
        f"<tr><td>{escape(c)}</td><td>{int(counts.get(f'n_miss_{c}', 0))}</td>"
        f"<td>{escape(a)}</td></tr>" for c, a in ADVICE.items())
    found_rows = "".join(
        f"<tr><td>{escape(str(v['qid']))}</td><td>{v['first_relevant_rank']}</td>"
        f"<td>{escape(str(v['question']))}</td></tr>" for v in found)
    return (
        f"<p>{len(missed)} of {len(views)} questions missed in the top k.</p>"
        "<table><tr><th>cause</th><th>questions</th><th>what to try</th></tr>"
        f"{cause_rows}</table>{_answers_section(views)}"
        f"{_kinds_table(views)}"
        "<h2>Missed questions</h2>" + "".join(render_question(v, edit_links) for v in missed)
        + f"<h2>Found ({len(found)})</h2><details><summary>list</summary><table>"
        "<tr><th>qid</th><th>first relevant rank</th><th>question</th></tr>"
        f"{found_rows}</table></details></body></html>")


def _kinds_table(views: Sequence[Mapping[str, Any]]) -> str:
    """Scored and missed questions per kind of content (eval.by_content=true), or nothing."""
    kinds: dict[str, list[int]] = {}
    for v in views:
        if v.get("content_kind") and v["status"] == "scored":
            n = kinds.setdefault(v["content_kind"], [0, 0])
            n[0] += 1
            n[1] += bool(v["cause"])
    if not kinds:
        return ""
    rows = "".join(f"<tr><td>{escape(k)}</td><td>{n}</td><td>{m}</td></tr>"
                   for k, (n, m) in kinds.items())
    return ("<h2>By the kind of content the evidence sits in</h2><table><tr><th>content</th>"
            f"<th>scored</th><th>missed</th></tr>{rows}</table>")


@dataclass(frozen=True)
class Untitled:
    """``misses.json`` and ``misses.html`` of some views and counts, as UTF-8, without what
    names the configuration (the title): two configurations whose views and counts are alike
    (recursive and heading on a corpus without headings) differ in these files by name only."""

    json_rest: bytes  # the document after its "title" member
    html_body: bytes  # the page after its <h1>


def render_untitled(views: Sequence[Mapping[str, Any]], counts: Mapping[str, float]
                    ) -> Untitled:
    import orjson

    # orjson, as UTF-8 like ensure_ascii=False: the same document as json.dumps (compact),
    # 17x faster. It would write a NaN as null; a view holds no NaN (scores and ranks are
    # finite). Compact JSON of an object is its members' texts joined by commas, so the
    # document is its title's member and these bytes, as one dumps of it all would write.
    rest = (b',"counts":' + orjson.dumps(dict(counts)) + b',"questions":'
            + orjson.dumps(list(views)) + b"}")
    return Untitled(rest, _page_body(views, counts, False).encode("utf-8"))


def write_views(folder: Path, views: Sequence[Mapping[str, Any]], title: str,
                counts: Mapping[str, float], *, untitled: Untitled | None = None
                ) -> list[Path]:
    """``misses.json`` (what `sweep show` reads) and ``misses.html`` in the job folder;
    ``untitled``: what `render_untitled` made of these views and counts."""
    import orjson

    if untitled is None:
        untitled = render_untitled(views, counts)
    json_path = folder / "misses.json"
    html_path = folder / "misses.html"
    atomic_write(json_path, b'{"title":' + orjson.dumps(title) + untitled.json_rest)
    atomic_write(html_path, _page_head(title, None).encode("utf-8") + untitled.html_body)
    return [json_path, html_path]


def load_views(ref: str, uri: str | None) -> dict[str, Any]:
    """``misses.json`` of a job folder (or the file itself), else of the MLflow run ``ref``."""
    path = Path(ref)
    run: dict[str, str] | None = None
    if path.is_dir():
        path = path / "misses.json"
    if not path.is_file():
        if Path(ref).exists() or os.sep in ref:
            raise SweepError(f"{ref}: no misses.json here (a job folder of a sweep that ran "
                             "with this version of chunk-sweep has one)")
        from sweep.outputs import tracking

        uri = uri or os.environ.get("MLFLOW_TRACKING_URI") or \
            f"sqlite:///{Path.cwd().resolve() / 'mlflow.db'}"
        missing = tracking.store_missing(uri)
        if missing is not None:  # never opened: MLflow would create an empty store here
            raise SweepError(f"run {ref}: no MLflow store at {missing} (neither a job folder "
                             "here)", hint="pass a job folder, or --tracking-uri of the store "
                                           "that holds the run")
        run = tracking.run_summary(uri, ref)
        if run is None:
            raise SweepError(f"run {ref}: no such run in {uri} (neither a job folder here)",
                             hint="pass a job folder, or a run id of this store "
                                  "(--tracking-uri)")
        found = tracking.download_artifact(uri, ref, "misses.json",
                                           Path(tempfile.mkdtemp(prefix="sweep-show-")))
        if found is None:
            folder = _local_folder(run["artifact_uri"])
            if folder is not None and not folder.is_dir():
                raise SweepError(f"run {ref} (experiment {run['experiment']}): its artifact "
                                 f"folder {folder} is gone (deleted or moved)",
                                 hint="show its job folder instead, if it is kept")
            raise SweepError(f"run {ref} (experiment {run['experiment']}): no misses.json "
                             f"artifact in {uri}",
                             hint="a configuration's run has one; a sweep's parent run has not")
        path = found
    try:
        data = json.loads(read_text_regular(path))
    except (OSError, json.JSONDecodeError) as exc:
        raise SweepError(f"{path}: cannot read ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("questions"), list):
        raise SweepError(f"{path}: not a misses.json (no 'questions' list)")
    if run is not None:  # say which experiment the run is of: a run id is store-wide
        data["title"] = f"{data.get('title', ref)} (experiment {run['experiment']})"
    return data


def _local_folder(artifact_uri: str) -> Path | None:
    """The folder of a local artifact store (a path or a file: URI), else None."""
    from urllib.parse import unquote, urlparse

    parsed = urlparse(artifact_uri)
    if parsed.scheme in ("", "file"):
        return Path(unquote(parsed.path))
    return None
