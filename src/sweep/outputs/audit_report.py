"""The golden set's audit as text, JSON and one self-contained HTML page.

Every string on the page is escaped: questions, quotes and headings come from the corpus and
the golden file, which may hold anything (``<script>``, ``</td>``, quotes in attributes).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from html import escape
from pathlib import Path
from typing import Any

from sweep.common.files import atomic_write
from sweep.evaluation.audit import headings, one_line
from sweep.outputs.report import json_safe

AUDIT_JSON = "audit.json"
AUDIT_HTML = "audit.html"


def _f(value: Any, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def _ref_line(inputs: Mapping[str, Any]) -> str:
    ref = inputs.get("reference_chunking") or {}
    return (f"{ref.get('boundary')} {ref.get('size')}/{ref.get('overlap')} "
            f"({ref.get('from')})")


def _dup_how(inputs: Mapping[str, Any]) -> str:
    nd = inputs.get("near_duplicates") or {}
    model = nd.get("model")
    if not model:
        return "normalised text only (no embedding)"
    return f"{model['name']} cosine >= {nd.get('threshold')}, or equal normalised text"


def summary_lines(report: Mapping[str, Any]) -> list[str]:
    """The set's figures, one finding a line."""
    s, inputs = report["set"], report.get("inputs") or {}
    lines = [f"audit of {inputs.get('golden')} ({s['n_items']} items) against "
             f"{s['coverage']['documents']} documents of {inputs.get('corpus')}"]
    by_source = ", ".join(f"{k} {_f(v['mean'])} (n={v['n']})"
                          for k, v in s["smell_by_source"].items())
    lines.append(f"synthetic smell: mean {_f(s['smell_mean'])} over {s['smell_n']} items, "
                 f"{_f(s['smell_paragraph_mean'])} against the evidence's paragraphs (share of "
                 f"the question's content words found there; by source: {by_source})")
    pn = s["passages_needed"]
    lines.append(f"passages needed: 1: {pn['1']} · 2: {pn['2']} · 3+: {pn['3plus']} "
                 f"({s['n_needs_any']} items with alternatives, needs: any)")
    nd = s["near_duplicates"]
    lines.append(f"near-duplicate questions ({_dup_how(inputs)}): {nd['n_pairs']} pairs over "
                 f"{nd['n_items']} items ({nd['n_text']} equal once normalised)")
    lines.append(f"evidence found in several places (ambiguous labels): "
                 f"{s['n_evidence_elsewhere']} items")
    lines.append(f"answers split across chunks of the reference chunking {_ref_line(inputs)}: "
                 f"{s['n_split']} items")
    cov = s["coverage"]
    lines.append(f"coverage: {cov['documents_touched']}/{cov['documents']} documents and "
                 f"{cov['sections_touched']}/{cov['sections']} sections touched by some "
                 "question's evidence")
    # From a sweep's paired per-question results (`sweep.decide.decision.audit_power`): the
    # set alone has no spread to size anything from.
    power = s.get("power")
    lines.append(power["line"] if power else "power: not estimated (no sweep was consulted)")
    return lines


