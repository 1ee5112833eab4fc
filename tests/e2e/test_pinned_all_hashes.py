"""The slow half of the pins: every configuration of every shipped experiment keeps its
`config_hash`, and the demo grid, run in-process on the bundled demo corpus, gives the stored
metrics (tests/data/pins/; tests/pins.py says how to refresh them after an intended change).
The demo grid takes minutes on a cold cache, too long for the fast suite."""

from __future__ import annotations

import json
import math
from pathlib import Path

from pins import DEMO, HASHES, compute_demo, compute_hashes


def test_every_shipped_config_hash_is_pinned() -> None:
    assert compute_hashes() == json.loads(HASHES.read_text(encoding="utf-8"))


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return a == b


def test_demo_grid_metrics_are_pinned(tmp_path: Path) -> None:
    stored = json.loads(DEMO.read_text(encoding="utf-8"))
    got = compute_demo(str(tmp_path))
    assert set(got) == set(stored)
    for name, result in got.items():
        assert result["config_hash"] == stored[name]["config_hash"], name
        want = stored[name]["metrics"]
        assert set(result["metrics"]) == set(want), name
        differ = {k: (v, want[k]) for k, v in result["metrics"].items() if not _same(v, want[k])}
        assert not differ, f"{name}: {differ}"
