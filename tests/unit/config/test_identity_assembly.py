"""The context assembly keys (issue 47) enter config_hash only away from their defaults, so
every configuration recorded before the axis keeps its hash."""

from __future__ import annotations

import copy

import pytest

from sweep.common.errors import SweepError
from sweep.config.checks import check_config
from sweep.config.compose import compose, to_container
from sweep.config.identity import config_hash, describe_key, identity_payload
from sweep.config.specs import build_job_spec
from sweep.retrieval.assembly import AssemblySpec


def test_defaults_leave_the_payload_as_before_the_axis() -> None:
    plain = to_container(compose([]))
    assert plain["assembly"] == {"order": "rank", "budget_tokens": 0, "dedup": "none"}
    without = copy.deepcopy(plain)
    del without["assembly"]  # a configuration recorded before the axis
    assert "assembly" not in identity_payload(plain, "c", "g")
    assert config_hash(plain, "c", "g") == config_hash(without, "c", "g")


@pytest.mark.parametrize("override", ["assembly.order=document",
                                      "assembly.order=lost_in_middle",
                                      "assembly.budget_tokens=512", "assembly.dedup=overlap"])
def test_each_setting_away_from_its_default_enters_the_hash(override: str) -> None:
    base = config_hash(to_container(compose([])), "c", "g")
    plain = to_container(compose([override]))
    key, value = override.removeprefix("assembly.").split("=")
    assert identity_payload(plain, "c", "g")["assembly"] == {
        key: int(value) if value.isdigit() else value}
    assert config_hash(plain, "c", "g") != base


def test_the_job_spec_carries_the_assembly() -> None:
    job = build_job_spec(compose(["assembly.order=lost_in_middle", "assembly.budget_tokens=300",
                                  "assembly.dedup=overlap"]))
    assert job.assembly == AssemblySpec("lost_in_middle", 300, "overlap")
    assert not job.assembly.neutral
    assert build_job_spec(compose([])).assembly.neutral


def test_a_negative_budget_is_refused_in_one_line() -> None:
    with pytest.raises(SweepError, match=r"assembly.budget_tokens=-1 must be >= 0"):
        check_config(compose(["assembly.budget_tokens=-1"]))


def test_the_reference_says_so() -> None:
    assert describe_key("assembly", "order") == "yes"
