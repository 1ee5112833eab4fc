"""The one classification of config sections, and config_hash built from it."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest

from sweep.config.compose import compose, to_container
from sweep.config.identity import (
    ALL_SECTIONS,
    OPERATIONAL_SECTIONS,
    RESULT_SECTIONS,
    UNHASHED_KEYS,
    config_hash,
)
from sweep.config.schema import Config

# Every optional stage switched on, so that each of its keys can count.
ALL_ON = ["rerank=cross_encoder", "index=hnsw", "generation=openai", "generation.model=m",
          "judge=openai", "judge.model=j"]


def _plain(overrides: list[str]) -> dict[str, Any]:
    return to_container(compose(overrides))


def _changed(value: Any) -> Any:
    """A different value of the same type (enums are plain strings here)."""
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


def _leaves(plain: dict[str, Any], sections: tuple[str, ...]) -> list[tuple[str, str]]:
    return [(s, k) for s in sections for k in plain.get(s, {})]


def test_every_schema_section_is_classified_once() -> None:
    schema = {f.name for f in dataclasses.fields(Config)}
    assert len(ALL_SECTIONS) == len(set(ALL_SECTIONS)), "a section is classified twice"
    assert set(ALL_SECTIONS) == schema, (
        f"classify in sweep.config.identity: {sorted(schema ^ set(ALL_SECTIONS))}")
    defaults = Config()
    for section, keys in UNHASHED_KEYS.items():
        fields = {f.name for f in dataclasses.fields(getattr(defaults, section))}
        assert set(keys) <= fields, f"{section}: {set(keys) - fields} are not keys of the schema"


@pytest.fixture(scope="module")
def plain_all_on() -> dict[str, Any]:
    return _plain(ALL_ON)


def test_every_result_key_changes_the_hash(plain_all_on: dict[str, Any]) -> None:
    base = config_hash(plain_all_on, "c", "g")
    sections = (*RESULT_SECTIONS, "generation", "judge")
    checked = 0
    for section, key in _leaves(plain_all_on, sections):
        if key in UNHASHED_KEYS.get(section, ()):
            continue
        other = copy.deepcopy(plain_all_on)
        other[section][key] = _changed(other[section][key])
        assert config_hash(other, "c", "g") != base, f"{section}.{key} does not change config_hash"
        checked += 1
    assert checked > 40


def test_keys_that_change_no_result_leave_the_hash(plain_all_on: dict[str, Any]) -> None:
    base = config_hash(plain_all_on, "c", "g")
    leaves = _leaves(plain_all_on, OPERATIONAL_SECTIONS) + [
        (s, k) for s, keys in UNHASHED_KEYS.items() for k in keys]
    assert ("eval", "latency_sample") in leaves and ("tracking", "uri") in leaves
    for section, key in leaves:
        other = copy.deepcopy(plain_all_on)
        other[section][key] = _changed(other[section][key])
        assert config_hash(other, "c", "g") == base, f"{section}.{key} changes config_hash"


def test_fingerprints_change_the_hash(plain_all_on: dict[str, Any]) -> None:
    base = config_hash(plain_all_on, "c", "g")
    assert config_hash(plain_all_on, "c2", "g") != base
    assert config_hash(plain_all_on, "c", "g2") != base


def test_a_reranked_configuration_is_not_the_plain_one() -> None:
    # The bug: rerank was left out of the hash, so resume skipped the reranked job as FINISHED.
    plain = _plain([])
    reranked = _plain(["rerank=cross_encoder"])
    assert config_hash(plain, "c", "g") != config_hash(reranked, "c", "g")
    other_model = _plain(["rerank=cross_encoder", "rerank.model=/some/other"])
    assert config_hash(other_model, "c", "g") != config_hash(reranked, "c", "g")


def test_settings_of_a_stage_that_is_off_change_nothing() -> None:
    plain = _plain([])
    assert config_hash(plain, "c", "g") == config_hash(
        _plain(["rerank.model=/elsewhere", "rerank.pool=20", "generation.model=x",
                "judge.model=y", "index.ef_search=8", "index.nlist=4"]), "c", "g")


def test_exact_search_keeps_the_hash_from_before_the_index_axis() -> None:
    # Exact search is what every run did before `index` existed: its results, and so its
    # hash, must not change (resume and the baseline gate depend on it).
    plain = _plain([])
    before = {k: v for k, v in plain.items() if k != "index"}
    assert config_hash(plain, "c", "g") == config_hash(before, "c", "g")
    assert config_hash(_plain(["index=hnsw"]), "c", "g") != config_hash(plain, "c", "g")
    assert config_hash(_plain(["index=hnsw", "index.ef_search=8"]), "c", "g") != \
        config_hash(_plain(["index=hnsw"]), "c", "g")


def test_every_input_key_says_how_it_reaches_the_hash() -> None:
    from sweep.config.identity import INPUT_KEYS, INPUT_SECTIONS

    defaults = Config()
    for section in INPUT_SECTIONS:
        fields = {f.name for f in dataclasses.fields(getattr(defaults, section))}
        assert set(INPUT_KEYS[section]) == fields, (
            f"classify {section} keys in sweep.config.identity.INPUT_KEYS: "
            f"{sorted(fields ^ set(INPUT_KEYS[section]))}")
        assert set(INPUT_KEYS[section].values()) <= {"fingerprint", "label"}
