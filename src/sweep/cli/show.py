"""``sweep show``: why questions were missed, in the terminal.

Reads ``misses.json`` from a job folder, or from an MLflow run's artifacts by run id.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from typing import Any

from sweep.common.errors import SweepError, one_line
from sweep.outputs.misses_html import ADVICE, load_views


def _passage_text(p: Mapping[str, Any]) -> Any:
    from rich.text import Text

    w0 = p["window"][0]
    text = Text(p["text"])
    for n, c in enumerate(p["chunks"]):
        style = "on grey23" if n % 2 else "on grey15"
        text.stylize(style, c["start"] - w0, c["end"] - w0)
    e0, e1 = p["evidence"]
    text.stylize("bold black on yellow", max(0, e0 - w0), e1 - w0)
    for c in p["chunks"]:
        cut = c.get("cut")
        if cut is not None and w0 <= cut < p["window"][1]:
            text.stylize("underline red", cut - w0, p["window"][1] - w0)
    return text


def _t(value: Any) -> str:
    """A corpus or golden-set string as rich shows it: its ``[`` taken literally, so a
    question holding ``[/b]`` or ``[link=javascript:...]`` is printed, not interpreted (rich
    raised MarkupError on the first), and control characters escaped (no forged line, no
    terminal escape)."""
    from rich.markup import escape

    return escape(one_line(str(value)))


def show_question(console: Any, v: Mapping[str, Any], title: str) -> None:
    from rich.panel import Panel
    from rich.table import Table

    cause = v["cause"] or "found"
    console.print(Panel(f"[b]{_t(v['qid'])}[/b] {_t(v['question'])}\n[b]{_t(cause)}[/b] "
                        f"{_t(v['detail'])}  (first relevant rank {v['first_relevant_rank']}, "
                        f"dense {v['dense_rank']}, BM25 {v['bm25_rank']})", title=_t(title)))
    for p in v["passages"]:
        bounds = ", ".join(f"{_t(c['chunk_id'])} ({c['n_tokens']} tok)" for c in p["chunks"])
        console.print(f"[dim]{_t(p['doc_id'])} · chunks: {bounds}[/dim]")
        console.print(_passage_text(p))
        if any(c.get("cut") is not None for c in p["chunks"]):
            console.print("[red]underlined: past the embedding model's max_seq_length[/red]")
    table = Table("rank", "chunk", "score", "found by", "dense rank", "BM25 rank", "relevant")
    for h in v["hits"]:
        table.add_row(str(h["rank"]), _t(h["chunk_id"]), f"{h['score']:.4f}",
                      h["found_by"] or "-",
                      str(h.get("dense_rank") or "-"), str(h.get("bm25_rank") or "-"),
                      "yes" if h["relevant"] else "no")
    console.print(table)
    if v["cause"] in ADVICE:
        console.print(f"[i]what to try: {ADVICE[v['cause']]}[/i]")


def side_by_side(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[tuple[str, str, str, str]]:
    """``(qid, cause in a, cause in b, question)`` for the questions whose outcome differs."""
    by_qid = {q["qid"]: q for q in b["questions"]}
    out = []
    for q in a["questions"]:
        other = by_qid.get(q["qid"])
        if other is None:
            continue
        ca, cb = q["cause"] or "found", other["cause"] or "found"
        if ca != cb:
            out.append((str(q["qid"]), ca, cb, str(q["question"])))
    return out


def cmd_show(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="sweep show", description="Why questions were missed: evidence, chunk boundaries "
        "and ranks of one configuration (a job folder or an MLflow run id).")
    parser.add_argument("run", help="job folder (holds misses.json) or MLflow run id")
    parser.add_argument("--qid", help="one question, in full")
    parser.add_argument("--vs", metavar="RUN", help="a second configuration: questions whose "
                        "outcome differs, side by side")
    parser.add_argument("--tracking-uri", default=None,
                        help="MLflow store for run ids (default: $MLFLOW_TRACKING_URI, then "
                             "./mlflow.db)")
    args = parser.parse_args(list(argv))
    from rich.console import Console
    from rich.table import Table

    console = Console()
    a = load_views(args.run, args.tracking_uri)
    b = load_views(args.vs, args.tracking_uri) if args.vs else None
    if args.qid:
        for data in (a, b) if b else (a,):
            match = [q for q in data["questions"] if str(q["qid"]) == args.qid]
            if not match:
                known = sorted(str(q["qid"]) for q in data["questions"])
                shown = ", ".join(known[:5]) + (f" ... ({len(known)} in all)"
                                                 if len(known) > 5 else "")
                raise SweepError(f"--qid {args.qid}: not a question of {data['title']} "
                                 f"(its questions: {shown or 'none'})")
            show_question(console, match[0], data["title"])
        return 0
    if b is not None:
        rows = side_by_side(a, b)
        table = Table("qid", _t(a["title"]), _t(b["title"]), "question",
                      title=f"{len(rows)} questions change outcome")
        for row in rows:
            table.add_row(*(_t(cell) for cell in row))
        console.print(table)
        return 0
    counts = a.get("counts", {})
    table = Table("cause", "questions", "what to try", title=f"misses: {_t(a['title'])}")
    for cause, advice in ADVICE.items():
        table.add_row(cause, str(int(counts.get(f"n_miss_{cause}", 0))), advice)
    console.print(table)
    missed = [q for q in a["questions"] if q["cause"]]
    listing = Table("qid", "cause", "detail", "question")
    for q in missed:
        listing.add_row(_t(q["qid"]), _t(q["cause"]), _t(q["detail"]), _t(q["question"]))
    console.print(listing)
    console.print("[dim]one question in full: sweep show RUN --qid QID[/dim]")
    return 0
