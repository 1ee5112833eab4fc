"""A misspelt key added with ``+`` (issue 30): ``+chunk.sise=256``, the form Hydra's own hint
suggests, composed, ran with exit 0 and was read by nothing. Now every key the schema lacks
fails before any work, with the nearest known key."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import run_cli
from sweep.common.errors import SweepError
from sweep.config.compose import compose, unknown_keys


@pytest.mark.parametrize(("override", "line"), [
    ("+chunk.sise=256", "config: chunk.sise: unknown key; did you mean chunk.size?"),
    ("++chunk.overlapp=8", "config: chunk.overlapp: unknown key; did you mean chunk.overlap?"),
    ("+index.ef_serch=64", "config: index.ef_serch: unknown key; did you mean index.ef_search?"),
    ("+retreival.method=bm25", "config: retreival: unknown key; did you mean retrieval?"),
])
def test_an_unknown_key_added_with_plus_is_refused(override: str, line: str) -> None:
    with pytest.raises(SweepError) as err:
        compose([override])
    assert str(err.value).startswith(line)


def test_an_unknown_key_far_from_any_lists_the_known_ones() -> None:
    with pytest.raises(SweepError) as err:
        compose(["+chunk.zzzz=1"])
    assert "config: chunk.zzzz: unknown key (known under chunk: " in str(err.value)
    assert "size, overlap" in str(err.value)


def test_the_default_and_every_shipped_experiment_have_no_unknown_key() -> None:
    from omegaconf import OmegaConf

    from sweep.common.paths import PROJECT_ROOT

    for name in ["", *sorted(p.stem for p in (PROJECT_ROOT / "experiments").glob("*.yaml"))]:
        cfg = compose([f"experiment={name}"] if name else [])
        assert unknown_keys(OmegaConf.structured(cfg)) == [], name


def test_the_command_fails_before_any_job(tmp_path: Path) -> None:
    res = run_cli("-m", "sweep", "-m", "chunk.size=128,256", "+chunk.sise=256",
                  "tracking=off", cwd=tmp_path)
    assert res.returncode == 1
    assert "error: config: chunk.sise: unknown key; did you mean chunk.size?" in res.stderr
    assert not (tmp_path / "multirun").exists() and not (tmp_path / "outputs").exists()
