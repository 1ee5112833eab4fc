"""What ``sweep rerun`` does (options and output: sweep.cli.rerun): the top N configurations of a finished sweep, again, with a few overrides.

Two uses, one mechanism:

* **cost control**: retrieval on every configuration, the expensive generation half only on
  the best few (``sweep rerun --top 3 generation=openai ...``);
* **coarse to fine**: a whole grid with the fast static model, then only the top N with the
  transformer (``sweep rerun --top 4 embedding=minilm``), with a report of how well the coarse
  ranking predicted the fine one.

Each chosen configuration is written as a Hydra experiment file (the same sections
``sweep export`` writes) into a temporary config folder, and one multirun sweeps over them, so
the result is an ordinary sweep: one parent run, one child per configuration, comparable with
``sweep compare``. A group override (``embedding=minilm``) replaces that section of every
experiment file; a value override (``eval.prompt_k=3``) applies on top as usual.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from itertools import combinations
from pathlib import Path
from typing import Any

import yaml

from sweep.common.errors import SweepError
from sweep.common.files import read_text_regular
from sweep.config.identity import INPUT_SECTIONS
from sweep.config.naming import config_name
from sweep.decide.export import winner_sections, winner_yaml
from sweep.outputs import tracking


def group_overrides(overrides: Sequence[str]) -> set[str]:
    """Top-level sections the overrides choose a group option for (``embedding=minilm``)."""
    out = set()
    for o in overrides:
        key = o.split("=", 1)[0].lstrip("+~")
        if "=" in o and "." not in key and "/" not in key:
            out.add(key)
    return out


def experiment_files(configs: Sequence[Mapping[str, Any]], overrides: Sequence[str],
                     defaults: Mapping[str, Any] | None, header: str,
                     swept: Sequence[str] = ()) -> dict[str, str]:
    """File name -> YAML of one experiment per configuration, minus the sections the
    overrides replace. Names are unique and keep the original rank order; they name the
    settings ``swept`` (`config_name`)."""
    dropped = group_overrides(overrides)
    files: dict[str, str] = {}
    for rank, config in enumerate(configs, start=1):
        sections = {k: v for k, v in winner_sections(config, defaults).items()
                    if k not in dropped}
        name = f"r{rank:02d}-{config_name(config, swept)}"
        files[name] = winner_yaml(sections, [f"{header}, rank {rank}"])
    return files


def agreement(coarse: Sequence[str], fine: Mapping[str, float], higher_is_better: bool
              ) -> dict[str, Any]:
    """How well the coarse ranking (ids, best first) predicted the fine metric values.

    ``pairs_agree``: of the pairs of configurations with different fine values, the fraction
    the coarse ranking ordered the same way (Kendall's concordance); ``top1_same``: the coarse
    winner is also the fine winner (or tied with it).
    """
    ids = [i for i in coarse if i in fine]
    sign = 1.0 if higher_is_better else -1.0
    concordant = discordant = 0
    for a, b in combinations(ids, 2):  # a ranked above b by the coarse pass
        diff = (fine[a] - fine[b]) * sign
        if diff > 0:
            concordant += 1
        elif diff < 0:
            discordant += 1
    best = max(fine[i] * sign for i in ids) if ids else None
    return {
        "n": len(ids),
        "pairs": concordant + discordant,
        "pairs_agree": concordant / (concordant + discordant) if concordant + discordant
        else None,
        "top1_same": bool(ids) and fine[ids[0]] * sign == best,
    }


def run_configs(uri: str, rows: Sequence[Mapping[str, Any]], folder: Path
                ) -> list[dict[str, Any]]:
    """The config.yaml artifact of each run, in order."""
    configs = []
    for row in rows:
        path = tracking.download_artifact(uri, row["run_id"], "config.yaml",
                                          folder / row["run_id"])
        if path is None:
            raise SweepError(f"run {row['run_id']} has no config.yaml artifact")
        configs.append(yaml.safe_load(read_text_regular(path)) or {})
    return configs


def rerun_command(files: Mapping[str, str], conf_root: Path, uri: str,
                  overrides: Sequence[str]) -> list[str]:
    """Write the experiment files under ``conf_root/experiment/rerun/`` and return the one
    multirun that sweeps over them."""
    folder = conf_root / "experiment" / "rerun"
    folder.mkdir(parents=True)
    for name, text in files.items():
        (folder / f"{name}.yaml").write_text(text, encoding="utf-8")
    return [sys.executable, "-m", "sweep", "-m",
            f"experiment={','.join(f'rerun/{n}' for n in files)}",
            f"hydra.searchpath=[file://{conf_root}]", f"tracking.uri={uri}", *overrides]


def axes_key(params: Mapping[str, Any], swept: Sequence[str]) -> str:
    """A configuration named by its values on the sweep's axes (matches runs across sweeps)."""
    return ", ".join(f"{p}={params.get(p)}" for p in swept)



_INPUT_NAMES = {"corpus": "corpus", "golden": "golden set"}


def input_change(before: Sequence[Mapping[str, Any]], after: Sequence[Mapping[str, Any]]
                 ) -> str | None:
    """One line naming each input (corpus, golden set) whose content fingerprint differs
    between the re-run configurations before and after, or None when they scored the same
    inputs (or a side has no fingerprints: runs logged before they were tagged)."""
    def fingerprints(rows: Sequence[Mapping[str, Any]], name: str) -> set[str]:
        return {fp for r in rows if (fp := (r.get("inputs") or {}).get(name))}

    changes = []
    for name in INPUT_SECTIONS:
        old, new = fingerprints(before, name), fingerprints(after, name)
        if old and new and old != new:
            changes.append(f"{_INPUT_NAMES.get(name, name)} "
                           f"{','.join(sorted(f[:12] for f in old))} -> "
                           f"{','.join(sorted(f[:12] for f in new))}")
    if not changes:
        return None
    return ("warning: the re-run scored different inputs than the sweep it re-ranks ("
            + "; ".join(changes) + "): before and after are not comparable")
