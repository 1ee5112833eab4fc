"""Every shipped experiment's configurations keep their `config_hash` (resume, the baseline
gate and `sweep rerun` find earlier runs by it). The stored values are in
tests/data/pins/config_hashes.json; tests/pins.py computes them and says how to refresh them
after a change that is meant to move a hash."""

from __future__ import annotations

import json

import pytest

from pins import HASHES, experiment_grid, shipped_experiments
from sweep.config.compose import compose, to_container
from sweep.config.identity import config_hash
from sweep.config.specs import build_job_spec
from sweep.data.golden import load_golden
from sweep.pipeline.memo import load_corpus_cached

STORED: dict[str, str] = json.loads(HASHES.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def fingerprints() -> tuple[str, str]:
    job = build_job_spec(compose(["cache.enabled=false"]))
    _, corpus_fp = load_corpus_cached(job.corpus, job.cache)
    return corpus_fp, load_golden(job.golden).fingerprint


def _fast_set() -> list[list[str]]:
    """The default, the whole demo grid, and each value of every other experiment's axes once
    (its first configuration with one axis changed): the full products are pinned in the slow
    tier (tests/e2e/test_pinned_all_hashes.py), as composing 240 Optuna configurations takes a
    minute."""
    jobs: list[list[str]] = [[]]
    for name in shipped_experiments():
        grid = experiment_grid(name)
        if name == "chunking_grid":
            jobs += [[f"experiment={name}", *combo] for combo in grid]
            continue
        first = grid[0]  # and every configuration that differs from it in one axis
        jobs += [[f"experiment={name}", *combo] for combo in grid
                 if sum(a != b for a, b in zip(combo, first, strict=True)) <= 1]
    return jobs


def test_every_shipped_configuration_is_pinned() -> None:
    expected = {"(default)"} | {
        " ".join([f"experiment={name}", *combo])
        for name in shipped_experiments() for combo in experiment_grid(name)}
    assert set(STORED) == expected, "refresh tests/data/pins (see tests/pins.py)"
    # distinct configurations of the demo grid have distinct hashes
    grid = [v for k, v in STORED.items() if k.startswith("experiment=chunking_grid")]
    assert len(set(grid)) == len(grid) == 20


@pytest.mark.parametrize("overrides", _fast_set(), ids=lambda o: " ".join(o) or "(default)")
def test_config_hash_is_pinned(overrides: list[str], fingerprints: tuple[str, str]) -> None:
    key = " ".join(overrides) or "(default)"
    assert config_hash(to_container(compose(overrides)), *fingerprints) == STORED[key]


