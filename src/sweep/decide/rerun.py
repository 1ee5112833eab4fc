"""``sweep rerun``: the top N configurations of a finished sweep, again, with a few overrides.

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

import argparse
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from itertools import combinations
from pathlib import Path
from typing import Any

import yaml

from sweep.common.errors import SweepError
from sweep.decide.table import (
    default_sections,
    default_uri,
    format_value,
    load_table,
    lower_is_better,
    selection_args,
    winner_name,
    winner_sections,
    winner_yaml,
)
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
                     defaults: Mapping[str, Any] | None, header: str) -> dict[str, str]:
    """File name -> YAML of one experiment per configuration, minus the sections the
    overrides replace. Names are unique and keep the original rank order."""
    dropped = group_overrides(overrides)
    files: dict[str, str] = {}
    for rank, config in enumerate(configs, start=1):
        sections = {k: v for k, v in winner_sections(config, defaults).items()
                    if k not in dropped}
        name = f"r{rank:02d}-{winner_name(config)}"
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


def _key(params: Mapping[str, Any], swept: Sequence[str]) -> str:
    return ", ".join(f"{p}={params.get(p)}" for p in swept)


def cmd_rerun(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="sweep rerun",
        description="Re-run the top N configurations of a finished sweep with overrides, as "
        "a new sweep (e.g. generation=extractive on the best 3, or embedding=minilm after a "
        "static-model sweep).")
    selection_args(parser)
    parser.add_argument("--top", type=int, required=True, help="how many configurations")
    parser.add_argument("--metric", help="rank by this metric (default: the sweep's headline)")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the command and the experiment files, run nothing")
    parser.add_argument("overrides", nargs="*",
                        help="overrides for every re-run, e.g. generation=extractive")
    args = parser.parse_args(argv)
    if args.top < 1:
        raise SweepError(f"--top {args.top}: must be >= 1")
    uri = args.tracking_uri or default_uri()
    with tempfile.TemporaryDirectory(prefix="sweep-rerun-") as tmp_name:
        tmp = Path(tmp_name)
        t = load_table(uri, args.experiment, args.sweep, args.metric, tmp / "table")
        chosen = t.rows[: args.top]
        configs = []
        for row in chosen:
            path = tracking.download_artifact(uri, row["run_id"], "config.yaml",
                                              tmp / "cfg" / row["run_id"])
            if path is None:
                raise SweepError(f"run {row['run_id']} has no config.yaml artifact")
            configs.append(yaml.safe_load(path.read_text(encoding="utf-8")) or {})
        files = experiment_files(configs, args.overrides, default_sections(),
                                 f"sweep rerun of {t.parent['run_id']} by {t.metric}")
        folder = tmp / "conf" / "experiment" / "rerun"
        folder.mkdir(parents=True)
        for name, text in files.items():
            (folder / f"{name}.yaml").write_text(text, encoding="utf-8")
        cmd = [sys.executable, "-m", "sweep", "-m",
               f"experiment={','.join(f'rerun/{n}' for n in files)}",
               f"hydra.searchpath=[file://{tmp / 'conf'}]", f"tracking.uri={uri}",
               *args.overrides]
        print(f"re-running the top {len(files)} of sweep {t.parent['run_id']} by {t.metric}:")
        for row in chosen:
            print(f"  {row['rank']:>2}. {_key(row, t.swept)}  "
                  f"{t.metric}={format_value(row.get(t.metric))}")
        if args.dry_run:
            for name, text in files.items():
                print(f"--- {name}.yaml\n{text}", end="")
            print("command: " + " ".join(cmd))
            return 0
        rc = subprocess.run(cmd, check=False).returncode
        if rc != 0:
            print(f"error: the re-run sweep exited with {rc}", file=sys.stderr)
            return rc
        fine = load_table(uri, t.parent["experiment"], "latest", args.metric, tmp / "fine")
    _report_agreement(t, chosen, fine)
    return 0


def _report_agreement(coarse: Any, chosen: Sequence[Mapping[str, Any]], fine: Any) -> None:
    """Old rank vs new rank of the re-run configurations, matched on the old sweep's axes."""
    swept = coarse.swept
    old = [_key(r, swept) for r in chosen]
    new = {_key(r["params"], swept): r for r in fine.rows}
    values = {k: float(new[k][fine.metric]) for k in old
              if k in new and new[k].get(fine.metric) is not None}
    print(f"\nranking before -> after ({fine.metric}):")
    for i, k in enumerate(old, start=1):
        r = new.get(k)
        after = f"#{r['rank']}  {format_value(r.get(fine.metric))}" if r else "missing"
        print(f"  #{i} -> {after}  {k}")
    a = agreement(old, values, not lower_is_better(fine.metric))
    if a["pairs"]:
        print(f"agreement: {a['pairs_agree']:.0%} of {a['pairs']} pairs in the same order; "
              f"the first configuration before is {'also' if a['top1_same'] else 'not'} the "
              "best after")
    print(f"new sweep: {fine.parent['run_id']} (sweep compare --sweep {fine.parent['run_id']})")
