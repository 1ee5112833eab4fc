"""`sweep.data.drift`: the corpus record beside a golden set, and what moved since."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from sweep.common.errors import SweepError
from sweep.data.corpus import parse_document
from sweep.data.drift import compare, corpus_drift, read_record, record_path, write_record


def docs(**texts: str):
    return [parse_document(path, text) for path, text in texts.items()]


def test_the_record_holds_a_sha256_of_each_documents_text(tmp_path: Path) -> None:
    golden = tmp_path / "golden.jsonl"
    golden.write_text("")
    path = write_record(golden, docs(**{"a.md": "# A\n\nalpha\n"}), "corpus/", "test")
    assert path == tmp_path / "golden.corpus.json" == record_path(golden)
    record = json.loads(path.read_text())
    assert record["documents"] == {"a.md": {
        "sha256": hashlib.sha256(b"# A\n\nalpha\n").hexdigest()[:16], "chars": 11}}
    assert record["corpus"] == "corpus/" and record["written_by"] == "test"


def test_drift_counts_edited_and_gone_documents_not_new_ones(tmp_path: Path) -> None:
    golden = tmp_path / "g.jsonl"
    write_record(golden, docs(**{"a.md": "one", "b.md": "two", "c.md": "three"}), "x", "t")
    assert corpus_drift(golden, docs(**{"a.md": "one", "b.md": "two", "c.md": "three"})) is None
    assert corpus_drift(golden, docs(**{"a.md": "one", "b.md": "two", "c.md": "three",
                                        "d.md": "new"})) is None
    drift = corpus_drift(golden, docs(**{"a.md": "ONE", "b.md": "two", "d.md": "new"}))
    assert drift is not None
    assert (drift.changed, drift.removed, drift.added) == (("a.md",), ("c.md",), ("d.md",))
    assert drift.message.startswith("2 documents changed since these labels were made "
                                    "(1 edited, 1 gone, 1 new;")
    assert drift.message.endswith("run sweep golden rebase")


def test_keep_preserves_the_recorded_fingerprints_of_old_documents(tmp_path: Path) -> None:
    golden = tmp_path / "g.jsonl"
    write_record(golden, docs(**{"a.md": "one"}), "x", "t")
    old = read_record(golden)["documents"]
    write_record(golden, docs(**{"a.md": "ONE", "b.md": "new"}), "x", "t", keep=old)
    record = read_record(golden)
    assert record["documents"]["a.md"] == old["a.md"]
    assert set(record["documents"]) == {"a.md", "b.md"}
    assert compare(record, docs(**{"a.md": "ONE", "b.md": "new"}), "r").changed == ("a.md",)


def test_no_record_means_no_drift(tmp_path: Path) -> None:
    assert corpus_drift(tmp_path / "g.jsonl", docs(**{"a.md": "x"})) is None


@pytest.mark.parametrize(("content", "message"), [
    ("{not json", "g.corpus.json:1: not valid JSON"),
    ("[]", "g.corpus.json: must be a JSON object"),
    ('{"documents": 3}', "g.corpus.json: documents: must be an object"),
    ('{"documents": {"a.md": {"sha256": 1}}}', "g.corpus.json: documents.a.md.sha256: must be"),
])
def test_a_malformed_record_is_one_line_naming_the_file_and_field(
        tmp_path: Path, content: str, message: str) -> None:
    (tmp_path / "g.corpus.json").write_text(content)
    with pytest.raises(SweepError) as err:
        read_record(tmp_path / "g.jsonl")
    assert message in str(err.value) and "\n" not in str(err.value)
