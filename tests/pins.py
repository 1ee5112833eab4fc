"""What the behaviour pins (tests/unit/config/test_pinned_hashes.py,
tests/unit/pipeline/test_pinned_demo_grid.py) compute, and how to refresh their stored values.

A refactor must leave every value here identical. After a change that is MEANT to move them
(a new hashed key, a metric computed differently), refresh the files and commit them with the
change, saying why in its message:

    PYTHONPATH=src HF_HUB_OFFLINE=1 .venv/bin/python tests/pins.py hashes   # config_hash pins
    PYTHONPATH=src HF_HUB_OFFLINE=1 .venv/bin/python tests/pins.py demo     # demo grid metrics
"""

from __future__ import annotations

import itertools
import json
import math
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml
from hydra.core.override_parser.overrides_parser import OverridesParser

from sweep.common.paths import PROJECT_ROOT

PINS = Path(__file__).resolve().parent / "data" / "pins"
HASHES = PINS / "config_hashes.json"
DEMO = PINS / "demo_grid_metrics.json"
EXPERIMENTS = PROJECT_ROOT / "experiments"


def experiment_grid(name: str) -> list[list[str]]:
    """Every configuration an experiment's sweep can run, as override lists: the product of its
    swept axes, each expanded by Hydra's own override parser (``a,b`` and ``choice(a, b)``)."""
    doc = yaml.safe_load((EXPERIMENTS / f"{name}.yaml").read_text(encoding="utf-8"))
    params = ((doc.get("hydra") or {}).get("sweeper") or {}).get("params") or {}
    parser = OverridesParser.create()
    axes = []
    for key, spec in params.items():
        (override,) = parser.parse_overrides([f"{key}={spec}"])
        axes.append([f"{key}={value}" for value in override.sweep_string_iterator()])
    return [list(combo) for combo in itertools.product(*axes)]


def shipped_experiments() -> list[str]:
    return sorted(p.stem for p in EXPERIMENTS.glob("*.yaml"))


def compute_hashes() -> dict[str, str]:
    """``{"experiment=<name> <overrides>": config_hash}`` for the default config and every
    configuration of every shipped experiment, against the bundled demo corpus and golden set
    (their fingerprints are part of the hash, so the pins also hold the fingerprinting)."""
    from sweep.config.compose import compose, to_container
    from sweep.config.identity import config_hash
    from sweep.config.specs import build_job_spec
    from sweep.data.golden import load_golden
    from sweep.pipeline.memo import load_corpus_cached

    # nothing written into the checkout's .cache
    job = build_job_spec(compose(["cache.enabled=false"]))
    _, corpus_fp = load_corpus_cached(job.corpus, job.cache)
    golden_fp = load_golden(job.golden).fingerprint
    jobs: list[list[str]] = [[]]
    for name in shipped_experiments():
        jobs += [[f"experiment={name}", *combo] for combo in experiment_grid(name)]
    out = {}
    for overrides in jobs:
        out[" ".join(overrides) or "(default)"] = config_hash(
            to_container(compose(overrides)), corpus_fp, golden_fp)
    return out


def demo_grid_overrides(cache_dir: str) -> list[list[str]]:
    return [["experiment=chunking_grid", *combo, f"cache.dir={cache_dir}", "tracking=off"]
            for combo in experiment_grid("chunking_grid")]


def _plain_number(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    return value


def compute_demo(cache_dir: str) -> dict[str, dict[str, Any]]:
    """The result metrics (no timings) of every configuration of the demo grid, run in this
    process on the bundled demo corpus."""
    from sweep.application.job import run_job
    from sweep.config.compose import compose
    from sweep.config.specs import build_job_spec
    from sweep.outputs.report import result_metrics

    out = {}
    for overrides in demo_grid_overrides(cache_dir):
        result = run_job(build_job_spec(compose(overrides)), progress=False)
        metrics = result_metrics(result.report["metrics"])
        out[" ".join(overrides[1:-2])] = {
            "config_hash": result.report["config_hash"],
            "metrics": {k: _plain_number(v) for k, v in sorted(metrics.items())},
        }
    return out


def _write(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    what = sys.argv[1:] or ["hashes", "demo"]
    if "hashes" in what:
        _write(HASHES, compute_hashes())
    if "demo" in what:
        with tempfile.TemporaryDirectory() as tmp:
            _write(DEMO, compute_demo(tmp))
