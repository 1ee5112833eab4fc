"""`sweep.chunking.reference`: the sidecar's boundary is checked above data, and only there."""

from __future__ import annotations

from pathlib import Path

import pytest

from sweep.chunking.reference import load_golden, load_reference
from sweep.common.errors import SweepError
from sweep.data import golden as data_golden

LINE = '{"qid": "q1", "question": "q?", "relevant_chunk_ids": ["a#0"], "answer_must_mention": []}\n'


def _golden(tmp_path: Path, sidecar: str) -> Path:
    path = tmp_path / "g.jsonl"
    path.write_text(LINE, encoding="utf-8")
    (tmp_path / "g.reference.yaml").write_text(sidecar, encoding="utf-8")
    return path


def test_unknown_boundary_refused_with_the_sidecar_named(tmp_path: Path) -> None:
    path = _golden(tmp_path, "chunk: {boundary: nope, size: 64, overlap: 0}\n")
    with pytest.raises(SweepError, match=r"g\.reference\.yaml: chunk\.boundary: 'nope' is not one of "):
        load_golden(path)
    with pytest.raises(SweepError, match=r"chunk\.boundary: 'nope'"):
        load_reference(tmp_path / "g.reference.yaml")
    # data alone checks the shape, not the chunking registry's names
    assert data_golden.load_golden(path).reference == {
        "chunk": {"boundary": "nope", "size": 64, "overlap": 0}}


def test_known_or_missing_boundary_loads(tmp_path: Path) -> None:
    path = _golden(tmp_path, "chunk: {boundary: heading, size: 64, overlap: 0}\n")
    assert load_golden(path).reference == {"chunk": {"boundary": "heading", "size": 64, "overlap": 0}}
    path = _golden(tmp_path, "chunk: {size: 64}\n")  # ChunkSpec's default boundary
    assert load_golden(path).reference == {"chunk": {"size": 64}}


def test_shape_errors_still_come_from_data(tmp_path: Path) -> None:
    path = _golden(tmp_path, "chunk: {boundary: heading, size: big}\n")
    with pytest.raises(SweepError, match=r"chunk\.size: must be an integer, got 'big'"):
        load_golden(path)
