"""The ``.hydra/`` files a job gets are the bytes Hydra's own ``_save_config`` writes
(``OmegaConf.to_yaml``), with `sweep.cli.hydra_files` writing them."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from hydra.core import utils as hydra_utils
from hydra.types import RunMode
from omegaconf import OmegaConf, open_dict

from sweep.cli.hydra_files import config_yaml, fast_hydra_files
from sweep.common import yamltext

JOBS = [
    ["chunk.size=128", "chunk.boundary=heading", "chunk.header=path", "retrieval=hybrid",
     "corpus.path=/data/corpus", "eval.latency_sample=20"],
    ["experiment=chunking_grid", "chunk.size=${eval.prompt_k}", "corpus.name='a b=c'"],
    # non-ASCII and a line break beside a space: the Python emitter writes these
    ["corpus.path='/data/d\u00e9j\u00e0 vu'", "golden.name='x \\ny'"],
]


def _three(loader: Any, job: list[str]) -> list[Any]:
    """What Hydra's run_job hands `_save_config`: the task config, the Hydra config, the
    task overrides."""
    master = loader.load_configuration("config", ["hydra.sweep.dir=/tmp/x", *job],
                                       RunMode.MULTIRUN)
    cfg = loader.load_sweep_config(master, job)
    with open_dict(cfg):
        cfg.hydra.job.num = 3
    task = copy.deepcopy(cfg)
    with open_dict(task):
        del task["hydra"]
    return [task, OmegaConf.masked_copy(cfg, "hydra"), cfg.hydra.overrides.task]


@pytest.mark.parametrize("job", JOBS, ids=["bench", "experiment", "python-emitter"])
def test_the_three_files_are_what_omegaconf_writes(loader: Any, job: list[str]) -> None:
    for part in _three(loader, job):
        assert config_yaml(part) == OmegaConf.to_yaml(part)


@pytest.mark.skipif(not yaml.__with_libyaml__, reason="PyYAML built without libyaml")
def test_the_bench_jobs_files_take_the_fast_path(loader: Any) -> None:
    for part in _three(loader, JOBS[0]):
        assert yamltext.emitters_agree(OmegaConf.to_container(part, enum_to_str=True))


def test_hydras_writer_is_replaced_with_the_same_bytes(loader: Any, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    original = hydra_utils._save_config
    monkeypatch.setattr(hydra_utils, "_save_config", original)  # restored after the test
    fast_hydra_files()
    fast_hydra_files()  # idempotent
    replaced = hydra_utils._save_config
    assert replaced is not original and getattr(replaced, "chunk_sweep", False)
    for name, part in zip(["config.yaml", "hydra.yaml", "overrides.yaml"],
                          _three(loader, JOBS[0]), strict=True):
        original(part, name, tmp_path / "hydra")
        replaced(part, name, tmp_path / "ours" / ".hydra")  # the folder is made
        assert (tmp_path / "ours" / ".hydra" / name).read_bytes() == \
            (tmp_path / "hydra" / name).read_bytes()
