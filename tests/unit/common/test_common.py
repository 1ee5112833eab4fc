"""sweep.common: content keys, flattening, and the all-or-nothing file replacement."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import pytest

from sweep.common.files import atomic_write
from sweep.common.mapping import flatten
from sweep.common.sqlite import parts_key, text_key


def test_text_key_is_the_sha256_of_the_utf8_text() -> None:
    assert text_key("Straße") == hashlib.sha256("Straße".encode()).digest()
    assert len(text_key("")) == 32


def test_parts_key_is_length_prefixed_by_hand() -> None:
    # Each part: its UTF-8 length as 8 big-endian bytes, then the bytes ("ß" is 2 bytes).
    by_hand = hashlib.sha256(b"\0\0\0\0\0\0\0\x02ab" + b"\0\0\0\0\0\0\0\x02\xc3\x9f").digest()
    assert parts_key(["ab", "ß"]) == by_hand
    # The point of the prefix: the same characters cut differently give different keys.
    assert parts_key(["ab", "c"]) != parts_key(["a", "bc"])
    assert parts_key([""]) != parts_key([]) != parts_key(["", ""])
    assert parts_key(["a", "b"]) != parts_key(["b", "a"])
    # A bytes part is taken as it is: the same key as the string whose UTF-8 it is.
    assert parts_key([b"ab", "\u00df".encode()]) == by_hand
    assert parts_key(["ab", b"\xc3\x9f"]) == by_hand


def test_flatten_joins_nested_keys_and_keeps_lists() -> None:
    nested = {"chunk": {"size": 256, "header": {"kind": "path"}}, "eval": {"k": [1, 5]},
              "top": None, "empty": {}}
    assert flatten(nested) == {"chunk.size": 256, "chunk.header.kind": "path",
                               "eval.k": [1, 5], "top": None}


def test_atomic_write_replaces_and_keeps_the_mode(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "golden.jsonl"
    atomic_write(path, "one\r\n")
    assert path.read_bytes() == b"one\r\n"  # line ends as given
    path.chmod(0o640)
    atomic_write(path, b"two\n")
    assert path.read_bytes() == b"two\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert sorted(p.name for p in path.parent.iterdir()) == ["golden.jsonl"]  # no temp left


def test_atomic_write_failure_leaves_the_old_file(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "report.json"
    path.write_text("old")

    def refuse(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError, match="disk full"):
        atomic_write(path, "new")
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]
