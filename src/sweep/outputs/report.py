"""Files a job leaves behind, and the comparison of a sweep's jobs.

Written to the Hydra job folder BEFORE MLflow is called, so a tracking failure loses nothing.
"""

from __future__ import annotations

import json
import math
import operator
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sweep.common import yamltext
from sweep.common.csvcells import csv_text, write_csv
from sweep.common.files import atomic_write, read_text_regular
from sweep.common.mapping import flatten
from sweep.common.secret import scrub_tree
from sweep.config.identity import inapplicable_keys
from sweep.evaluation.catalog import lower_is_better
from sweep.evaluation.content import summary_line as content_line
from sweep.evaluation.sources import summary_line

REPORT = "report.json"
PER_QUESTION = "per_question.csv"
CONFIG = "config.yaml"
PER_QUESTION_COLUMNS = [
    "qid", "question", "status", "first_relevant_rank", "dense_first_relevant_rank",
    "bm25_first_relevant_rank", "found_by", "mrr", "recall_at_1", "recall_at_5",
    "evidence_coverage_at_prompt_k", "relevant_ids", "retrieved_ids", "evidence_source",
    "orphan_reason", "diagnosis", "oracle_correct", "live_correct", "grade_method",
    "evidence_in_live", "oracle_answer", "live_answer",
]
# Shown in the comparison table, after the swept parameters, when present.
TABLE_METRICS = [
    # first: with the parser as an axis, "pypdf loses 5% of your evidence" comes before recall
    "evidence_found_fraction",
    "recall_at_5", "mrr", "ndcg_at_5", "evidence_recall_at_5", "evidence_recall_at_budget",
    # One latency statistic everywhere (the ranking's tie-break and `sweep compare` use it):
    # p95, end to end, and without the query embedding (which can be most of it).
    "context_tokens_at_5", "latency_end_to_end_p95_ms", "latency_retrieval_p95_ms",
    "n_chunks", "n_orphans",
    "answer_accuracy_oracle", "answer_accuracy_live", "retrieval_tax",
    "n_requests", "served_cost_usd",
    # Only in sweeps with an approximate index (exact search reports none of them).
    "ann_overlap_at_10", "ann_tax_recall_at_5", "ann_tax_mrr", "index_build_ann_s",
    "index_bytes_ann",
    # Only for a configuration run off torch fp32 whose reference is in the sweep
    # (sweep.outputs.quant; the headline's tax is added when it is another metric).
    "quant_overlap_at_10", "quant_tax_recall_at_5", "quant_tax_mrr",
]


