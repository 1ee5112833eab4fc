"""The generated reference (sweep.dev.reference): every key, command and metric is in it, and
what it says of a key's identity is what config_hash does."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest

from sweep.cli.main import COMMANDS
from sweep.config.compose import compose, to_container
from sweep.config.identity import (
    GATED_KEYS,
    GENERATION_SECTIONS,
    RESULT_SECTIONS,
    config_hash,
)
from sweep.config.schema import Config
from sweep.dev.reference import cli_page, config_rows, configuration_page, metric_functions
from sweep.evaluation import metrics

ALL_ON = ["rerank=cross_encoder", "index=hnsw", "generation=openai", "generation.model=m",
          "judge=openai", "judge.model=j"]


def _leaf_keys(cls: type, prefix: str = "") -> set[str]:
    out: set[str] = set()
    for f in dataclasses.fields(cls):
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else None
        if dataclasses.is_dataclass(default):
            out |= _leaf_keys(type(default), f"{prefix}{f.name}.")
        else:
            out.add(prefix + f.name)
    return out


@pytest.fixture(scope="module")
def rows() -> dict[str, dict[str, str]]:
    return {r["key"]: r for r in config_rows()}


def test_every_schema_key_has_one_row(rows: dict[str, dict[str, str]]) -> None:
    assert set(rows) == _leaf_keys(Config)
    page = configuration_page()
    assert all(f"| `{key}` |" in page for key in rows)


def test_defaults_and_choices_are_the_schema_s(rows: dict[str, dict[str, str]]) -> None:
    assert rows["chunk.size"]["default"] == f"`{Config().chunk.size}`"
    assert rows["eval.k"]["default"] == "`[1, 3, 5, 10]`"
    assert rows["corpus.path"]["default"] == "*required*"
    assert rows["retrieval.method"]["allowed"] == "`dense`, `bm25`, `hybrid`"
    # a comment beside the field in the schema is its note
    assert "sentences on each side" in rows["chunk.semantic.window"]["notes"]


def _changed(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value / 2 + 0.125
    if isinstance(value, str):
        return value + "-x"
    if isinstance(value, list):
        return [*value, value[-1] + 1] if value and isinstance(value[-1], int) else [*value, "x"]
    raise TypeError(type(value))


def _set(plain: dict[str, Any], key: str, value: Any) -> None:
    *path, leaf = key.split(".")
    node = plain
    for part in path:
        node = node[part]
    node[leaf] = value


def _get(plain: dict[str, Any], key: str) -> Any:
    node: Any = plain
    for part in key.split("."):
        node = node[part]
    return node


def test_what_the_reference_says_of_identity_is_what_config_hash_does(
        rows: dict[str, dict[str, str]]) -> None:
    """For every key of a result section: "no" -> changing it leaves the hash (even with
    every stage on and its strategy chosen); "yes" -> it changes the hash once its conditions
    hold, and leaves it in the default configuration, where no condition holds (every
    optional stage off, no strategy with settings of its own chosen)."""
    all_on = to_container(compose(ALL_ON))
    default = to_container(compose([]))
    checked = {"no": 0, "yes": 0, "off": 0}
    for key, row in rows.items():
        section, top = key.split(".")[:2]
        if section not in (*RESULT_SECTIONS, *GENERATION_SECTIONS):
            continue
        opened = copy.deepcopy(all_on)
        gate = GATED_KEYS.get(section, {}).get(top)
        if gate is not None:
            opened[section][gate[0]] = gate[1][0]
        other = copy.deepcopy(opened)
        _set(other, key, _changed(_get(other, key)))
        moved = config_hash(other, "c", "g") != config_hash(opened, "c", "g")
        says = row["identity"]
        assert moved == says.startswith("yes"), f"{key}: reference says {says!r}"
        checked["yes" if moved else "no"] += 1
        if says.startswith("yes, when"):  # every condition fails in the default config
            off = copy.deepcopy(default)
            base = config_hash(off, "c", "g")
            _set(off, key, _changed(_get(off, key)))
            assert config_hash(off, "c", "g") == base, f"{key} counts while its stage is off"
            checked["off"] += 1
    assert checked["yes"] > 40 and checked["no"] > 20 and checked["off"] > 20, checked


def test_every_command_has_its_help() -> None:
    page = cli_page()
    for name in COMMANDS:
        assert f"## `sweep {name}`" in page
        # argparse's usage line (baseline prints its own usage text, also naming itself)
        assert f"sweep {name}" in page.split(f"## `sweep {name}`", 1)[1].split("## ", 1)[0]


def test_every_public_metric_function_is_documented() -> None:
    names = [name for name, _ in metric_functions()]
    assert "recall_at_k" in names and "evidence_recall_at_budget" in names
    assert all(not n.startswith("_") for n in names)
    assert dict(metric_functions())["recall_at_k"] == metrics.recall_at_k.__doc__.strip(
        ).replace("\n    ", "\n")


def test_the_axes_page_lists_every_registered_value_with_its_settings() -> None:
    from sweep.common.registry import Entry
    from sweep.config.axes import AXES
    from sweep.dev.reference import axes_page
    from sweep.retrieval.index import INDEX

    page = axes_page()
    for axis, registry in AXES.items():
        assert f"## `{axis}`" in page
        assert all(f"| `{name}` |" in page for name in registry)
    assert "| `hnsw` |  | `index.M`, `index.ef_construction`, `index.ef_search` |" in page
    assert "| `chroma` | remote |" in page
    with INDEX.added(Entry("toy_kind", params={"nlist": 4}, doc="a toy")):
        assert "| `toy_kind` |  | `index.nlist` |  | a toy |" in axes_page()