def audit_text(report: Mapping[str, Any], limit: int = 20) -> str:
    """The summary, then the items with a finding (``limit`` of each kind, 0: all)."""
    lines = summary_lines(report)
    items = report["items"]

    def cut(rows: Sequence[Any]) -> Sequence[Any]:
        return rows if limit <= 0 else rows[:limit]

    def more(rows: Sequence[Any], what: str) -> None:
        if 0 < limit < len(rows):
            lines.append(f"  ... and {len(rows) - limit} more {what} (--all, or --json)")

    pairs = report["set"]["near_duplicates"]["pairs"]
    if pairs:
        lines.append("near-duplicates:")
        lines += [f"  {p['a']} ~ {p['b']}  {p['similarity']:.3f} ({p['how']})"
                  for p in cut(pairs)]
        more(pairs, "pairs")
    amb = [i for i in items if i["evidence_elsewhere"]]
    if amb:
        lines.append("evidence in several places:")
        for i in cut(amb):
            e = i["evidence_elsewhere"][0]
            others = ", ".join(f"{o['doc_id']}@{o['start']}" for o in e["others"])
            lines.append(f"  {i['qid']}: passage {e['passage']} {one_line(e['text'], 50)!r} "
                         f"occurs {e['occurrences']} times (also {others})")
        more(amb, "items")
    split = [i for i in items if i["split"]]
    if split:
        lines.append("split across reference chunks:")
        for i in cut(split):
            sp = i["split"][0]
            lines.append(f"  {i['qid']}: passage {sp['passage']} over {sp['n_chunks']} "
                         f"chunks ({' '.join(sp['chunk_ids'][:4])})")
        more(split, "items")
    cov = report["set"]["coverage"]
    if cov["untouched_documents"]:
        docs = cov["untouched_documents"]
        lines.append(f"documents no question touches ({len(docs)}): "
                     + ", ".join(cut(docs)) + (" ..." if 0 < limit < len(docs) else ""))
    if cov["untouched_sections"]:
        secs = cov["untouched_sections"]
        lines.append(f"sections no question touches ({len(secs)}):")
        lines += [f"  {headings(s)}" for s in cut(secs)]
        more(secs, "sections")
    smelly = sorted((i for i in items if i["smell"] is not None), key=lambda i: -i["smell"])
    if smelly:
        lines.append("highest smell (question words taken from the evidence):")
        lines += [f"  {i['qid']}  {i['smell']:.2f}  {one_line(i['question'], 70)}"
                  for i in smelly[: min(limit or len(smelly), 5)]]
    return "\n".join(lines) + "\n"


_CSS = """body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 6px;
vertical-align:top;text-align:left}th{background:#f3f3f3}.n{text-align:right}
.flag{color:#a40}.muted{color:#777}li{margin:.1em 0}"""


def audit_html(report: Mapping[str, Any]) -> str:
    """The audit as one HTML page: the set's figures, then a row per item."""
    e = escape
    head = "".join(f"<li>{e(line)}</li>" for line in summary_lines(report)[1:])
    rows = []
    for i in report["items"]:
        dups = "<br>".join(f"{e(d['qid'])} {d['similarity']:.3f} {e(d['how'])}"
                           for d in i["near_duplicates"][:5])
        amb = "<br>".join(f"passage {x['passage']}: {x['occurrences']}× "
                          f"“{e(one_line(x['text'], 60))}”" for x in i["evidence_elsewhere"])
        split = "<br>".join(f"passage {x['passage']}: {x['n_chunks']} chunks"
                            for x in i["split"])
        rows.append(
            f"<tr><td>{e(str(i['qid']))}</td><td>{e(one_line(i['question'], 200))}</td>"
            f"<td>{e(str(i['source'] or ''))}</td><td class=n>{_f(i['smell'], 2)}</td>"
            f"<td class=n>{_f(i['smell_paragraph'], 2)}</td>"
            f"<td class=n>{i['n_passages']}</td><td>{e(i['needs'])}</td>"
            f"<td class=flag>{dups}</td><td class=flag>{amb}</td>"
            f"<td class=flag>{split}</td></tr>")
    cov = report["set"]["coverage"]
    untouched = "".join(f"<li>{e(d)}</li>" for d in cov["untouched_documents"][:500])
    sections = "".join(f"<li>{e(headings(s))}</li>" for s in cov["untouched_sections"][:500])
    title = e(f"golden set audit: {report.get('inputs', {}).get('golden', '')}")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<style>{_CSS}</style></head><body>
<h1>{title}</h1>
<ul>{head}</ul>
<h2>Items</h2>
<table><tr><th>qid</th><th>question</th><th>source</th><th>smell</th>
<th>smell (paragraph)</th><th>passages</th>
<th>needs</th><th>near-duplicates</th><th>evidence elsewhere</th><th>split</th></tr>
{"".join(rows)}
</table>
<h2>Documents no question touches ({len(cov["untouched_documents"])})</h2><ul>{untouched}</ul>
<h2>Sections no question touches ({len(cov["untouched_sections"])})</h2><ul>{sections}</ul>
</body></html>
"""


def audit_json(report: Mapping[str, Any]) -> str:
    return json.dumps(json_safe(report), indent=2, ensure_ascii=False) + "\n"


def write_audit(folder: Path, report: Mapping[str, Any]) -> list[Path]:
    """``audit.json`` and ``audit.html`` in ``folder`` (atomic writes)."""
    folder = Path(folder)
    paths = [folder / AUDIT_JSON, folder / AUDIT_HTML]
    atomic_write(paths[0], audit_json(report))
    atomic_write(paths[1], audit_html(report))
    return paths
