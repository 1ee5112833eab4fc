"""The CI gate's run: the gated configuration evaluated in-process (`sweep baseline check |
update`; the comparison with evals/baseline.json is `sweep.decide.baseline`)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

log = logging.getLogger(__name__)


def evaluate_config(overrides: Sequence[str]) -> dict[str, Any]:
    """Run the composed configuration in-process; the numbers the gate needs."""
    # Imported here: `sweep baseline check` answered from its memo never imports the pipeline,
    # Hydra or numpy (tests/cli/test_gate_memo.py), and it imports this module to get here.
    from sweep.application.job import run_job
    from sweep.config.checks import check_config
    from sweep.config.compose import compose
    from sweep.config.identity import RESULT_SECTIONS
    from sweep.config.specs import build_job_spec
    from sweep.decide import memo

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
