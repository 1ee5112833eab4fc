"""The reference pages of the documentation, generated from the code so they cannot drift:
every configuration key (type, default, allowed values, whether it enters the configuration's
identity), every subcommand's options, every metric's definition.

    python -m sweep.dev.reference OUT_DIR      # writes configuration.md, axes.md, cli.md, metrics.md

`make docs` builds them through docs/hooks.py (the site gets them; the repository does not).
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import inspect
import io
import sys
import tokenize
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

PAGES = ("configuration.md", "axes.md", "cli.md", "metrics.md")


def _field_comments(cls: type) -> dict[str, str]:
    """The comments written beside a dataclass field (the block above it and the one after
    it on its line), joined: the schema's comments are its documentation."""
    source = inspect.getsource(cls)
    lines = source.splitlines()
    comments: dict[int, str] = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            comments[tok.start[0]] = tok.string.lstrip("#").strip()
    names = {f.name for f in dataclasses.fields(cls)}
    out: dict[str, str] = {}
    block: list[str] = []
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if stripped.startswith("#"):
            block.append(comments.get(number, ""))
            continue
        name = stripped.split(":", 1)[0].strip()
        if name in names and ":" in stripped:
            parts = [*block]
            if number in comments and not stripped.startswith("#"):
                parts.append(comments[number])
            out[name] = " ".join(p for p in parts if p)
        block = []
    return out


def _type_text(tp: Any) -> tuple[str, str]:
    """A field type as (name, allowed values)."""
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return "choice", ", ".join(f"`{m.value}`" for m in tp)
    origin = typing.get_origin(tp)
    if origin is list:
        (arg,) = typing.get_args(tp)
        return f"list[{getattr(arg, '__name__', arg)}]", ""
    return getattr(tp, "__name__", str(tp)), ""


def _default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


def _show(value: Any) -> str:
    if value == "???":  # omegaconf's MISSING: the key has no default and must be set
        return "*required*"
    if isinstance(value, enum.Enum):
        value = value.value
    text = repr(value) if isinstance(value, str) else str(value)
    return f"`{text}`".replace("|", "\\|")


def config_rows() -> Iterator[dict[str, str]]:
    """One row per leaf key of the schema: key, type, default, allowed, identity, notes."""
    from sweep.config.axes import AXES as axes
    from sweep.config.identity import describe_key
    from sweep.config.schema import Config

    def walk(cls: type, prefix: list[str]) -> Iterator[dict[str, str]]:
        hints = typing.get_type_hints(cls)
        notes = _field_comments(cls)
        for f in dataclasses.fields(cls):
            tp = hints[f.name]
            if dataclasses.is_dataclass(tp):
                yield from walk(tp, [*prefix, f.name])
                continue
            path = [*prefix, f.name]
            kind, allowed = _type_text(tp)
            registry = axes.get(".".join(path))
            if registry is not None and not allowed:  # a free-form key with named values
                allowed = ", ".join(f"`{n}`" for n in registry)
            section, key, *rest = path
            yield {"key": ".".join(path), "type": kind, "default": _show(_default(f)),
                   "allowed": allowed, "identity": describe_key(section, key, *rest[:1]),
                   "notes": notes.get(f.name, "").replace("|", "\\|")}

    for f in dataclasses.fields(Config):
        yield from walk(typing.get_type_hints(Config)[f.name], [f.name])


def configuration_page() -> str:
    from sweep.config.schema import Config

    out = ["# Configuration keys", "",
           "Generated from `sweep.config.schema` (types, defaults, the comments beside each "
           "field) and `sweep.config.identity` (whether a key enters `config_hash`: a key that "
           "does can change a metric, so two runs that differ in it are two configurations). "
           "Set any key on the command line (`python -m sweep chunk.size=512`) or in a config "
           "group's YAML under `conf/`.", ""]
    sections = [f.name for f in dataclasses.fields(Config)]
    rows = list(config_rows())
    for section in sections:
        out += [f"## `{section}`", "", "| key | type | default | identity | notes |",
                "|---|---|---|---|---|"]
        for row in rows:
            if row["key"].split(".")[0] != section:
                continue
            notes = row["notes"]
            if row["allowed"]:  # a free-form key (a str) only names some of its values
                lead = "named values" if row["type"] == "str" else "one of"
                notes = f"{lead} {row['allowed']}" + (f". {notes}" if notes else "")
            out.append(f"| `{row['key']}` | {row['type']} | {row['default']} | "
                       f"{row['identity']} | {notes} |")
        out.append("")
    return "\n".join(out)


