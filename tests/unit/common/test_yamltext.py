"""`common.yamltext` writes exactly the bytes of PyYAML's Python emitter: through libyaml where
the two agree (checked here on the shipped configs and on random documents), through the
Python emitter where they do not (an empty key, a non-ASCII text, a line break beside a space)
and when PyYAML has no libyaml."""

from __future__ import annotations

import random
import string
from typing import Any

import pytest
import yaml

from sweep.common import yamltext
from sweep.config.compose import compose, to_container

needs_libyaml = pytest.mark.skipif(not yaml.__with_libyaml__,
                                   reason="PyYAML built without libyaml: no fast path to compare")

_PIECES = [*string.ascii_letters, *string.digits, *string.punctuation, " ", " ", " ", "\n",
           "  ", "x" * 45, "null", "true", "1.5", "0x1F", "~", "- ", ": ", " #", "${a.b}", "'",
           '"', "é", "✂", "\t", "\r", "\x85", "\u2028", "\ufeff", "😀", "\x00"]


def _text(rng: random.Random, ascii_only: bool) -> str:
    pieces = _PIECES[:-9] if ascii_only else _PIECES
    return "".join(rng.choice(pieces) for _ in range(rng.choice([0, 1, 3, 10, 30, 70])))


def _tree(rng: random.Random, ascii_only: bool, depth: int = 0) -> Any:
    r = rng.random()
    if depth < 3 and r < 0.15:
        return {_text(rng, ascii_only) or "k": _tree(rng, ascii_only, depth + 1)
                for _ in range(rng.randint(0, 4))}
    if depth < 3 and r < 0.25:
        return [_tree(rng, ascii_only, depth + 1) for _ in range(rng.randint(0, 4))]
    if r < 0.35:
        return rng.choice([None, True, False, 0, -1, 1.5, 1e300, 1e-7, float("inf"),
                           float("nan"), 2**70])
    return _text(rng, ascii_only)


@needs_libyaml
@pytest.mark.parametrize("ascii_only", [True, False], ids=["ascii", "any"])
def test_random_documents_come_out_as_the_python_emitter_writes_them(ascii_only: bool) -> None:
    rng = random.Random(46)
    omega = yaml.Dumper  # the base of OmegaConf's dumper; the str representer is tested below
    fast_omega = yamltext.c_dumper(omega)
    fast_taken = 0
    for _ in range(3000):
        doc = {_text(rng, ascii_only) or "k": _tree(rng, ascii_only) for _ in range(3)}
        assert yamltext.safe_dump(doc, sort_keys=False) == yaml.safe_dump(doc, sort_keys=False)
        assert yamltext.dump(doc, omega, fast_omega, default_flow_style=False,
                             allow_unicode=True, sort_keys=False) == \
            yaml.dump(doc, Dumper=omega, default_flow_style=False, allow_unicode=True,
                      sort_keys=False)
        fast_taken += yamltext.emitters_agree(doc)
    # the comparison is worth something only if the fast path ran on many of them
    assert fast_taken > (1000 if ascii_only else 50)


@needs_libyaml
@pytest.mark.parametrize("doc", [
    {"": 1},  # Python writes "? ''"
    {"a": "x \ny"},  # a break beside a space: double-quoted, folded differently
    {"a": "caf\u00e9 \U0001f600"},
    {"k" * 128: 1},
], ids=["empty-key", "space-break", "non-ascii", "long-key"])
def test_where_the_emitters_differ_the_python_one_writes(doc: dict[str, Any]) -> None:
    assert not yamltext.emitters_agree(doc)
    assert yamltext.safe_dump(doc, sort_keys=False) == yaml.safe_dump(doc, sort_keys=False)


@needs_libyaml
def test_the_guard_is_needed() -> None:
    """libyaml alone would change the bytes of an empty key: the fallback is not idle."""
    assert yaml.dump({"": 1}, Dumper=yaml.CSafeDumper) != yaml.safe_dump({"": 1})


def test_what_the_guard_lets_through() -> None:
    assert yamltext.emitters_agree({"a": [1, 2.5, None, True, "x\ny", "it's: #"],
                                    "b": {"c": ""}, "t": (1, "z")})
    assert not yamltext.emitters_agree({1: "int key"})
    assert not yamltext.emitters_agree({"a": {1, 2}})  # a set: left to the Python emitter
    assert not yamltext.emitters_agree({"a": "tab\there"})
    assert not yamltext.emitters_agree({"a": ["x\n y"]})


@needs_libyaml
@pytest.mark.parametrize("overrides", [
    [], ["experiment=chunking_grid"], ["retrieval=hybrid", "chunk.size=128", "chunk.header=path"],
    ["corpus.path='/data/d\u00e9j\u00e0 vu'"],  # non-ASCII: the Python emitter writes it
], ids=["default", "experiment", "bench", "non-ascii-path"])
def test_a_config_yaml_is_written_as_before(overrides: list[str]) -> None:
    plain = to_container(compose(overrides))
    assert yamltext.safe_dump(plain, sort_keys=False) == yaml.safe_dump(plain, sort_keys=False)
    assert yamltext.emitters_agree(plain) == (not any("\u00e9" in o for o in overrides))


def test_without_libyaml_the_python_emitter_writes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(yaml, "__with_libyaml__", False)
    assert yamltext.c_dumper(yaml.SafeDumper) is None
    doc = {"a": [1, "b"], "c": None}
    assert yamltext.dump(doc, yaml.SafeDumper, None) == yaml.safe_dump(doc)


@needs_libyaml
def test_a_dumper_keeps_its_own_representers() -> None:
    class Quoting(yaml.Dumper):
        pass

    def always_quoted(dumper: Any, data: str) -> Any:
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="'")

    Quoting.add_representer(str, always_quoted)
    fast = yamltext.c_dumper(Quoting)
    assert fast is not None and issubclass(fast, yaml.CDumper)
    doc = {"a": "b", "n": [1, "2"]}
    assert yamltext.dump(doc, Quoting, fast) == yaml.dump(doc, Dumper=Quoting) == \
        "'a': 'b'\n'n':\n- 1\n- '2'\n"
