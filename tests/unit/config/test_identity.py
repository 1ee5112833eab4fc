"""The one classification of config sections, and config_hash built from it."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest

from sweep.config.compose import compose, to_container
from sweep.config.identity import (
    ALL_SECTIONS,
    GATED_KEYS,
    OPERATIONAL_SECTIONS,
    RESULT_SECTIONS,
    UNHASHED_KEYS,
    config_hash,
    gate_open,
    identity_payload,
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
    if isinstance(value, dict):  # a nested sub-config (chunk.semantic): change every leaf
        return {k: _changed(v) for k, v in value.items()}
    raise TypeError(type(value))


def _gate_opened(plain: dict[str, Any], section: str, key: str) -> dict[str, Any]:
    """``plain`` with the strategy that ``section.key`` belongs to selected."""
    out = copy.deepcopy(plain)
    gate = GATED_KEYS.get(section, {}).get(key)
    if gate is not None:
        out[section][gate[0]] = gate[1][0]
    return out


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
    sections = (*RESULT_SECTIONS, "generation", "judge")
    checked = 0
    for section, key in _leaves(plain_all_on, sections):
        if key in UNHASHED_KEYS.get(section, ()):
            continue
        opened = _gate_opened(plain_all_on, section, key)
        other = copy.deepcopy(opened)
        other[section][key] = _changed(other[section][key])
        assert config_hash(other, "c", "g") != config_hash(opened, "c", "g"), (
            f"{section}.{key} does not change config_hash")
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


def test_settings_of_a_strategy_not_chosen_change_nothing() -> None:
    # Semantic settings count only with boundary=semantic, parent ones only with unit=parent.
    plain = _plain([])
    assert config_hash(plain, "c", "g") == config_hash(
        _plain(["chunk.semantic.threshold=50", "chunk.semantic.model=x",
                "chunk.cluster.piece_tokens=10", "retrieval.parent_max_tokens=9",
                "retrieval.window_sentences=1"]), "c", "g")
    for section, key, gate in [(s, k, g) for s, keys in GATED_KEYS.items()
                               for k, g in keys.items()]:
        assert key in plain[section] and gate[0] in plain[section], f"{section}.{key}"


@pytest.mark.parametrize("override", [
    "chunk.semantic.window=1", "chunk.semantic.threshold=50", "chunk.semantic.model=x"])
def test_each_semantic_setting_counts_with_its_boundary(override: str) -> None:
    semantic = _plain(["chunk.boundary=semantic"])
    assert config_hash(semantic, "c", "g") != config_hash(
        _plain(["chunk.boundary=semantic", override]), "c", "g")
    assert config_hash(semantic, "c", "g") != config_hash(_plain([]), "c", "g")


def test_unit_chunk_keeps_the_hash_of_runs_recorded_before_units() -> None:
    plain = _plain([])
    before = copy.deepcopy(plain)
    for key in ("unit", "parent_max_tokens", "window_sentences"):
        del before["retrieval"][key]
    for key in ("semantic", "cluster"):
        del before["chunk"][key]
    assert config_hash(plain, "c", "g") == config_hash(before, "c", "g")
    assert config_hash(_plain(["retrieval.unit=parent"]), "c", "g") != config_hash(
        plain, "c", "g")


def test_how_contexts_are_fetched_is_not_hashed_what_they_are_is() -> None:
    from sweep.config.identity import UNHASHED_NESTED_KEYS

    defaults = Config()
    for section, subs in UNHASHED_NESTED_KEYS.items():
        for key, names in subs.items():
            fields = {f.name for f in dataclasses.fields(getattr(getattr(defaults, section), key))}
            assert set(names) <= fields, f"{section}.{key}: {set(names) - fields}"
    on = ["chunk.header=contextual", "chunk.context.model=m"]
    base = config_hash(_plain(on), "c", "g")
    for override in ("chunk.context.timeout_s=5", "chunk.context.concurrency=1",
                     "chunk.context.price_input_per_mtok=3", "chunk.context.dry_run=true"):
        assert config_hash(_plain([*on, override]), "c", "g") == base, override
    for override in ("chunk.context.model=other", "chunk.context.max_doc_tokens=100",
                     "chunk.context.max_tokens=20"):
        assert config_hash(_plain([*on, override]), "c", "g") != base, override
    # Off, the context settings count for nothing.
    assert config_hash(_plain(["chunk.context.model=m"]), "c", "g") == config_hash(
        _plain([]), "c", "g")


SERVED_ON = ["embedding=served_minilm", "rerank=served"]
SERVED_IDENTITY = ("model", "dimensions", "query_input_type", "document_input_type",
                   "fingerprint")


def test_every_key_of_a_served_model_is_classified() -> None:
    # With the served configs selected every key of both sections is live: each one either
    # changes the hash (the model's identity) or is listed as unhashed (how it is called).
    plain = _plain(SERVED_ON)
    base = config_hash(plain, "c", "g")
    assert set(SERVED_IDENTITY) <= set(plain["embedding"])
    assert {k for k, g in GATED_KEYS["embedding"].items() if g == ("family", ("openai",))} == \
        set(SERVED_IDENTITY)
    for section in ("embedding", "rerank"):
        for key in plain[section]:
            other = copy.deepcopy(plain)
            other[section][key] = _changed(other[section][key])
            same = config_hash(other, "c", "g") == base
            # (a local model's keys, embedding.backend/precision, do not apply to it)
            unread = key in UNHASHED_KEYS.get(section, ()) or not gate_open(
                section, key, plain[section])
            assert same == unread, f"{section}.{key}"
    # where the model is served from, what it costs and whose key it uses are not its identity
    assert {"base_url", "price_per_mtok", "api_key_env"} <= set(UNHASHED_KEYS["embedding"])
    assert {"base_url", "price_per_request", "api_key_env"} <= set(UNHASHED_KEYS["rerank"])


def test_served_only_keys_stay_out_of_a_local_model_s_hash() -> None:
    # so adding them changed no earlier configuration's config_hash
    plain = _plain([])
    payload = identity_payload(plain, "c", "g")
    assert not set(SERVED_IDENTITY) & set(payload["embedding"])
    assert config_hash(plain, "c", "g") == config_hash(
        _plain(["embedding.model=x", "embedding.dimensions=64", "embedding.fingerprint=v2",
                "embedding.device=cpu", "embedding.base_url=http://h/v1"]), "c", "g")
    # the same model name served under another fingerprint is another configuration
    served = _plain(["embedding=served_minilm"])
    assert config_hash(served, "c", "g") != config_hash(
        _plain(["embedding=served_minilm", "embedding.fingerprint=v2"]), "c", "g")


def test_each_index_kind_hashes_only_the_parameters_it_reads() -> None:
    # `index=exact,hnsw index.ef_search=8,64` is three configurations: exact reads no ef_search.
    exact = config_hash(_plain(["index=exact"]), "c", "g")
    assert config_hash(_plain(["index=exact", "index.ef_search=8"]), "c", "g") == exact
    hnsw = config_hash(_plain(["index=hnsw"]), "c", "g")
    assert config_hash(_plain(["index=hnsw", "index.nprobe=99", "index.pq_m=4",
                               "index.seed=3"]), "c", "g") == hnsw
    ivf = config_hash(_plain(["index=ivf_flat"]), "c", "g")
    assert config_hash(_plain(["index=ivf_flat", "index.ef_search=8", "index.pq_m=4"]),
                       "c", "g") == ivf
    assert config_hash(_plain(["index=ivf_flat", "index.nprobe=99"]), "c", "g") != ivf
    assert config_hash(_plain(["index=ivf_pq", "index.pq_m=4"]), "c", "g") != \
        config_hash(_plain(["index=ivf_pq"]), "c", "g")


@pytest.mark.parametrize("overrides", [
    [], ALL_ON, ["index=ivf_pq"], ["index=sq8"], ["index=binary"], ["index=chroma"],
    ["rerank=cross_encoder", "generation=openai", "generation.model=m"],
    ["chunk.boundary=semantic", "retrieval.unit=parent"]])
def test_inapplicable_keys_are_exactly_those_that_leave_the_hash(overrides: list[str]
                                                                  ) -> None:
    # An independent check of `inapplicable_keys` (which the tables use to print n/a): a key
    # it names must leave config_hash unchanged when changed, and every other hashed key of a
    # result section must change it.
    from sweep.common.mapping import flatten
    from sweep.config.identity import GENERATION_SECTIONS, inapplicable_keys

    plain = _plain(overrides)
    sections = (*RESULT_SECTIONS, *GENERATION_SECTIONS)
    flat = {k: v for k, v in flatten(plain).items() if k.split(".")[0] in sections}
    unused = inapplicable_keys(flat)
    base = config_hash(plain, "c", "g")
    checked = 0
    for section, key in _leaves(plain, sections):
        if key in UNHASHED_KEYS.get(section, ()) or isinstance(plain[section][key], dict):
            continue
        other = copy.deepcopy(plain)
        other[section][key] = _changed(other[section][key])
        leaves_hash = config_hash(other, "c", "g") == base
        assert leaves_hash == (f"{section}.{key}" in unused), f"{overrides}: {section}.{key}"
        checked += 1
    assert checked > 30
    assert "index.kind" not in unused and "rerank.method" not in unused


def test_backend_and_precision_keep_the_hash_of_runs_recorded_before_them() -> None:
    # torch fp32 is how every model ran before the backend axis: its hash must not change
    plain = _plain([])
    before = copy.deepcopy(plain)
    for key in ("backend", "precision"):
        del before["embedding"][key]
    assert config_hash(plain, "c", "g") == config_hash(before, "c", "g")
    hashes = {config_hash(_plain([f"embedding.backend={b}", f"embedding.precision={p}"]),
                          "c", "g")
              for b, p in (("torch", "fp32"), ("torch", "bf16"), ("onnx", "fp32"),
                           ("onnx", "int8"), ("openvino", "fp32"), ("openvino", "bf16"))}
    assert len(hashes) == 6  # every pair is its own configuration
    payload = identity_payload(_plain(["embedding.backend=onnx"]), "c", "g")["embedding"]
    assert payload["backend"] == "onnx" and "precision" not in payload


def test_long_text_enters_the_hash_only_off_truncate() -> None:
    # truncate is what every model did before embedding.long_text: every recorded hash holds
    plain = _plain([])
    assert plain["embedding"]["long_text"] == "truncate"
    before = copy.deepcopy(plain)
    del before["embedding"]["long_text"]
    assert config_hash(plain, "c", "g") == config_hash(before, "c", "g")
    assert "long_text" not in identity_payload(plain, "c", "g")["embedding"]
    mean = _plain(["embedding.long_text=window_mean"])
    assert identity_payload(mean, "c", "g")["embedding"]["long_text"] == "window_mean"
    assert config_hash(mean, "c", "g") != config_hash(plain, "c", "g")


def test_long_text_window_mean_is_refused_for_a_served_model() -> None:
    from sweep.common.errors import SweepError
    from sweep.config.checks import check_config
    from sweep.config.compose import compose

    cfg = compose(["embedding=served_minilm", "embedding.long_text=window_mean"])
    with pytest.raises(SweepError, match="long_text=window_mean applies to local models"):
        check_config(cfg)
    check_config(compose(["embedding.long_text=window_mean"]))  # a local model: fine
