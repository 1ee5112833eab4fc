"""Does each axis's winner hold across embedding models? (issue 47)

A verdict can flip when the embedding model changes: the best chunk size under one model is not
always the best under another. When a sweep varies the model (the ``embedding=`` group, as the
summary names that axis, or ``embedding.*`` keys, which vary together as one choice), each
other axis is judged again under each model alone, with `axes.axis_effects` over that model's
configurations (the same cells, the same paired evidence), and the answers are set side by
side: the same best value under every model, or which model prefers which, with each model's
paired difference between its best and the best of the others.

Pure functions over the rows and per-question scores `sweep.decide.decision` already holds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sweep.decide import axes as ax
from sweep.decide.multiple import DEFAULT_CORRECTION
from sweep.decide.stats import N_RESAMPLES, SEED
from sweep.outputs.report import format_value

MODEL_PREFIX = "embedding."


def _label(value: Any) -> str:
    return format_value(value) if isinstance(value, float) else str(value)


def model_axes(axes: Sequence[str]) -> list[str]:
    """The swept keys that choose the embedding model (they vary together): the group
    (``embedding=minilm,minilm_static``, as the summary names it) or its keys."""
    return [a for a in axes if a == MODEL_PREFIX[:-1] or a.startswith(MODEL_PREFIX)]


def _model_of(row: Mapping[str, Any], keys: Sequence[str]) -> str:
    for name in (MODEL_PREFIX[:-1], f"{MODEL_PREFIX}name"):
        if name in keys:
            return str(row.get(name))
    return ", ".join(f"{k}={row.get(k)}" for k in keys)


def model_agreement(rows: Sequence[Mapping[str, Any]], axes: Sequence[str], metric: str,
                    scores: Sequence[ax.Scores | None] | None = None, *,
                    lower_is_better: bool = False, correction: str = DEFAULT_CORRECTION,
                    n: int = N_RESAMPLES, seed: int = SEED) -> list[dict[str, Any]]:
    """One entry per axis that is not the model, when two models or more were swept:
    ``axis``, ``models`` (in order of first appearance), ``best`` ({model: best value, or None
    where that model's configurations give no complete cell}), ``holds`` (one best value for
    every model that has one, and at least two have one), ``effects`` ({model: that model's
    `axis_effects` entry}) and ``text`` (one line). Empty when fewer than two models."""
    keys = model_axes(axes)
    others = [a for a in axes if a not in keys]
    if not keys or not others:
        return []
    models = list(dict.fromkeys(_model_of(r, keys) for r in rows))
    if len(models) < 2:
        return []
    per_model: dict[str, dict[str, dict[str, Any]]] = {}
    for model in models:
        mine = [i for i, r in enumerate(rows) if _model_of(r, keys) == model]
        effects = ax.axis_effects(
            [rows[i] for i in mine], others, metric,
            [scores[i] for i in mine] if scores is not None else None,
            lower_is_better=lower_is_better, correction=correction, n=n, seed=seed)
        per_model[model] = {e["axis"]: e for e in effects}
    out = []
    for axis in others:
        effects = {m: per_model[m][axis] for m in models if axis in per_model[m]}
        best = {m: e["best"] for m, e in effects.items()}
        judged = {m: b for m, b in best.items() if b is not None}
        if len(judged) < 2:
            continue
        holds = len({str(b) for b in judged.values()}) == 1
        entry = {"axis": axis, "models": models, "best": best, "holds": holds,
                 "effects": effects}
        entry["text"] = agreement_text(entry)
        out.append(entry)
    return out


def _against(effect: Mapping[str, Any], value: Any) -> str:
    """``128 -0.050 [-0.090, -0.010] worse``: ``value`` against this model's best."""
    item = next((i for i in effect["values"] if str(i["value"]) == str(value)), None)
    if item is None:
        return f"{value} not run"
    text = f"{_label(value)} {item['diff']:+.3f}"
    if item["lo"] is not None:
        text += (f" [{item['lo']:+.3f}, {item['hi']:+.3f}] "
                 + ("within noise" if item["within_noise"] else "worse"))
    return text


def agreement_text(entry: Mapping[str, Any]) -> str:
    """``chunk.size: best 256 under every model (minilm, minilm_static)`` or ``chunk.size:
    the best differs by model: minilm 256 (128 -0.050 [...] worse); minilm_static 128 (256
    -0.020 [...] within noise)``."""
    judged = {m: b for m, b in entry["best"].items() if b is not None}
    if entry["holds"]:
        value = next(iter(judged.values()))
        return (f"{entry['axis']}: best {_label(value)} under every model "
                f"({', '.join(judged)})")
    parts = []
    for model, value in judged.items():
        rivals = dict.fromkeys(str(b) for m, b in judged.items() if str(b) != str(value))
        against = "; ".join(_against(entry["effects"][model], r) for r in rivals)
        parts.append(f"{model} {_label(value)} ({against})")
    return f"{entry['axis']}: the best differs by model: " + "; ".join(parts)


def agreement_lines(entries: Sequence[Mapping[str, Any]], metric: str) -> list[str]:
    """The summary's lines, under "what each axis did"; none without two models."""
    if not entries:
        return []
    return [f"does each axis's best hold under every embedding model ({metric}, each model's "
            "configurations alone; the other model's best against this one's, paired):",
            *(f"  {e['text']}" for e in entries)]


def recheck_offer(axes: Sequence[str], top: int = 3) -> list[str]:
    """The line a one-model sweep ends its axis block with: a verdict that holds under this
    model may flip under another, and `sweep rerun` re-checks the top configurations under a
    second one (its report says whether their order holds). None when the sweep varied the
    model (`model_agreement` answers there) or varied nothing else."""
    if model_axes(axes) or not axes:
        return []
    return [f"  one embedding model in this sweep: `sweep rerun --top {top} embedding=OTHER` "
            "(e.g. minilm_static) re-checks the best configurations under a second model and "
            "says whether their order holds"]
