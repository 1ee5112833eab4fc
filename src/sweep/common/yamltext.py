"""Block YAML as PyYAML's own (pure-Python) emitter writes it, through libyaml's C emitter where
the two are known to write the same bytes.

PyYAML's wheels ship libyaml; its emitter is ~4x faster than the Python one (a job folder's
config.yaml and Hydra's three ``.hydra/`` files are written once per job). The two emitters
differ on some texts: an empty or long mapping key (``? ''``, the 128-character simple-key
limit counted differently), characters outside printable ASCII (libyaml escapes some that
Python writes as they are), and double-quoted texts folded over lines (a line break next to a
space). A document holding any of those goes through the Python emitter, as before, and so
does everything when PyYAML was built without libyaml. Everything else (numbers, booleans,
None, and texts of printable ASCII and line breaks, multi-line ones included) comes out the
same from both: the representer, which decides a value's text and quoting, is the same Python
code in both dumpers.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

# Texts both emitters write alike: printable ASCII and line breaks, no break next to a space
# (that forces the double-quoted style, which the two fold differently).
_PLAIN_TEXT = re.compile(r"[\x20-\x7e\n]*")
# Python's emitter writes a key of 128 characters or more as ``? key``; libyaml counts
# differently. Keys are far shorter than this bound.
_MAX_KEY = 100
_SCALARS = (bool, int, float, type(None))


def _same_text(text: str) -> bool:
    return _PLAIN_TEXT.fullmatch(text) is not None and " \n" not in text and "\n " not in text


def emitters_agree(data: Any) -> bool:
    """Whether libyaml's emitter writes ``data`` exactly as PyYAML's Python emitter does: plain
    dicts, lists and tuples of numbers, booleans, None and `_same_text` texts, every key such a
    text of 1 to 99 characters. Anything else (a set, a date, an object): False."""
    if isinstance(data, str):
        return _same_text(data)
    if isinstance(data, _SCALARS):
        return True
    if isinstance(data, dict):
        return all(isinstance(k, str) and 0 < len(k) < _MAX_KEY and _same_text(k)
                   and emitters_agree(v) for k, v in data.items())
    if isinstance(data, list | tuple):
        return all(emitters_agree(v) for v in data)
    return False


def c_dumper(python_dumper: type) -> type | None:
    """A dumper with libyaml's emitter and ``python_dumper``'s representers, resolver and
    settings (its class hierarchy above the emitter), or None without libyaml. ``yaml.Dumper``
    and ``yaml.SafeDumper`` (and subclasses of them) are supported."""
    if not getattr(yaml, "__with_libyaml__", False):
        return None
    base = yaml.CSafeDumper if issubclass(python_dumper, yaml.SafeDumper) else yaml.CDumper
    kind = type(f"C{python_dumper.__name__}", (base,), {})
    # The representers (how a str is quoted, how a float is written) are copied as they are.
    kind.yaml_representers = dict(python_dumper.yaml_representers)
    kind.yaml_multi_representers = dict(python_dumper.yaml_multi_representers)
    kind.yaml_implicit_resolvers = dict(python_dumper.yaml_implicit_resolvers)
    return kind


_SAFE_C = c_dumper(yaml.SafeDumper)


def dump(data: Any, python_dumper: type, fast_dumper: type | None, **kwargs: Any) -> str:
    """``yaml.dump(data, Dumper=python_dumper, **kwargs)``, written by ``fast_dumper`` (from
    `c_dumper`) when there is one and `emitters_agree` on ``data``."""
    use = fast_dumper if fast_dumper is not None and emitters_agree(data) else python_dumper
    return yaml.dump(data, Dumper=use, **kwargs)  # type: ignore[no-any-return]


def safe_dump(data: Any, **kwargs: Any) -> str:
    """``yaml.safe_dump(data, **kwargs)``, byte for byte, faster where `dump` can."""
    return dump(data, yaml.SafeDumper, _SAFE_C, **kwargs)
