"""Every experiment that ships in experiments/ composes and passes check_config, and so does
each value its sweep tries (lightning-hydra-template's idea: a sweep file that cannot run is
found by the fast suite, not by the user's first sweep)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hydra.core.override_parser.overrides_parser import OverridesParser

from sweep.common.paths import PROJECT_ROOT
from sweep.config.checks import check_config
from sweep.config.compose import compose
from sweep.config.schema import conf_dir

EXPERIMENTS = PROJECT_ROOT / "experiments"
SHIPPED = sorted(p.stem for p in EXPERIMENTS.glob("*.yaml"))  # winners/ is `sweep export`'s


def swept_values(name: str) -> list[str]:
    """One override per value of each swept axis (``chunk.size=128``), parsed by Hydra's own
    override parser, so ``a,b`` (basic sweeper) and ``choice(a, b)`` (Optuna) both expand."""
    doc = yaml.safe_load((EXPERIMENTS / f"{name}.yaml").read_text(encoding="utf-8"))
    params = ((doc.get("hydra") or {}).get("sweeper") or {}).get("params") or {}
    parser = OverridesParser.create()
    out = []
    for key, spec in params.items():
        (override,) = parser.parse_overrides([f"{key}={spec}"])
        out += [f"{key}={value}" for value in override.sweep_string_iterator()]
    return out


def test_the_shipped_experiments_are_found() -> None:
    assert {"chunking_grid", "optuna_search"} <= set(SHIPPED)
    # conf/experiment is where Hydra looks for experiment=<name>; it is experiments/.
    assert (conf_dir() / "experiment").resolve() == EXPERIMENTS.resolve()


def test_swept_values_expand_both_sweepers() -> None:
    grid = swept_values("chunking_grid")
    assert "chunk.boundary=heading" in grid and "chunk.size=192" in grid
    optuna = swept_values("optuna_search")
    assert "chunk.size=64" in optuna and "retrieval=hybrid" in optuna


@pytest.mark.parametrize("name", SHIPPED)
def test_experiment_composes_and_checks(name: str) -> None:
    cfg = compose([f"experiment={name}"])
    check_config(cfg)
    for override in swept_values(name):
        cfg = compose([f"experiment={name}", override])
        check_config(cfg)
        key, value = override.split("=", 1)
        if "." in key:  # a value override lands on that key; a group one picks the file
            section, leaf = key.split(".", 1)
            assert str(getattr(getattr(cfg, section), leaf)) == value, override


def test_compose_reads_the_experiment() -> None:
    # What the file sets is in the composed config (chunking_grid ranks by the budget metric).
    assert compose(["experiment=chunking_grid"]).eval.headline == "evidence_recall_at_budget"


def test_the_demo_grid_fits_the_default_model() -> None:
    """Issue 45: at chunk.size=256 MiniLM (254 tokens besides its two special ones) read most
    demo chunks cut, and every run warned. The stored demo metrics (computed by the real model
    and held by tests/e2e/test_pinned_all_hashes.py) cover every configuration of the grid,
    and in none of them was a chunk cut."""
    import json

    pins = Path(__file__).resolve().parents[2] / "data" / "pins" / "demo_grid_metrics.json"
    stored = json.loads(pins.read_text(encoding="utf-8"))
    sizes = {v.split("=", 1)[1] for v in swept_values("chunking_grid")
             if v.startswith("chunk.size=")}
    assert sizes == {"128", "192"} and len(stored) == 20
    assert {f"chunk.size={s}" for s in sizes} == {
        part for key in stored for part in key.split() if part.startswith("chunk.size=")}
    assert {k: v["metrics"]["truncated_fraction"] for k, v in stored.items()} == {
        k: 0.0 for k in stored}
