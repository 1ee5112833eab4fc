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
    SCOPED_KEYS,
    UNHASHED_KEYS,
    config_hash,
    identity_payload,
)
from sweep.config.schema import Config

# Every optional stage switched on, so that each of its keys can count.
ALL_ON = ["rerank=cross_encoder", "generation=openai", "generation.model=m",
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
        if key in UNHASHED_KEYS.get(section, ()) or _out_of_scope(plain_all_on, section, key):
            continue
        other = copy.deepcopy(plain_all_on)
        other[section][key] = _changed(other[section][key])
        assert config_hash(other, "c", "g") != base, f"{section}.{key} does not change config_hash"
        checked += 1
    assert checked > 40


def _out_of_scope(plain: dict[str, Any], section: str, key: str) -> bool:
    if section not in SCOPED_KEYS:
        return False
    selector, value, keys = SCOPED_KEYS[section]
    return key in keys and str(plain[section][selector]) != value


SERVED_ON = ["embedding=served_minilm", "rerank=served"]


def test_every_key_of_a_served_model_is_classified() -> None:
    plain = _plain(SERVED_ON)
    base = config_hash(plain, "c", "g")
    scoped = set(SCOPED_KEYS["embedding"][2])
    assert scoped <= set(plain["embedding"])
    for section in ("embedding", "rerank"):
        for key in plain[section]:
            other = copy.deepcopy(plain)
            other[section][key] = _changed(other[section][key])
            same = config_hash(other, "c", "g") == base
            assert same == (key in UNHASHED_KEYS.get(section, ())), f"{section}.{key}"
    # where the model is served from and what it costs are not its identity
    assert {"base_url", "price_per_mtok", "api_key_env"} <= set(UNHASHED_KEYS["embedding"])


def test_served_only_keys_stay_out_of_a_local_model_s_hash() -> None:
    # so the new keys changed no earlier configuration's config_hash
    plain = _plain([])
    payload = identity_payload(plain, "c", "g")
    assert not set(SCOPED_KEYS["embedding"][2]) & set(payload["embedding"])
    assert config_hash(plain, "c", "g") == config_hash(
        _plain(["embedding.model=x", "embedding.dimensions=64", "embedding.fingerprint=v2"]),
        "c", "g")


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
                "judge.model=y"]), "c", "g")
