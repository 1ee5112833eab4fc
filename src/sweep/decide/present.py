"""Presenting a sweep's table: printed, as JSON, as plots (what `sweep compare` shows)."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sweep.decide import multiple
from sweep.decide.runs import SweepTable
from sweep.decide.stats import N_RESAMPLES, SEED, correction_line
from sweep.evaluation.sources import PREFIX, parse_metric
from sweep.outputs.report import (
    NOT_APPLICABLE,
    format_value,
    plot_metric_vs_size,
    pyplot,
    save_figure,
)
from sweep.outputs.report import rank_number as _num


def table_frame(t: SweepTable) -> Any:
    import pandas as pd

    cols = ["rank", *t.swept, *t.shown, "verdict", "run_id", "name"]
    return pd.DataFrame([{c: r.get(c) for c in cols} for r in t.rows], columns=cols)


def print_table(t: SweepTable) -> None:
    import pandas as pd

    frame = table_frame(t)
    for c in t.shown:
        frame[c] = frame[c].map(format_value)
    print(f"{_sweeps_named(t)}: {len(t.rows)} configurations"
          + (f", {t.n_failed} failed (not shown)" if t.n_failed else "")
          + f"; best {t.metric} first")
    print(correction_line(t.correction, t.n_tests, t.metric))
    with pd.option_context("display.max_columns", None, "display.width", 10_000,
                           "display.max_colwidth", 80):
        print(frame.to_string(index=False))
    if any(r.get(p) == NOT_APPLICABLE for r in t.rows for p in t.swept):
        print(f"{NOT_APPLICABLE}: the configuration does not read that setting (e.g. "
              "index.ef_search with index.kind=exact); runs differing only there are one "
              "configuration, shown once")
    shares = source_shares(t.rows[0])
    if shares:
        print("by_source/<source>/" + t.metric + ": the questions of one source only ("
              + ", ".join(f"{s} n={n} ({share:.0%})" for s, n, share in shares) + ")")
    n_tied = sum(1 for r in t.rows[1:] if r.get("tied"))
    pairs = t.n_tests * (t.n_tests - 1) // 2
    corrected = ("" if t.correction == "none"
                 else f", {multiple.NAMES[t.correction]}-corrected over {pairs} pairs")
    print(f"{n_tied} of {len(t.rows) - 1} other configurations are not distinguishable from the "
          f"best on {t.metric} (paired bootstrap over questions scored in both, "
          f"{N_RESAMPLES:,} resamples, 95%, seed {SEED}{corrected})")


def _sweeps_named(t: SweepTable) -> str:
    """``sweep ID (experiment E, 2026-12-05 00:40 UTC)``, or ``sweeps ID (...), ID (...)``."""
    def one(parent: Mapping[str, Any]) -> str:
        started = datetime.fromtimestamp((parent.get("start_time") or 0) / 1000, UTC)
        return (f"{parent['run_id']} (experiment {parent['experiment']}, "
                f"{started:%Y-%m-%d %H:%M} UTC)")

    if t.joined:
        return "sweeps " + ", ".join(one(p) for p in t.joined)
    return f"sweep {one(t.parent)}"


def source_shares(row: Mapping[str, Any]) -> list[tuple[str, int, float]]:
    """(source, n, share) from a run's ``by_source/<source>/n`` and ``.../share`` metrics."""
    out = []
    for name, value in row.items():
        ps = parse_metric(name) if isinstance(name, str) else None
        if ps and ps[1] == "n" and value is not None:
            share = row.get(f"{PREFIX}/{ps[0]}/share")
            out.append((ps[0], int(value), float(share) if share is not None else math.nan))
    return out


def table_json(t: SweepTable) -> dict[str, Any]:
    keep = ["rank", "run_id", "name", *t.swept, *t.shown, "tied", "verdict", "n_pairs", "diff", "lo",
            "hi", "p", "p_adj"]
    fields = ("run_id", "experiment", "experiment_id", "start_time", "sweep_dir", "status")
    # several sweeps joined: "sweep" is the first, "sweeps" all of them
    joined = {"sweeps": [{k: p.get(k) for k in fields} for p in t.joined]} if t.joined else {}
    return {"sweep": {k: t.parent.get(k) for k in fields}, **joined,
            "metric": t.metric, "swept": t.swept, "n_failed": t.n_failed,
            "sources": [{"source": s, "n": n, "share": share}
                        for s, n, share in source_shares(t.rows[0])] if t.rows else [],
            "correction": t.correction, "n_tests": t.n_tests,
            "rows": [{k: r.get(k) for k in (*keep, "sweep") if k in keep or t.joined}
                     for r in t.rows]}


def plot_table(t: SweepTable, folder: Path) -> list[Path]:
    """``compare_<metric>_vs_size.png`` (one line per combination of the other swept params)
    and ``compare_recall_vs_tokens.png`` (quality against prompt cost)."""
    folder.mkdir(parents=True, exist_ok=True)
    others = [p for p in t.swept if p != "chunk.size"]

    def label(r: dict[str, Any]) -> str:
        return ", ".join(f"{p.split('.')[-1]}={r.get(p)}" for p in others) or "all"

    groups: dict[str, list[tuple[float, float]]] = {}
    for r in t.rows:
        size, value = _num(r.get("params", {}).get("chunk.size")), _num(r.get(t.metric))
        if math.isfinite(size) and math.isfinite(value):
            groups.setdefault(label(r), []).append((size, value))
    out = [plot_metric_vs_size(groups, t.metric, folder / f"compare_{t.metric}_vs_size.png")]

    recall = next((m for m in t.shown if m.startswith("recall_at_")), t.metric)
    fig, ax = pyplot().subplots(figsize=(8, 5))
    for name in sorted({label(r) for r in t.rows}):
        pts = [(_num(r.get(t.cost)), _num(r.get(recall))) for r in t.rows if label(r) == name]
        pts = [(x, y) for x, y in pts if math.isfinite(x) and math.isfinite(y)]
        if pts:
            xs, ys = zip(*pts, strict=True)
            ax.scatter(xs, ys, label=name, s=30)
    ax.set_xlabel(f"{t.cost} (mean tokens in the prompt)")
    ax.set_ylabel(recall)
    ax.set_title(f"{recall} vs prompt cost")
    if len(groups) > 1:
        ax.legend(fontsize=7, loc="best")
    out.append(save_figure(fig, folder / "compare_recall_vs_tokens.png"))
    return out


def sweep_folder(parent: Mapping[str, Any]) -> Path:
    """Where a sweep's plots go: its folder when it still exists and is writable, else cwd."""
    folder = Path(str(parent.get("sweep_dir") or ""))
    if parent.get("sweep_dir") and folder.is_dir() and os.access(folder, os.W_OK):
        return folder
    return Path.cwd()
