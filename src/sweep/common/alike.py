"""`alike(a, b)`: two plain values that every writer of the tool writes as the same bytes.

Python's ``==`` says too little for that: ``1 == 1.0 == True`` are three texts in a CSV,
``0.0 == -0.0`` two, and two equal dicts in another key order two JSON documents. Alike values
are the same object, or of the same exact type and equal, with these made strict: a float's
sign of zero counts, a dict's key order counts, and lists, tuples and dicts are compared item
by item with the same rule. A value of any other type (a numpy number, a str subclass, an
object) is alike only to itself; so is a NaN. "Not alike" may be said of values that would
write the same bytes (it only costs the caller a second rendering); "alike" never of two that
would not.
"""

from __future__ import annotations

import math
import operator
from typing import Any

# Types whose equal values have one text: (a bool is no int here, the exact type is compared).
_EQUAL = frozenset({str, int, bool, bytes})


def alike(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` are the same value to every writer (see the module)."""
    if a is b:
        return True
    kind = a.__class__
    if kind is not b.__class__:
        return False
    if kind in _EQUAL:
        return a == b
    if kind is float:
        # equal floats have one repr, zero apart (0.0 and -0.0); a NaN is equal to nothing
        return a == b and (a != 0.0 or math.copysign(1.0, a) == math.copysign(1.0, b))
    if kind is list or kind is tuple:
        # most items of two copies are the same objects: the C-level pass settles those
        return len(a) == len(b) and (all(map(operator.is_, a, b)) or all(map(alike, a, b)))
    if kind is dict:
        return (len(a) == len(b)
                and (all(map(operator.is_, a, b)) or all(map(alike, a, b)))
                and (all(map(operator.is_, a.values(), b.values()))
                     or all(map(alike, a.values(), b.values()))))
    return False
