"""The axis registry machinery (sweep.common.registry)."""

from __future__ import annotations

import pytest

from sweep.common.errors import SweepError
from sweep.common.registry import Entry, Registry, Traits, version


def _registry() -> Registry[int]:
    return Registry("demo.kind", [Entry("a", 1), Entry("b", 2, params={"x": 3},
                                                        traits=Traits(remote=True))], off="a")


def test_entries_keep_their_order_and_answer_by_name() -> None:
    r = _registry()
    assert r.names() == ("a", "b") and list(r) == ["a", "b"] and len(r) == 2
    assert r.impl("b") == 2 and r["a"].impl == 1 and "b" in r and "c" not in r
    assert r.having("remote") == ("b",) and r.having("remote", False) == ("a",)
    assert r.has("b", "remote") and not r.has("a", "remote") and not r.has("zz", "remote")
    assert r.reading("x") == ("b",) and r.params() == ("x",) and r.off == "a"


def test_an_unknown_name_is_one_line_naming_the_axis_and_its_values() -> None:
    with pytest.raises(SweepError, match=r"^demo.kind='c' is not one of a, b$"):
        _registry().get_entry("c")
    with pytest.raises(SweepError, match="has no implementation"):
        Registry("demo.kind", [Entry("bare")]).impl("bare")
    with pytest.raises(ValueError, match="unknown trait"):
        _registry().having("fast")


def test_a_name_twice_or_not_an_identifier_is_refused() -> None:
    r = _registry()
    with pytest.raises(ValueError, match="registered twice"):
        r.register(Entry("a"))
    with pytest.raises(ValueError, match="not an identifier"):
        r.register(Entry("no-dash"))


def test_added_is_undone_and_every_change_moves_the_version() -> None:
    r = _registry()
    before = version()
    with r.added(Entry("c", 9)):
        during = version()
        assert r.impl("c") == 9 and during != before
    assert "c" not in r and version() not in (before, during)
    r.unregister("b")
    assert r.names() == ("a",)


def test_an_entrys_params_cannot_be_changed_through_it() -> None:
    entry = Entry("b", params={"x": 3})
    with pytest.raises(TypeError):
        entry.params["x"] = 4  # type: ignore[index]
