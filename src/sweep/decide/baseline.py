"""The CI gate: the default configuration's headline metrics must not fall below the baseline.

    sweep baseline check  [--tolerance 0.05] [--metrics recall_at_5,mrr,evidence_recall_at_5]
                          [--baseline PATH] [--json] [overrides...]
    sweep baseline update [--allow-regression] [--metrics ...] [--baseline PATH] [overrides...]

``evals/baseline.json`` holds the gated metrics of the configuration it was computed with (its
overrides, its resolved chunk/embedding/retrieval/rerank/eval sections), the number of
questions, and ``per_question: {qid: first_relevant_rank}`` so that a failing check names the
questions that went from found to not found. ``check`` runs that configuration in-process
(``pipeline.run_config``; no MLflow) with any extra overrides on top. ``update`` is a ratchet:
it refuses to lower a metric unless told ``--allow-regression``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sweep.common.errors import SweepError
from sweep.common.files import atomic_write
from sweep.common.mapping import flatten
from sweep.common.paths import PROJECT_ROOT
from sweep.config.identity import RESULT_SECTIONS, active_sections, unhashed_flat_keys

BASELINE_PATH = PROJECT_ROOT / "evals" / "baseline.json"
GATED = ("recall_at_5", "mrr", "evidence_recall_at_5")
DEFAULT_TOLERANCE = 0.05
_EPS = 1e-9


# --- pure logic -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Finding:
    metric: str
    got: float
    baseline: float
    tolerance: float

    @property
    def drop(self) -> float:
        return self.baseline - self.got

    @property
    def ok(self) -> bool:
        return self.got >= self.baseline - self.tolerance - _EPS


def compare_metrics(got: Mapping[str, float], baseline: Mapping[str, float],
                    metrics: Sequence[str], tolerance: float) -> list[Finding]:
    """One finding per gated metric; a metric fails when it is more than ``tolerance``
    (absolute) below the baseline."""
    if tolerance < 0:
        raise SweepError(f"--tolerance {tolerance} must be >= 0")
    out = []
    for name in metrics:
        if name not in baseline:
            raise SweepError(f"metric {name!r} is not in the baseline (it has: "
                             f"{', '.join(sorted(baseline))}); run `sweep baseline update "
                             f"--metrics ...` to add it")
        if name not in got or got[name] is None or not math.isfinite(float(got[name])):
            raise SweepError(f"metric {name!r} was not computed by this configuration")
        out.append(Finding(name, float(got[name]), float(baseline[name]), tolerance))
    return out


def _found(rank: Any, k: int) -> bool:
    return rank is not None and not (isinstance(rank, float) and math.isnan(rank)) \
        and int(rank) <= k


def flipped(before: Mapping[str, Any], after: Mapping[str, Any], k: int
            ) -> tuple[list[str], list[str]]:
    """(lost, gained): questions found in the top ``k`` before and not after, and the
    reverse. Only questions present in both are compared."""
    shared = [q for q in before if q in after]
    lost = [q for q in shared if _found(before[q], k) and not _found(after[q], k)]
    gained = [q for q in shared if not _found(before[q], k) and _found(after[q], k)]
    return lost, gained


def tolerance_warning(tolerance: float, n: int) -> str | None:
    """A tolerance below 2.5/n trips on noise: one question flipping moves a mean by 1/n."""
    if n <= 0:
        return None
    floor = 2.5 / n
    if tolerance < floor:
        return (f"tolerance {tolerance:g} is below 2.5/n = {floor:.3f} (n = {n} scored "
                f"questions): one question moves a metric by 1/n = {1 / n:.3f}, so the gate "
                "will fail on a couple of questions flipping")
    return None


def lowered(old: Mapping[str, float], new: Mapping[str, float], metrics: Sequence[str]
            ) -> list[tuple[str, float, float]]:
    """Metrics the new numbers would lower: ``(metric, old, new)``."""
    return [(m, float(old[m]), float(new[m])) for m in metrics
            if m in old and m in new and float(new[m]) < float(old[m]) - _EPS]


def config_differences(base: Mapping[str, Any], now: Mapping[str, Any]) -> list[str]:
    # Sections switched off on both sides change no number (a baseline written before the
    # index axis has no index section; exact search is what it ran).
    used = set(active_sections(base)) | set(active_sections(now))
    a = flatten({k: base.get(k, {}) for k in RESULT_SECTIONS if k in used})
    b = flatten({k: now.get(k, {}) for k in RESULT_SECTIONS if k in used})
    return [f"{k}={b.get(k)} (baseline {a.get(k)})" for k in sorted(set(a) | set(b))
            if a.get(k) != b.get(k) and k not in unhashed_flat_keys()]


# --- running the configuration --------------------------------------------------------------

def read_baseline(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise SweepError(f"no baseline at {path}",
                         hint="create it with `sweep baseline update`")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise SweepError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from None
    if not isinstance(data, dict) or not isinstance(data.get("metrics"), dict):
        raise SweepError(f"{path}: no 'metrics' object")
    return data


def evaluate_config(overrides: Sequence[str]) -> dict[str, Any]:
    """Run the composed configuration in-process; the numbers the gate needs."""
    from sweep.config.checks import check_config
    from sweep.config.compose import compose
    from sweep.pipeline.run import run_config

    cfg = compose(list(overrides))
    check_config(cfg)
    # Timing is not gated: skip the per-question latency pass (it never changes a metric).
    cfg.eval.latency_sample = 0
    result = run_config(cfg, progress=False)
    rep = result.report
    plain = rep["config"]
    return {
        "metrics": dict(rep["metrics"]),
        "n_questions": int(rep["metrics"].get("n_questions", 0)),
        "n_scored": int(rep["metrics"].get("n_scored", 0)),
        "prompt_k": int(plain["eval"]["prompt_k"]),
        "config": {k: plain[k] for k in (*RESULT_SECTIONS, "corpus", "golden") if k in plain},
        "config_hash": rep.get("config_hash"),
        "fingerprints": rep.get("fingerprints", {}),
        "per_question": {str(r["qid"]): r.get("first_relevant_rank") for r in result.rows},
    }


def baseline_document(run: Mapping[str, Any], overrides: Sequence[str],
                      metrics: Sequence[str]) -> dict[str, Any]:
    return {
        "about": "Headline retrieval metrics of the configuration below on its golden set; "
                 "`sweep baseline check` fails when one drops by more than the tolerance. "
                 "Regenerate with `sweep baseline update`.",
        "created": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "overrides": list(overrides),
        "metrics": {m: run["metrics"][m] for m in metrics},
        "n_questions": run["n_questions"],
        "n_scored": run["n_scored"],
        "found_at_k": run["prompt_k"],
        "config_hash": run["config_hash"],
        "fingerprints": run["fingerprints"],
        "config": _portable(run["config"]),
        "per_question": run["per_question"],
    }


def _portable(config: Mapping[str, Any]) -> dict[str, Any]:
    """Paths under the project written relative to it, so the file is the same on every
    machine."""
    root = str(PROJECT_ROOT)

    def fix(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: fix(x) for k, x in v.items()}
        if isinstance(v, str) and v.startswith(root + "/"):
            return "<project>/" + v[len(root) + 1 :]
        return v

    return fix(dict(config))


# --- commands -------------------------------------------------------------------------------

def _metrics_arg(text: str | None, default: Sequence[str]) -> list[str]:
    if not text:
        return list(default)
    names = [m.strip() for m in text.split(",") if m.strip()]
    if not names:
        raise SweepError("--metrics needs at least one metric name")
    return names


def _check(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="sweep baseline check",
                                     description="Fail when a gated metric drops below the "
                                     "baseline by more than the tolerance.")
    parser.add_argument("--tolerance", type=float, default=DEFAULT_TOLERANCE,
                        help=f"allowed absolute drop (default {DEFAULT_TOLERANCE})")
    parser.add_argument("--metrics", help="comma-separated (default: the baseline's)")
    parser.add_argument("--baseline", type=Path, default=BASELINE_PATH)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("overrides", nargs="*", help="config overrides on top of the baseline's")
    args = parser.parse_intermixed_args(argv)
    base = read_baseline(args.baseline)
    metrics = _metrics_arg(args.metrics, list(base["metrics"]))
    overrides = [*base.get("overrides", []), *args.overrides]
    run = evaluate_config(overrides)
    findings = compare_metrics(run["metrics"], base["metrics"], metrics, args.tolerance)
    k = int(base.get("found_at_k", run["prompt_k"]))
    lost, gained = flipped(base.get("per_question", {}), run["per_question"], k)
    warning = tolerance_warning(args.tolerance, run["n_scored"])
    diffs = config_differences(base.get("config", {}), _portable(run["config"]))
    failed = [f for f in findings if not f.ok]
    if args.json:
        print(json.dumps({
            "ok": not failed, "tolerance": args.tolerance, "overrides": overrides,
            "metrics": [{"metric": f.metric, "got": f.got, "baseline": f.baseline,
                         "ok": f.ok} for f in findings],
            "lost": lost, "gained": gained, "warning": warning, "config_changes": diffs,
        }, indent=2))
        return 1 if failed else 0
    if warning:
        print(f"warning: {warning}", file=sys.stderr)
    if diffs:
        print("configuration differs from the baseline's: " + ", ".join(diffs))
    if run["fingerprints"].get("golden") != (base.get("fingerprints") or {}).get("golden"):
        print("note: the golden set changed since the baseline was made (update it once the "
              "change is reviewed)")
    print(f"{'metric':<24} {'got':>8} {'baseline':>9} {'tolerance':>10}  result")
    for f in findings:
        print(f"{f.metric:<24} {f.got:>8.4f} {f.baseline:>9.4f} {f.tolerance:>10.4f}  "
              + ("ok" if f.ok else f"FAIL (down {f.drop:.4f})"))
    if lost:
        print(f"{len(lost)} questions found in the top {k} by the baseline and not now: "
              + ", ".join(lost))
    if gained:
        print(f"{len(gained)} questions found now and not by the baseline: " + ", ".join(gained))
    if failed:
        print(f"FAILED: {', '.join(f.metric for f in failed)} fell more than "
              f"{args.tolerance:g} below the baseline ({args.baseline})", file=sys.stderr)
        return 1
    print(f"OK: no gated metric fell more than {args.tolerance:g} below the baseline "
          f"({run['n_scored']} scored questions)")
    return 0


def _update(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="sweep baseline update",
                                     description="Recompute the baseline (a ratchet: it will "
                                     "not lower a metric without --allow-regression).")
    parser.add_argument("--allow-regression", action="store_true",
                        help="accept lower numbers than the current baseline")
    parser.add_argument("--metrics", help=f"comma-separated (default: {','.join(GATED)} or "
                        "the current baseline's)")
    parser.add_argument("--baseline", type=Path, default=BASELINE_PATH)
    parser.add_argument("overrides", nargs="*",
                        help="config overrides (default: the project's default configuration)")
    args = parser.parse_intermixed_args(argv)
    old = read_baseline(args.baseline) if args.baseline.exists() else None
    metrics = _metrics_arg(args.metrics, list(old["metrics"]) if old else GATED)
    run = evaluate_config(args.overrides)
    missing = [m for m in metrics if m not in run["metrics"]]
    if missing:
        raise SweepError(f"unknown metric {missing[0]!r} (computed: "
                         f"{', '.join(sorted(k for k in run['metrics'] if not k.startswith('n_')))})")
    doc = baseline_document(run, args.overrides, metrics)
    if old is not None:
        down = lowered(old["metrics"], doc["metrics"], metrics)
        for m, before, after in down:
            print(f"{m}: {before:.4f} -> {after:.4f}"
                  + ("  (allowed by --allow-regression)" if args.allow_regression else ""))
        if down and not args.allow_regression:
            names = ", ".join(m for m, _, _ in down)
            print(f"error: refusing to lower {names} in {args.baseline} "
                  "(pass --allow-regression to accept it)", file=sys.stderr)
            return 1
    args.baseline.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(Path(args.baseline), json.dumps(doc, indent=2) + "\n")
    for m in metrics:
        before = f"{float(old['metrics'][m]):.4f} -> " if old and m in old["metrics"] else ""
        print(f"{m:<24} {before}{doc['metrics'][m]:.4f}")
    print(f"wrote {args.baseline} ({doc['n_scored']} scored of {doc['n_questions']} questions)")
    return 0


def cmd_baseline(argv: Sequence[str]) -> int:
    if not argv or argv[0] not in ("check", "update"):
        print("usage: sweep baseline check [--tolerance T] [--metrics A,B] [overrides...]\n"
              "       sweep baseline update [--allow-regression] [--metrics A,B] "
              "[overrides...]", file=sys.stderr)
        return 2
    return _check(argv[1:]) if argv[0] == "check" else _update(argv[1:])