def axes_page() -> str:
    """One table per axis, read off its registry: each value, its traits, the settings only it
    reads (with their defaults), and what it is."""
    from sweep.common.registry import Traits
    from sweep.config.axes import AXES

    out = ["# Axes", "",
           "Generated from the axis registries (`sweep.common.registry`; each axis's registry "
           "sits next to its stage's code, gathered by `sweep.config.axes`). An entry's "
           "*settings* are the keys of its section that only it reads: they enter "
           "`config_hash` only when it is chosen. How to add a value: "
           "[Development](../development.md#add-an-axis-value-in-one-file).", ""]
    traits = Traits.names()
    for axis, registry in AXES.items():
        section = axis.split(".")[0]
        off = f" Off value: `{registry.off}`." if registry.off is not None else ""
        out += [f"## `{axis}`", "", f"{len(registry)} values.{off}", "",
                "| value | traits | settings | model settings | notes |", "|---|---|---|---|---|"]
        for name, entry in registry.items():
            marks = ", ".join(("" if getattr(entry.traits, t) else "not ")
                              + t.replace("_", " ") for t in traits
                              if getattr(entry.traits, t) != getattr(Traits(), t))
            params = ", ".join(f"`{section}.{k}`" for k in entry.params) or "none"
            models = ", ".join(f"`{section}.{k}`" for k in entry.model_keys) or ""
            out.append(f"| `{name}` | {marks} | {params} | {models} | "
                       f"{entry.doc.replace('|', chr(92) + '|')} |")
        out.append("")
    out += ["Traits: *remote* (answers from outside the machine's files: never reused by the "
            "gate's memo), *needs embedder*, *tiling* (chunks tile the document), *costs money* "
            "(counted by `sweep estimate`), *deterministic* (listed when a value is not).", ""]
    return "\n".join(out)


def _help_of(name: str) -> str:
    """What ``sweep NAME --help`` prints, run in this process."""
    from sweep.cli.main import COMMANDS

    buffer = io.StringIO()
    with (contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer),
          contextlib.suppress(SystemExit)):
        COMMANDS[name](["--help"])
    return buffer.getvalue().rstrip()


def cli_page() -> str:
    from sweep.cli.main import COMMANDS, usage

    out = ["# Commands", "",
           "Generated from the command line itself: `sweep help` (the list is read off the "
           "command modules' docstrings), then `sweep COMMAND --help` for each command.", "",
           "```text", usage().rstrip(), "```", ""]
    for name in COMMANDS:
        out += [f"## `sweep {name}`", "", "```text", _help_of(name), "```", ""]
    return "\n".join(out)


def metric_functions() -> list[tuple[str, str]]:
    """The public metric functions of `sweep.evaluation.metrics`, in source order, with their
    docstrings."""
    from sweep.evaluation import metrics

    found = []
    for name, fn in vars(metrics).items():
        if (name.startswith("_") or not inspect.isfunction(fn)
                or fn.__module__ != metrics.__name__):
            continue
        found.append((inspect.getsourcelines(fn)[1], name, inspect.getdoc(fn) or ""))
    return [(name, doc) for _, name, doc in sorted(found)]


def metric_rows() -> Iterator[dict[str, str]]:
    """One row per entry of the metric registry: name, kind, direction, what it is."""
    from sweep.evaluation.catalog import METRICS

    kinds = {"chunk": "per question (answered by a chunk)",
             "doc": "per question (names a document)", "run": "per run"}
    for entry in METRICS:
        yield {"name": entry.pattern, "kind": kinds[entry.level],
               "per_k": "yes" if entry.per_k else "",
               "direction": "lower" if entry.lower_is_better else "higher",
               "doc": entry.doc.replace("|", "\\|")}


def metrics_page() -> str:
    out = ["# Metric registry", "",
           "Generated from the metric registry (`sweep.evaluation.catalog.METRICS`): every "
           "metric a run reports, the direction the tables sort and judge it in, and, below, "
           "the functions of `sweep.evaluation.metrics` that compute them. A per-question "
           "metric is averaged over the questions it applies to (never an orphan scored as "
           "0) and can be the headline (`eval.headline`); `{k}` is each of `eval.k` and "
           "`eval.prompt_k`; a metric derived from one (`recall_at_5_needs_2`, "
           "`ann_tax_recall_at_5` has its own entry) keeps its direction; a name not listed "
           "ranks highest first. What they mean: [Metrics](../concepts/metrics.md); adding "
           "one: [Development](../development.md#add-a-metric-in-one-file).", "",
           "| metric | kind | per k | better | what |", "|---|---|---|---|---|"]
    for row in metric_rows():
        out.append(f"| `{row['name']}` | {row['kind']} | {row['per_k']} | {row['direction']} "
                   f"| {row['doc']} |")
    out += ["", "## Metric functions", ""]
    for name, doc in metric_functions():
        out += [f"### `{name}`", "", doc or "*(no docstring)*", ""]
    return "\n".join(out)


def generate() -> dict[str, str]:
    """The reference pages, by file name."""
    return {"configuration.md": configuration_page(), "axes.md": axes_page(),
            "cli.md": cli_page(), "metrics.md": metrics_page()}


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m sweep.dev.reference OUT_DIR", file=sys.stderr)
        return 2
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    for name, text in generate().items():
        (out / name).write_text(text + "\n", encoding="utf-8")
        print(out / name)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