def table_metrics(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """`TABLE_METRICS`, the questions each configuration lost when one did
    (``lost_in_parsing``), and any other quantisation tax the rows hold
    (``quant_tax_ndcg_at_5`` when that is the headline)."""
    extra = sorted({k for r in rows for k in r
                    if k.startswith("quant_tax_") and k not in TABLE_METRICS})
    # Set by sweep.decide.lost when a configuration lost questions another one scored.
    lost = ["lost_in_parsing"] if any("lost_in_parsing" in r for r in rows) else []
    return [*TABLE_METRICS, *lost, *extra]
# What a configuration sent to the endpoints of served models (sweep.embedding.served): it
# depends on what the cache already held, not on the configuration, so it is no result.
SERVED_PREFIXES = ("embedding_", "rerank_")
SERVED_TOTALS = ("n_requests", "served_cost_usd", "embedding_tokens", "embedding_cost_usd",
                 "embedding_texts_sent", "embedding_cache_hits", "rerank_tokens",
                 "rerank_cost_usd")


def result_metrics(metrics: dict[str, Any]) -> dict[str, Any]:
    """The metrics that are results of the configuration, without the measurements of the
    machine (latencies, build times) and of the cache (texts encoded this time), which differ
    from run to run by nature."""
    return {k: v for k, v in metrics.items()
            if not k.startswith(("latency_", "time_", *SERVED_PREFIXES)) and not k.endswith("_s")
            and k not in ("n_texts_encoded", "n_texts_from_cache", "bm25_index_cached",
                          "n_requests",
                          "served_cost_usd")}


def served_totals(reports: Sequence[dict[str, Any]]) -> dict[str, float]:
    """The sweep's spend on served models: each of `SERVED_TOTALS` summed over the jobs that
    report it (empty when no job used a served model). A resumed job adds nothing: it sent
    nothing this time."""
    out: dict[str, float] = {}
    for rep in reports:
        if rep.get("resumed_from_run"):
            continue
        for name in SERVED_TOTALS:
            value = (rep.get("metrics") or {}).get(name)
            if isinstance(value, int | float):
                out[name] = out.get(name, 0.0) + float(value)
    return out


def served_line(totals: dict[str, float]) -> str | None:
    """One line for the end of a sweep: what the served models cost, and what the cache saved."""
    if not totals:
        return None
    line = (f"served models: {totals.get('n_requests', 0):.0f} requests, "
            f"{totals.get('embedding_tokens', 0) + totals.get('rerank_tokens', 0):.0f} tokens, "
            f"${totals.get('served_cost_usd', 0):.4f}")
    if "embedding_cache_hits" in totals:
        line += (f"; embeddings: {totals.get('embedding_texts_sent', 0):.0f} texts sent, "
                 f"{totals['embedding_cache_hits']:.0f} from the cache")
    return line


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    return value


# Public: the audit's JSON (outputs.audit_report) writes NaN as null the same way.
json_safe = _json_safe


def write_report(folder: Path, report: dict[str, Any]) -> Path:
    path = folder / REPORT
    # a URL's password (userinfo or query string) never reaches a file: sweep.common.secret
    atomic_write(path, json.dumps(scrub_tree(_json_safe(report)), indent=2, sort_keys=False)
                 + "\n")
    return path


def write_config(folder: Path, plain_config: dict[str, Any]) -> Path:
    path = folder / CONFIG
    atomic_write(path, yamltext.safe_dump(scrub_tree(plain_config), sort_keys=False))
    return path


def per_question_table(rows: Sequence[dict[str, Any]]
                       ) -> tuple[list[str], list[tuple[Any, ...]]]:
    """The columns of per_question.csv and each row's cells, in file order: everything its
    text is made from. The key columns first, then every metric computed for a question."""
    extra = sorted(set().union(*rows) - set(PER_QUESTION_COLUMNS))  # every row's keys, in C
    columns = PER_QUESTION_COLUMNS + extra
    # Value tuples, not csv.DictWriter: no dict built per row and read back (a third of the
    # file's cost on 1,380 rows of 80 columns). A row lacking a column gets None (an empty
    # cell) from `blank`; one C-level merge and itemgetter per row instead of a get per cell.
    blank = dict.fromkeys(columns)
    cells = operator.itemgetter(*columns)
    return columns, [cells({**blank, **row}) for row in rows]


def write_per_question(folder: Path, rows: Sequence[dict[str, Any]], *,
                       text: str | None = None) -> Path:
    """One row per question (`per_question_table`), text cells neutralised
    (common.csvcells); ``text``: the file's text, already rendered from these rows."""
    if text is None:
        text = csv_text(*per_question_table(rows))
    path = folder / PER_QUESTION
    atomic_write(path, text)
    return path


def read_reports(sweep_dir: Path) -> list[tuple[Path, dict[str, Any]]]:
    """Every job report under a sweep folder, in job order."""
    found = []
    for path in Path(sweep_dir).glob(f"*/{REPORT}"):
        try:
            found.append((path.parent, json.loads(read_text_regular(path))))
        except (OSError, json.JSONDecodeError):
            continue

    def order(item: tuple[Path, dict[str, Any]]) -> tuple[int, str]:
        name = item[0].name
        return (int(name) if name.isdigit() else 1 << 30, name)

    return sorted(found, key=order)


def differing_keys(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Keys whose value differs between the flat ``rows``: a sweep's axes.

    Rows that lack a key do not count for it: a configuration finished before the key existed
    (a resumed sweep, a newer chunk-sweep) would otherwise make every new key an axis."""
    keys = sorted({k for r in rows for k in r})
    return [k for k in keys
            if len({json.dumps(r[k], sort_keys=True) for r in rows if k in r}) > 1]


def rank_number(value: Any) -> float:
    """A value to sort on: missing, non-numeric and non-finite values last (infinity)."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        return math.inf
    return v if math.isfinite(v) else math.inf


def rank_key(metric: str, value: Any, cost: Any, latency: Any, tiebreak: str
             ) -> tuple[float, float, float, str]:
    """The one order of configurations, best first: ``metric`` (in its direction), then
    fewer context tokens, then lower latency, then ``tiebreak`` (the config hash). The
    end-of-sweep table and `sweep compare` both sort by it, so they agree on ties."""
    v = rank_number(value)
    primary = (v if lower_is_better(metric) else -v) if math.isfinite(v) else math.inf
    return (primary, rank_number(cost), rank_number(latency), tiebreak)


def varying_params(reports: Sequence[dict[str, Any]]) -> list[str]:
    """Config keys whose value differs between jobs: the sweep's axes."""
    return differing_keys([flatten(r.get("config", {})) for r in reports])


_MISS_SHORT = {"evidence_split": "split", "truncated": "trunc", "ranked_below_k": "below_k",
               "never_retrieved": "never", "orphan": "orphan", "lost_in_parsing": "parsing",
               "lost_by_index": "index"}


def miss_summary(metrics: Mapping[str, Any]) -> str | None:
    """``split 9 · trunc 7``: the miss causes of a configuration that occur, most first."""
    counts = [(int(metrics.get(f"n_miss_{c}") or 0), short) for c, short in _MISS_SHORT.items()
              if f"n_miss_{c}" in metrics]
    if not counts:
        return None
    shown = sorted((c for c in counts if c[0]), key=lambda c: -c[0])
    return " · ".join(f"{short} {n}" for n, short in shown) or "none"


# Groups whose options are `# @package _global_` bundles of overrides (an experiment file, and
# each of `sweep rerun`'s per-configuration files): what they set is in the keys that differ, so
# the option's name is no axis of its own (a rerun of 3 configurations had an `experiment`
# column and axis, "rerun/r01-heading-256-...", beside the chunk.* columns it spelled out).
GLOBAL_GROUPS = frozenset({"experiment"})


def swept_groups(reports: Sequence[dict[str, Any]], keys: Sequence[str]
                 ) -> tuple[list[str], list[str]]:
    """The config groups a sweep swept (``embedding=minilm,served_minilm``: the jobs' recorded
    ``choices`` differ), and ``keys`` without those that only follow a group's option: the
    table shows one ``embedding`` column, not one per key the two options set differently
    (family, name, base_url, ...). A key that also differs within one option (swept on its
    own) stays. Reports without choices (older ones) leave every key as it was."""
    if not reports or any(not isinstance(r.get("choices"), dict) for r in reports):
        return [], list(keys)
    common = set.intersection(*(set(r["choices"]) for r in reports)) - GLOBAL_GROUPS
    groups = sorted(g for g in common if len({r["choices"][g] for r in reports}) > 1)
    flats = [flatten(r.get("config", {})) for r in reports]
    kept = []
    for key in keys:
        group = next((g for g in groups if key.startswith(g + ".")), None)
        if group is not None:
            by_option: dict[str, set[str]] = {}
            for rep, flat in zip(reports, flats, strict=True):
                if key in flat:
                    by_option.setdefault(rep["choices"][group], set()).add(
                        json.dumps(flat[key], sort_keys=True, default=str))
            if all(len(values) == 1 for values in by_option.values()):
                continue  # set by the option: the group's column says it
        kept.append(key)
    return groups, kept


# A swept setting that the configuration does not read (`config.identity.inapplicable_keys`).
NOT_APPLICABLE = "n/a"


def comparison_rows(reports: Sequence[dict[str, Any]], folders: Sequence[Path] | None = None
                    ) -> tuple[list[str], list[dict[str, Any]]]:
    """Rows for the comparison table, best headline first (failed jobs last); with
    ``folders`` (each report's job folder), each row's ``folder``."""
    considered = [r for r in reports if r.get("status") == "FINISHED"] or reports
    keys = varying_params(considered)
    groups, keys = swept_groups(considered, keys)
    axes_all = sorted([*keys, *groups])
    axes = axes_all
    rows = []
    seen: dict[str, dict[str, Any]] = {}
    for n, rep in enumerate(reports):
        # Jobs with one config_hash are one configuration (`index=exact index.ef_search=8,64`:
        # exact search reads no ef_search); the second is usually resumed from the first. One
        # row, with the settings that do not apply shown as n/a rather than one job's value.
        chash = rep.get("config_hash")
        if chash and rep.get("status") == "FINISHED" and chash in seen:
            seen[chash]["n_jobs"] += 1
            continue
        flat = flatten(rep.get("config", {}))
        unused = inapplicable_keys(flat)
        row: dict[str, Any] = {a: NOT_APPLICABLE if a in unused else flat.get(a) for a in axes}
        for group in groups:
            row[group] = (rep.get("choices") or {}).get(group)
        row["n_jobs"] = 1
        if chash and rep.get("status") == "FINISHED":
            seen[chash] = row
        row["status"] = rep.get("status", "?")
        headline = rep.get("headline") or {}
        row["headline_metric"] = headline.get("metric")
        row["headline"] = headline.get("value")
        metrics = rep.get("metrics") or {}
        for name in TABLE_METRICS:
            row[name] = metrics.get(name)
        row.update({k: v for k, v in metrics.items() if k.startswith("quant_tax_")})
        row["truncated_fraction"] = metrics.get("truncated_fraction")
        row["misses"] = miss_summary(rep.get("metrics") or {})
        row["error"] = rep.get("error", "")
        row["found_only_by"] = rep.get("found_only_by") or {}
        metrics = rep.get("metrics") or {}
        prompt_k = (rep.get("config") or {}).get("eval", {}).get("prompt_k", 5)
        row["_cost"] = metrics.get(f"context_tokens_at_{prompt_k}")
        row["_latency"] = metrics.get("latency_end_to_end_p95_ms")
        row["_hash"] = str(chash or "")
        row["sources"] = rep.get("sources") or {}
        row["by_content"] = rep.get("by_content") or {}
        if folders is not None:
            row["folder"] = str(folders[n])
        rows.append(row)

    def key(row: dict[str, Any]) -> tuple[int, tuple[float, float, float, str]]:
        value = row["headline"]
        ok = row["status"] == "FINISHED" and isinstance(value, int | float)
        return (0 if ok else 1, rank_key(row["headline_metric"] or "", value if ok else None,
                                         row["_cost"], row["_latency"], row["_hash"]))

    rows.sort(key=key)
    for row in rows:
        del row["_cost"], row["_latency"], row["_hash"]
    # A key is swept when configurations that read it differ on it: a job reused from another
    # sweep brings its inapplicable settings (exact search and its index.ef_search).
    axes = [a for a in axes
            if len({json.dumps(r[a], sort_keys=True, default=str) for r in rows
                    if r.get(a) != NOT_APPLICABLE and r["status"] == "FINISHED"}
                   or {json.dumps(r.get(a), default=str) for r in rows}) > 1]
    for row in rows:
        for a in set(row) & (set(axes_all) - set(axes)):
            del row[a]
    return axes, rows


def format_value(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if not math.isfinite(value):
            return "-"
        if value and abs(value) < 0.0005:  # e.g. $0.00033 of a served model: not "0.000"
            return f"{value:.2g}"
        return f"{value:.0f}" if abs(value) >= 100 else f"{value:.3f}"
    return str(value)


# The column that marks a configuration whose model saw cut chunks (`cut_cell`); in a table only
# when a row has one.
CUT = "model saw"


def cut_cell(row: Mapping[str, Any]) -> str:
    """``cut 91%``: the share of the row's chunks the embedding model read only the start of
    (longer than its window, embedding.long_text=truncate); ``whole`` when it read them all."""
    value = row.get("truncated_fraction")
    if not isinstance(value, int | float) or not value > 0:
        return "whole"
    return f"cut {100 * value:.0f}%" if value >= 0.005 else "cut <1%"


def _cut(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    return [CUT] if any(cut_cell(r) != "whole" for r in rows) else []


def cut_line(row: Mapping[str, Any]) -> str | None:
    """What the best line adds when the best configuration's model saw cut chunks."""
    if cut_cell(row) == "whole":
        return None
    return (f"  the model saw cut chunks: it read only the first max_seq_length tokens of "
            f"{cut_cell(row).removeprefix('cut ')} of this configuration's chunks, and returns "
            "them whole (embedding.long_text=window_mean, smaller chunks or a model with a "
            "longer window read them whole)")


def _verdict(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The verdict column, when the sweep's statistics gave one (sweep.decide.decision)."""
    return ["verdict"] if any(r.get("verdict") for r in rows) else []


def write_comparison(sweep_dir: Path, axes: Sequence[str], rows: Sequence[dict[str, Any]]
                     ) -> list[Path]:
    """``comparison.csv`` and ``comparison.md`` in the sweep folder (also logged to the parent)."""
    columns = [*axes, "status", "headline_metric", "headline",
               *(["truncated_fraction"] if _cut(rows) else []), *_verdict(rows),
               *table_metrics(rows), "misses", "error"]
    csv_path = write_csv(Path(sweep_dir) / "comparison.csv", columns,
                         ([row.get(k) for k in columns] for row in rows))
    md_path = Path(sweep_dir) / "comparison.md"
    atomic_write(md_path, comparison_markdown(axes, rows))
    return [csv_path, md_path]


def comparison_markdown(axes: Sequence[str], rows: Sequence[dict[str, Any]],
                        max_chars: int | None = None) -> str:
    """The comparison as a markdown table, best first; with ``max_chars``, whole rows up to
    that length and a line saying how many were left out (an MLflow tag holds 8000)."""
    shown = [*axes, "headline", *_cut(rows), *_verdict(rows), *table_metrics(rows), "misses"]
    lines = ["| rank | " + " | ".join(shown) + " |", "|" + "---|" * (len(shown) + 1)]
    for i, row in enumerate(rows, start=1):
        cells = [cut_cell(row) if c == CUT else format_value(row.get(c)) for c in shown]
        lines.append(f"| {i} | " + " | ".join(cells) + " |")
    if max_chars is not None:
        kept = 2
        while kept < len(lines) and sum(len(x) + 1 for x in lines[: kept + 1]) + 80 <= max_chars:
            kept += 1
        if kept < len(lines):
            lines = [*lines[:kept], "", f"... {len(lines) - kept} more rows in comparison.md"]
    return "\n".join(lines) + "\n"


LATENCY = "latency_end_to_end_p95_ms"
RETRIEVAL_LATENCY = "latency_retrieval_p95_ms"  # end to end less the query embedding
# The printed table's chosen columns after the headline, when the rows have them (the rest
# are in comparison.csv / .md and on the parent run).
NARROW_METRICS = ("lost_in_parsing", "evidence_found_fraction", "recall_at_5", "mrr",
                  "context_tokens_at_5", "answer_accuracy_oracle", "answer_accuracy_live",
                  "served_cost_usd", LATENCY, RETRIEVAL_LATENCY)


def embedding_dominates(rows: Sequence[Mapping[str, Any]]) -> bool:
    """Whether the query embedding is at least half of some row's end-to-end latency: then
    that latency is nearly the same in every row (one model embeds every query), and the
    retrieval-only latency is what tells the configurations apart."""
    for r in rows:
        e2e, retrieval = r.get(LATENCY), r.get(RETRIEVAL_LATENCY)
        if (isinstance(e2e, int | float) and isinstance(retrieval, int | float)
                and e2e > 0 and retrieval <= e2e / 2):
            return True
    return False


def narrow_metrics(rows: Sequence[Mapping[str, Any]], metric: str) -> list[str]:
    """The metric columns the printed table shows after the headline: `NARROW_METRICS` that
    some finished row has, evidence lost only when some row lost any, the retrieval-only
    latency only when the query embedding hides it (`embedding_dominates`), and the
    quantisation tax (overlap, headline, MRR) when some row was run off fp32."""
    finished = [r for r in rows if r.get("status") == "FINISHED"]

    def wanted(m: str) -> bool:
        values = [r.get(m) for r in finished if isinstance(r.get(m), int | float)]
        if m == metric or not values:
            return False
        if m == "lost_in_parsing":
            return any(values)
        if m == "evidence_found_fraction":
            return any(v < 1.0 for v in values)
        return m != RETRIEVAL_LATENCY or embedding_dominates(finished)

    # A sweep over embedding backends/precisions: what the quantised rows lose against their
    # fp32 reference is part of the decision (only those rows have it).
    quant = ("quant_overlap_at_10", f"quant_tax_{metric}", "quant_tax_mrr")
    taxed = [m for m in dict.fromkeys(quant)
             if any(isinstance(r.get(m), int | float) for r in finished)]
    return [*(m for m in NARROW_METRICS if wanted(m)), *taxed]


def print_comparison(axes: Sequence[str], rows: Sequence[dict[str, Any]]) -> None:
    """The end-of-sweep table, narrow: the swept settings, the headline, the verdict and
    `narrow_metrics`, every header in full; then where the full table is."""
    from rich.console import Console
    from rich.table import Table

    if not rows:
        return
    metric = next((r["headline_metric"] for r in rows if r.get("headline_metric")), "headline")
    table = Table(title=f"chunk-sweep: {len(rows)} configurations, best {metric} first")
    table.add_column("#", justify="right")
    for axis in axes:
        table.add_column(axis)
    table.add_column(str(metric), justify="right", style="bold")
    shown = [*_cut(rows), *_verdict(rows), *narrow_metrics(rows, str(metric))]
    for name in shown:
        table.add_column(name, justify="right")
    for i, row in enumerate(rows, start=1):
        if row["status"] != "FINISHED":
            table.add_row(str(i), *[format_value(row.get(a)) for a in axes],
                          f"[red]{row['status']}[/red]", *["" for _ in shown])
            continue
        table.add_row(str(i), *[format_value(row.get(a)) for a in axes],
                      format_value(row.get("headline")),
                      *[cut_cell(row) if m == CUT else format_value(row.get(m)) for m in shown])
    # Each column as wide as its header or its widest cell (a verdict cell, "tied
    # (p_holm=1.000)", is wider than "verdict"), plus its border and padding: a console any
    # narrower cuts the headers ("evidence_recall_at_bu…").
    widths = [max((len(str(cell)) for cell in column.cells), default=0)
              for column in table.columns]
    needed = 8 + sum(max(len(str(c.header)), w) + 3 for c, w in zip(table.columns, widths,
                                                                    strict=True))
    console = Console()
    console.width = max(console.width, needed)  # full column names beat a tidy wrap in logs
    console.print(table)
    print(full_table_line(rows, shown, str(metric)))
    merged = sum(r.get("n_jobs", 1) - 1 for r in rows)
    if merged or any(r.get(a) == NOT_APPLICABLE for r in rows for a in axes):
        print(f"{NOT_APPLICABLE}: the configuration does not read that setting (e.g. "
              "index.ef_search with index.kind=exact), so jobs differing only there are one "
              "configuration" + (f"; {merged} such job(s) are not listed again" if merged
                                 else ""))
    finished = [r for r in rows if r["status"] == "FINISHED"]
    if len(finished) >= 2:
        best, second = finished[0], finished[1]
        print(f"best: {', '.join(f'{a}={best.get(a)}' for a in axes)} "
              f"({metric}={format_value(best['headline'])}, "
              f"{format_value(best['headline'] - second['headline'])} ahead of the runner-up"
              + ("" if cut_cell(best) == "whole" else f"; model saw {cut_cell(best)}") + ")")
        cut = cut_line(best)
        if cut:
            print(cut)
    if finished:
        by_source = summary_line(finished[0].get("sources") or {}, str(metric))
        if by_source:
            print(f"  by source, in the best configuration: {by_source}")
        by_content = content_line(finished[0].get("by_content") or {}, str(metric))
        if by_content:
            print(f"  by content, in the best configuration: {by_content}")
        only = finished[0].get("found_only_by") or {}
        for name, other in (("bm25", "dense"), ("dense", "bm25")):
            qids = only.get(name) or []
            if qids:
                print(f"  in the best configuration, {len(qids)} questions were found in the top "
                      f"k only by {name} ({other} missed them): {', '.join(qids[:12])}"
                      + (" ..." if len(qids) > 12 else ""))


def full_table_line(rows: Sequence[Mapping[str, Any]], shown: Sequence[str], metric: str
                    ) -> str:
    """Where the columns the printed table leaves out are."""
    rest = [m for m in table_metrics(rows)
            if m not in shown and m != metric and any(r.get(m) is not None for r in rows)]
    if any(r.get("misses") for r in rows):
        rest.append("misses")
    folder = next((str(Path(str(r["folder"])).parent) for r in rows if r.get("folder")),
                  "the sweep folder")
    named = ", ".join(rest[:6]) + (", ..." if len(rest) > 6 else "")
    return (f"{len(rest)} more columns ({named}) in {folder}/comparison.csv and comparison.md, "
            "also on the sweep's parent run in MLflow" if rest
            else f"the table as CSV: {folder}/comparison.csv")


def pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig: Any, path: Path) -> Path:
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    pyplot().close(fig)
    return path


def plot_metric_vs_size(groups: Mapping[str, Sequence[tuple[float, float]]], metric: str,
                        path: Path) -> Path:
    """``metric`` against chunk size (log scale), one line per group of configurations."""
    fig, ax = pyplot().subplots(figsize=(8, 5))
    for label, points in sorted(groups.items()):
        xs, ys = zip(*sorted(points), strict=True)
        ax.plot(xs, ys, marker="o", label=label)
    sizes = sorted({x for points in groups.values() for x, _ in points})
    if sizes:
        ax.set_xscale("log", base=2)
        ax.set_xticks(sizes, [f"{s:g}" for s in sizes])
    ax.set_xlabel("chunk.size (tokens)")
    ax.set_ylabel(metric)
    ax.set_title(f"{metric} vs chunk size")
    if len(groups) > 1:
        ax.legend(fontsize=7, loc="best")
    return save_figure(fig, path)


def plot_sweep(axes: Sequence[str], rows: Sequence[dict[str, Any]], path: Path) -> Path | None:
    """Headline metric vs chunk size, one line per combination of the other swept axes
    (a bar per configuration when chunk size was not swept)."""
    finished = [r for r in rows if r["status"] == "FINISHED" and r.get("headline") is not None]
    if not finished:
        return None
    metric = finished[0]["headline_metric"]
    if "chunk.size" in axes:
        others = [a for a in axes if a != "chunk.size"]
        groups: dict[str, list[tuple[float, float]]] = {}
        for r in finished:
            label = ", ".join(f"{a.split('.')[-1]}={r[a]}" for a in others) or metric
            groups.setdefault(label, []).append((float(r["chunk.size"]), float(r["headline"])))
        return plot_metric_vs_size(groups, metric, path)
    labels = [", ".join(f"{a.split('.')[-1]}={r[a]}" for a in axes) or "config"
              for r in finished]
    fig, ax = pyplot().subplots(figsize=(8, 5))
    ax.barh(range(len(finished)), [r["headline"] for r in finished])
    ax.set_yticks(range(len(finished)), labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_title(f"{metric} per configuration")
    ax.set_xlabel(metric)
    return save_figure(fig, path)


def plot_axes(data: Mapping[str, Any], path: Path) -> Path | None:
    """What each axis did and the Pareto fronts, one panel each (``data``: what
    `sweep.decide.decision.plot_data` returns). Each axis panel shows every value's difference
    from the axis's best value (averaged over the other axes) with its 95% paired interval,
    grey where it is within noise; each front panel shows every configuration against a cost
    with the front drawn through. None when there is nothing to draw."""
    effects = list(data.get("axes") or [])
    fronts = [f for f in data.get("fronts") or [] if f.get("all")]
    panels = len(effects) + len(fronts)
    if not panels:
        return None
    metric = str(data.get("metric"))
    cols = min(3, panels)
    rows_n = (panels + cols - 1) // cols
    fig, axs = pyplot().subplots(rows_n, cols, figsize=(4.2 * cols, 3.4 * rows_n),
                                 squeeze=False)
    flat = [a for row in axs for a in row]
    for ax, effect in zip(flat, effects, strict=False):
        values = effect["values"]
        ys = range(len(values))
        for y, v in zip(ys, values, strict=True):
            colour = ("tab:blue" if v["value"] == effect["best"]
                      else "0.6" if v["within_noise"] in (True, None) else "tab:red")
            if v["lo"] is not None:
                ax.plot([v["lo"], v["hi"]], [y, y], color=colour, linewidth=2)
            ax.plot([v["diff"]], [y], "o", color=colour)
        ax.axvline(0, color="0.3", linewidth=0.8)
        ax.set_yticks(list(ys), [str(v["value"]) for v in values], fontsize=8)
        ax.invert_yaxis()
        ax.set_title(f"{effect['axis']} (best: {effect['best']})", fontsize=9)
        ax.set_xlabel(f"{metric} minus the best value's", fontsize=8)
    for ax, front in zip(flat[len(effects):], fronts, strict=False):
        xs, ys_ = zip(*front["all"], strict=True)
        ax.scatter(xs, ys_, s=18, color="0.6")
        fx, fy = zip(*front["front"], strict=True)
        ax.step(fx, fy, where="post", color="tab:blue")
        ax.scatter(fx, fy, s=24, color="tab:blue")
        ax.set_xlabel(str(front["cost"]), fontsize=8)
        ax.set_ylabel(metric, fontsize=8)
        ax.set_title(f"Pareto front vs {front['cost']}", fontsize=9)
    for ax in flat[panels:]:
        ax.set_visible(False)
    return save_figure(fig, path)
