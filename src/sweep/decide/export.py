"""Exporting from a sweep: the winner as a Hydra experiment file, and the questions two
configurations score differently (what `sweep export` and `sweep flips` do; their options and
output are in sweep.cli.export and sweep.cli.flips)."""

from __future__ import annotations

import math
import re
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from sweep.common.csvcells import read_csv
from sweep.common.errors import SweepError
from sweep.common.files import atomic_write, read_text_regular
from sweep.common.paths import PROJECT_ROOT
from sweep.common.secret import scrub_tree
from sweep.config.identity import RESULT_SECTIONS
from sweep.config.naming import config_name
from sweep.decide.multiple import DEFAULT_CORRECTION
from sweep.decide.runs import SweepTable, load_table, read_per_question
from sweep.decide.stats import correction_line, paired_scores
from sweep.decide.winner import DEFAULT_MARGIN, Offer, check_margin, choose
from sweep.evaluation.catalog import is_question_metric, lower_is_better
from sweep.outputs import tracking
from sweep.outputs.report import format_value

# Where `sweep export` writes a winner when no --out is given.
WINNERS_DIR = PROJECT_ROOT / "experiments" / "winners"


def choose_winner(t: SweepTable, *, prefer: str = "best", margin: float = DEFAULT_MARGIN
                  ) -> tuple[dict[str, Any], str, Offer | None]:
    """The configuration to export from a table with its verdicts, the rule that decided and
    the cheaper configuration offered beside the best (`sweep.decide.winner.choose`)."""
    i, rule, offer = choose(t.rows, t.verdicts, t.metric, t.cost, t.latency, prefer=prefer,
                            margin=margin)
    return t.rows[i], rule, offer


def winner_sections(config: Mapping[str, Any], defaults: Mapping[str, Any] | None
                    ) -> dict[str, Any]:
    """The part of a job's resolved config that reproduces it as a Hydra experiment."""
    out = {k: config[k] for k in RESULT_SECTIONS if k in config}
    for extra in ("corpus", "golden"):
        if extra not in config:
            continue
        default = (defaults or {}).get(extra) or {}
        if defaults is None or any(v != default.get(k) for k, v in config[extra].items()):
            out[extra] = config[extra]
    return out


def winner_yaml(sections: Mapping[str, Any], header: Sequence[str]) -> str:
    lines = ["# @package _global_", *(f"# {h}" if h else "#" for h in header)]
    # a run of an older chunk-sweep may hold a URL with its password: the file never does
    return "\n".join(lines) + "\n" + yaml.safe_dump(scrub_tree(dict(sections)),
                                                   sort_keys=False)


def default_sections() -> dict[str, Any] | None:
    from sweep.config.compose import compose, to_container

    try:
        return to_container(compose([]))
    except SweepError:
        return None


@dataclass
class Export:
    """A sweep's winner, written as a Hydra experiment file."""

    table: SweepTable
    winner: dict[str, Any]
    rule: str
    config: dict[str, Any]
    name: str
    path: Path
    existed: bool
    offer: Offer | None = None  # the cheaper configuration offered beside the best
    command: str = ""  # the `sweep export ...` that wrote it


