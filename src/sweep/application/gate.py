"""The CI gate's run: the gated configuration evaluated in-process (`sweep baseline check |
update`; the comparison with evals/baseline.json is `sweep.decide.baseline`)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sweep.common.errors import SweepError
from sweep.decide import memo
from sweep.decide.baseline import (
    Finding,
    baseline_document,
    compare_metrics,
    config_differences,
    flipped,
    portable,
    tolerance_warning,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class GateCheck:
    """`sweep baseline check`'s answer: the run (measured now, or its memo), how each gated
    metric compares with the baseline, and what else changed."""

    overrides: list[str]
    tolerance: float
    run: dict[str, Any]
    reused: str  # the memo's description when the run was not measured again, else ""
    findings: list[Finding]
    k: int  # the rank the lost/gained questions are counted at
    lost: list[str]
    gained: list[str]
    warning: str | None
    diffs: list[str]

    @property
    def failed(self) -> list[Finding]:
        return [f for f in self.findings if not f.ok]

    def as_json(self) -> dict[str, Any]:
        """What `sweep baseline check --json` prints."""
        return {
            "ok": not self.failed, "tolerance": self.tolerance, "overrides": self.overrides,
            "metrics": [{"metric": f.metric, "got": f.got, "baseline": f.baseline,
                         "ok": f.ok} for f in self.findings],
            "lost": self.lost, "gained": self.gained, "warning": self.warning,
            "config_changes": self.diffs, "reused": self.reused or None,
        }


def check_baseline(base: dict[str, Any], overrides: list[str], metrics: Sequence[str],
                   tolerance: float, *, rerun: bool = False) -> GateCheck:
    """The gated configuration (``overrides``) against the baseline document ``base``: from
    the memo of a run with the same inputs unless ``rerun``, else measured now."""
    run, reused = (None, "") if rerun else memo.lookup(overrides)
    if run is None:
        run, reused = evaluate_config(overrides), ""
    findings = compare_metrics(run["metrics"], base["metrics"], metrics, tolerance)
    k = int(base.get("found_at_k", run["prompt_k"]))
    lost, gained = flipped(base.get("per_question", {}), run["per_question"], k)
    return GateCheck(list(overrides), tolerance, run, reused, findings, k, lost, gained,
                     tolerance_warning(tolerance, run["n_scored"]),
                     config_differences(base.get("config", {}), portable(run["config"])))


def evaluate_config(overrides: Sequence[str]) -> dict[str, Any]:
    """Run the composed configuration in-process; the numbers the gate needs."""
    # Imported here: `sweep baseline check` answered from its memo never imports the pipeline,
    # Hydra or numpy (tests/cli/test_gate_memo.py), and it imports this module to get here.
    from sweep.application.job import run_job
    from sweep.config.checks import check_config
    from sweep.config.compose import compose
    from sweep.config.identity import RESULT_SECTIONS
    from sweep.config.specs import build_job_spec

    cfg = compose(list(overrides))
    check_config(cfg)
    # Timing is not gated: skip the per-question latency pass (it never changes a metric).
    # Set before the job spec is built, so that the spec and its plain config agree.
    cfg.eval.latency_sample = 0
    job = build_job_spec(cfg)
    pending = memo.prepare(overrides, job.plain)  # key and inputs taken now
    result = run_job(job, progress=False)
    rep = result.report
    plain = rep["config"]
    run = {
        "metrics": dict(rep["metrics"]),
        "n_questions": int(rep["metrics"].get("n_questions", 0)),
        "n_scored": int(rep["metrics"].get("n_scored", 0)),
        "prompt_k": int(plain["eval"]["prompt_k"]),
        "config": {k: plain[k] for k in (*RESULT_SECTIONS, "corpus", "golden") if k in plain},
        "config_hash": rep.get("config_hash"),
        "fingerprints": rep.get("fingerprints", {}),
        "per_question": {str(r["qid"]): r.get("first_relevant_rank") for r in result.rows},
    }
    if isinstance(pending, str):
        log.info("the gate's run is not memoised: %s", pending)
    else:
        memo.store(pending, run)
    return run


def measure_baseline(overrides: list[str], metrics: Sequence[str]
                     ) -> tuple[dict[str, Any], dict[str, Any]]:
    """`sweep baseline update`'s run of ``overrides`` and the baseline document gating
    ``metrics`` (each must be one the run computed)."""
    run = evaluate_config(overrides)
    missing = [m for m in metrics if m not in run["metrics"]]
    if missing:
        raise SweepError(f"unknown metric {missing[0]!r} (computed: "
                         f"{', '.join(sorted(k for k in run['metrics'] if not k.startswith('n_')))})")
    return run, baseline_document(run, overrides, metrics)
