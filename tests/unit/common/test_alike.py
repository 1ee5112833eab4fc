"""`common.alike`: alike values write the same bytes; ``==`` alone does not promise that."""

from __future__ import annotations

import csv
import io
import math

import numpy as np
import orjson
import pytest

from sweep.common.alike import alike


def _csv(value: object) -> str:
    buf = io.StringIO()
    csv.writer(buf).writerow([value])
    return buf.getvalue()


@pytest.mark.parametrize(("a", "b"), [
    (1, 1.0), (1, True), (0, False), (0.0, -0.0),
    ({"a": 1, "b": 2}, {"b": 2, "a": 1}),  # equal dicts, another key order
    ([{"x": 0.0}], [{"x": -0.0}]), ({1: "x"}, {1.0: "x"}), ((1, 2.0), (1.0, 2.0)),
])
def test_equal_values_that_write_differently_are_not_alike(a: object, b: object) -> None:
    assert a == b
    assert not alike(a, b)
    # and each one really writes other bytes in one of the tool's writers
    assert _csv(a) != _csv(b) or orjson.dumps(a, option=orjson.OPT_NON_STR_KEYS) \
        != orjson.dumps(b, option=orjson.OPT_NON_STR_KEYS)


def test_equal_copies_are_alike_and_a_change_anywhere_is_seen() -> None:
    nested = {"qid": "q1", "rank": 3, "score": 0.25, "ok": True, "none": None,
              "hits": [{"id": "d#1", "score": -0.0}, {"id": "d#2", "score": 1e-300}],
              "cells": ("a", 1, 2.5)}
    copy = orjson.loads(orjson.dumps(nested))  # equal, no object shared
    copy["cells"] = tuple(copy["cells"])
    assert alike(nested, copy)
    copy["hits"][1]["score"] = 1e-299
    assert not alike(nested, copy)
    assert not alike(nested, {**nested, "extra": 1})
    assert not alike([nested], [nested, nested])


def test_nan_is_alike_only_to_itself() -> None:
    nan = math.nan
    assert alike(nan, nan)
    assert not alike(nan, float("nan"))
    arr = np.arange(3)
    assert alike(arr, arr)
    assert not alike(arr, np.arange(3))  # not a plain value: the same object only
    assert not alike(1.0, np.float64(1.0))  # a float subclass