def export_winner(uri: str, experiment: str | None, sweep: str, metric: str | None,
                  name: str | None, out_dir: Path, *, prefer: str = "best",
                  margin: float = DEFAULT_MARGIN,
                  correction: str = DEFAULT_CORRECTION) -> Export:
    """Choose the sweep's winner on ``metric`` (None: the sweep's headline), write it to
    ``out_dir/NAME.yaml`` (sections that differ from the defaults) and tag the runs in MLflow.
    The winner is the best (the top row of `sweep compare`); with ``prefer="cheaper"``, the
    cheaper configuration offered beside it when shown within ``±margin`` of it
    (`sweep.decide.winner`)."""
    check_margin(margin)
    with tempfile.TemporaryDirectory(prefix="sweep-export-") as tmp:
        t = load_table(uri, experiment, sweep, metric, Path(tmp), correction=correction)
        winner, rule, offer = choose_winner(t, prefer=prefer, margin=margin)
        cfg_path = tracking.download_artifact(uri, winner["run_id"], "config.yaml",
                                              Path(tmp) / "winner")
        if cfg_path is None:
            raise SweepError(f"run {winner['run_id']} has no config.yaml artifact")
        config = yaml.safe_load(read_text_regular(cfg_path)) or {}
    name = name or config_name(config, t.swept)
    if not re.fullmatch(r"[A-Za-z0-9._-]+", name):
        raise SweepError(f"--name {name!r}: use letters, digits, '.', '_' and '-' only")
    sections = winner_sections(config, default_sections())
    now = datetime.now(UTC)
    shown = "  ".join(f"{m}={format_value(winner.get(m))}" for m in t.shown)
    command = (f"sweep export --metric {t.metric} --prefer {prefer} --margin {margin:g} "
               f"--correction {t.correction}")
    header = [
        f"Winner of sweep {t.parent['run_id']} (experiment {t.parent['experiment']}), "
        f"exported {now:%Y-%m-%d %H:%M} UTC by `{command}`",
        f"sweep folder: {t.parent.get('sweep_dir') or '-'}",
        f"run: {winner['run_id']}  config_hash: "
        f"{tracking.run_info(uri, winner['run_id'])['tags'].get('config_hash', '-')}",
        f"chosen by: {rule}",
        f"{correction_line(t.correction, t.n_tests, t.metric)}",
        f"metrics: {shown}",
        f"re-run: python -m sweep experiment=winners/{name}",
        f"gate it: sweep baseline update experiment=winners/{name}",
    ]
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}.yaml"
    existed = path.exists()
    atomic_write(path, winner_yaml(sections, header))
    tracking.set_tags(uri, winner["run_id"], {"winner": "true", "winner_name": name,
                                              "winner_metric": t.metric})
    tracking.set_tags(uri, t.parent["run_id"], {"winner_run_id": winner["run_id"],
                                                "winner_name": name})
    return Export(t, winner, rule, config, name, path, existed, offer, command)


def flip_rows(a: Any, b: Any, metric: str) -> list[dict[str, Any]]:
    """Questions scored in both where the two per_question tables disagree on ``metric``
    (binary metrics: 1 vs 0; graded: any difference), with the first relevant rank in each."""
    qids, va, vb = paired_scores(a, b, metric)
    ranks_a = _column(a, "first_relevant_rank")
    ranks_b = _column(b, "first_relevant_rank")
    questions = _column(a, "question")
    out = []
    for qid, x, y in zip(qids, va, vb, strict=True):
        if abs(x - y) <= 1e-12:
            continue
        out.append({"qid": qid, "question": questions.get(qid, ""), "a": x, "b": y,
                    "better": "a" if (x > y) != lower_is_better(metric) else "b",
                    "rank_a": ranks_a.get(qid), "rank_b": ranks_b.get(qid)})
    return out


def _column(df: Any, name: str) -> dict[str, Any]:
    if name not in df.columns:
        return {}
    out = {}
    for qid, value in zip(df["qid"].astype(str), df[name], strict=True):
        if value is None or (isinstance(value, float) and math.isnan(value)) or value == "":
            out[qid] = None
        elif name.endswith("rank"):
            out[qid] = int(float(value))
        else:
            out[qid] = value
    return out


def per_question_for(ref: str, uri: str, tmp: Path) -> tuple[Any, str]:
    """A per_question table from a job folder, a CSV file, or an MLflow run id."""
    p = Path(ref)
    if p.is_dir() and (p / "per_question.csv").is_file():
        p = p / "per_question.csv"
    if p.is_file():
        return read_csv(p, dtype={"qid": str}), str(p)
    info = tracking.run_info(uri, ref)
    df = read_per_question(uri, info["run_id"], tmp)
    if df is None:
        raise SweepError(f"run {ref} has no per_question.csv artifact")
    return df, f"{info['run_name'] or ref} ({ref})"


@dataclass
class Flips:
    name_a: str
    name_b: str
    metric: str
    n_paired: int
    rows: list[dict[str, Any]]  # flip_rows: the questions scored in both that differ


def flips(uri: str, run_a: str, run_b: str, metric: str) -> Flips:
    """The questions two configurations score differently on ``metric``."""
    with tempfile.TemporaryDirectory(prefix="sweep-flips-") as tmp:
        a, name_a = per_question_for(run_a, uri, Path(tmp))
        b, name_b = per_question_for(run_b, uri, Path(tmp))
    for df in (a, b):
        if metric not in df.columns:
            cols = [c for c in df.columns if is_question_metric(c)]
            raise SweepError(f"unknown per-question metric {metric!r} "
                             f"(available: {', '.join(cols)})")
    qids, _, _ = paired_scores(a, b, metric)
    return Flips(name_a, name_b, metric, len(qids), flip_rows(a, b, metric))
