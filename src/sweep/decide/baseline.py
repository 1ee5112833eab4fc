"""The CI gate: the default configuration's headline metrics must not fall below the baseline.

The commands (`sweep baseline check | update`, options and output) are in sweep.cli.baseline.

``evals/baseline.json`` holds the gated metrics of the configuration it was computed with (its
overrides, its resolved chunk/embedding/retrieval/rerank/eval sections), the number of
questions, and ``per_question: {qid: first_relevant_rank}`` so that a failing check names the
questions that went from found to not found. ``check`` runs that configuration in-process
(``application.gate.evaluate_config``; no MLflow) with any extra overrides on top. ``update`` is a ratchet:
it refuses to lower a metric unless told ``--allow-regression``.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from sweep.common.errors import SweepError
from sweep.common.files import read_text_regular
from sweep.common.mapping import flatten
from sweep.common.paths import PROJECT_ROOT

log = logging.getLogger(__name__)

BASELINE_PATH = PROJECT_ROOT / "evals" / "baseline.json"
GATED = ("recall_at_5", "mrr", "evidence_recall_at_5")
DEFAULT_TOLERANCE = 0.05
_EPS = 1e-9


# --- pure logic -----------------------------------------------------------------------------

class Finding(NamedTuple):
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
    if base == now:  # nothing to classify: a gate answered from its memo stays stdlib-only
        return []
    # Imported here: which settings count is read off the stages' registries (config.axes),
    # which import numpy; `sweep baseline check` answering from its memo needs none of them.
    from sweep.config.identity import (
        RESULT_SECTIONS,
        active_sections,
        gate_open,
        unhashed_flat_keys,
    )

    # Sections switched off on both sides change no number (a baseline written before the
    # index axis has no index section; exact search is what it ran).
    # Neither do the settings of a strategy not chosen (chunk.semantic.* without the semantic
    # boundary), which a baseline written before the setting existed lacks.
    used = set(active_sections(base)) | set(active_sections(now))

    def counted(plain: Mapping[str, Any]) -> dict[str, Any]:
        return flatten({s: {k: v for k, v in (plain.get(s) or {}).items()
                            if gate_open(s, k, plain.get(s) or {})}
                        for s in RESULT_SECTIONS if s in used})

    a, b = counted(base), counted(now)
    return [f"{k}={b.get(k)} (baseline {a.get(k)})" for k in sorted(set(a) | set(b))
            if a.get(k) != b.get(k) and k not in unhashed_flat_keys()]


def export_override(path: Path, experiments: Path) -> str:
    """``experiment=winners/NAME``: the override that composes a winner `sweep export` wrote
    to ``path``, which must lie under the project's ``experiments`` folder (the gate's
    `sweep baseline check` composes it again from there, in CI too)."""
    file = Path(path)
    if not file.is_file():
        raise SweepError(f"--from-export {path}: no such file",
                         hint="`sweep export` writes experiments/winners/NAME.yaml and prints "
                         "its path")
    try:
        rel = file.resolve().relative_to(experiments.resolve())
    except ValueError:
        raise SweepError(f"--from-export {path}: not under {experiments} (the gate composes "
                         "it as experiment=..., in CI too)",
                         hint="export it without --out-dir, or copy it to experiments/winners/"
                         ) from None
    if file.suffix != ".yaml":
        raise SweepError(f"--from-export {path}: not a .yaml experiment file")
    first = file.read_text(encoding="utf-8").split("\n", 1)[0].strip()
    if first != "# @package _global_":
        raise SweepError(f"{path}:1: not an exported winner (its first line is not "
                         "'# @package _global_')")
    return f"experiment={rel.with_suffix('').as_posix()}"


def measured(overrides: Sequence[str]) -> str:
    """Which configuration the gate measures, in words."""
    if not overrides:
        return "the project's default configuration (no overrides)"
    return "the default configuration with " + " ".join(overrides)


# --- running the configuration --------------------------------------------------------------

def read_baseline(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise SweepError(f"no baseline at {path}",
                         hint="create it with `sweep baseline update`")
    try:
        data = json.loads(read_text_regular(path))
    except json.JSONDecodeError as exc:
        raise SweepError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from None
    if not isinstance(data, dict) or not isinstance(data.get("metrics"), dict):
        raise SweepError(f"{path}: no 'metrics' object")
    return data


def baseline_document(run: Mapping[str, Any], overrides: Sequence[str],
                      metrics: Sequence[str]) -> dict[str, Any]:
    from datetime import UTC, datetime

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
        "config": portable(run["config"]),
        "per_question": run["per_question"],
    }


def portable(config: Mapping[str, Any]) -> dict[str, Any]:
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
