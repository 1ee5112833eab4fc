"""The gate's run memo (sweep.decide.memo): which inputs it keys on, which it re-digests, and
what it refuses to memoise. The command end to end is in tests/cli/test_gate_memo.py."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from helpers import DEMO, ROOT
from sweep.common.files import content_digest
from sweep.decide import memo

# --- content_digest --------------------------------------------------------------------------

def test_content_digest_of_a_file_is_its_name_and_sha256(tmp_path: Path) -> None:
    f = tmp_path / "a.md"
    f.write_bytes(b"hello")
    expected = hashlib.sha256(b"a.md\0" + hashlib.sha256(b"hello").digest()).hexdigest()
    assert content_digest(f) == expected
    assert content_digest(tmp_path / "absent") == "missing"


def test_content_digest_of_a_folder_changes_with_any_file(tmp_path: Path) -> None:
    root = tmp_path / "c"
    (root / "sub").mkdir(parents=True)
    (root / "a.md").write_text("alpha")
    (root / "sub" / "b.md").write_text("beta")
    first = content_digest(root)
    # by hand: sorted relative paths, each with the sha256 of its bytes
    h = hashlib.sha256()
    for rel, data in (("a.md", b"alpha"), ("sub/b.md", b"beta")):
        h.update(rel.encode() + b"\0" + hashlib.sha256(data).digest())
    assert first == h.hexdigest()
    (root / "__pycache__").mkdir()
    (root / "__pycache__" / "x.pyc").write_bytes(b"\0")
    assert content_digest(root) == first  # byte-compiled files are not inputs
    (root / "sub" / "b.md").write_text("betA")
    edited = content_digest(root)
    (root / "sub" / "b.md").write_text("beta")
    assert content_digest(root) == first
    (root / "c.md").write_text("")
    added = content_digest(root)
    (root / "c.md").unlink()
    (root / "sub" / "b.md").rename(root / "b.md")
    moved = content_digest(root)
    assert len({first, edited, added, moved}) == 4


def test_content_digest_follows_links_once(tmp_path: Path) -> None:
    root = tmp_path / "c"
    root.mkdir()
    (root / "a.md").write_text("alpha")
    os.symlink(root, root / "loop")  # a link back up the tree ends the walk, not the process
    assert content_digest(root) != "missing"
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "b.md").write_text("beta")
    before = content_digest(root)
    os.symlink(other, root / "linked")
    with_link = content_digest(root)
    (other / "b.md").write_text("BETA")  # a file reached through a link is an input too
    assert len({before, with_link, content_digest(root)}) == 3


# --- the key ---------------------------------------------------------------------------------

@pytest.fixture
def conf_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    conf = tmp_path / "conf"
    shutil.copytree(ROOT / "conf", conf, symlinks=False)
    monkeypatch.setenv("CHUNK_SWEEP_CONF_DIR", str(conf))
    return conf


def test_the_key_follows_overrides_config_files_and_named_variables(
        conf_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base = memo.memo_key(["chunk.size=256"])
    assert memo.memo_key(["chunk.size=256"]) == base
    assert memo.memo_key(["chunk.size=128"]) != base
    assert memo.memo_key(["chunk.size=256", "retrieval=bm25"]) != base
    yaml = conf_copy / "chunk" / "default.yaml"
    text = yaml.read_text()
    yaml.write_text(text + "\n# a comment is a change too\n")
    assert memo.memo_key(["chunk.size=256"]) != base
    yaml.write_text(text)
    assert memo.memo_key(["chunk.size=256"]) == base
    # a variable a config file reads through oc.env
    (conf_copy / "golden" / "mine.yaml").write_text("path: ${oc.env:MY_GOLDEN_FILE,x}\n")
    with_file = memo.memo_key(["chunk.size=256"])
    monkeypatch.setenv("MY_GOLDEN_FILE", "/tmp/one.jsonl")
    one = memo.memo_key(["chunk.size=256"])
    monkeypatch.setenv("MY_GOLDEN_FILE", "/tmp/two.jsonl")
    assert len({base, with_file, one, memo.memo_key(["chunk.size=256"])}) == 4


def test_no_key_when_configuration_can_come_from_elsewhere(conf_copy: Path) -> None:
    assert memo.memo_key(["hydra.searchpath=[file:///elsewhere]"]) is None
    assert memo.memo_key([]) is not None
    (conf_copy / "config.yaml").write_text(
        (conf_copy / "config.yaml").read_text() + "\n  searchpath: [file:///elsewhere]\n")
    assert memo.memo_key([]) is None


def test_the_key_ignores_secrets_and_switches_that_change_no_number(
        conf_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base = memo.memo_key([])
    monkeypatch.setenv("HF_TOKEN", "hf_secret")  # secret-looking: never part of the key
    monkeypatch.setenv("HF_HUB_OFFLINE", "0" if os.environ.get("HF_HUB_OFFLINE") == "1" else "1")
    assert memo.memo_key([]) == base
    assert "HF_TOKEN" not in memo._environment(conf_copy, [])
    monkeypatch.setenv("CHUNK_SWEEP_CACHE", "/tmp/models")  # where models are looked up
    assert memo.memo_key([]) != base


def test_the_predicted_cache_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CHUNK_SWEEP_CACHE_DIR", str(tmp_path / "env"))
    assert memo.predicted_cache_dir([]) == (tmp_path / "env").resolve()
    assert memo.predicted_cache_dir([f"cache.dir={tmp_path}/a", f"cache.dir={tmp_path}/b"]) \
        == (tmp_path / "b").resolve()
    assert memo.predicted_cache_dir(["cache.dir=${oc.env:HOME}/c"]) is None
    monkeypatch.delenv("CHUNK_SWEEP_CACHE_DIR")
    assert memo.predicted_cache_dir([]) == (ROOT / ".cache").resolve()


# --- the inputs ------------------------------------------------------------------------------

def _plain(tmp_path: Path, **sections: dict) -> dict:
    """A resolved configuration as `to_container` gives it, with the keys memo reads."""
    plain = {"corpus": {"path": str(DEMO / "corpus")}, "golden": {"path": str(DEMO / "golden.jsonl")},
             "chunk": {"boundary": "recursive", "header": "none", "tokenizer": "minilm",
                       "semantic": {"model": ""}, "cluster": {"model": ""}},
             "embedding": {"name": "minilm", "family": "sentence_transformers"},
             "retrieval": {"method": "dense"}, "rerank": {"method": "none", "model": "x/y"},
             "index": {"kind": "exact"}, "eval": {}, "generation": {"method": "none"},
             "judge": {"method": "none"},
             "cache": {"enabled": True, "dir": str(tmp_path / "cache")}}
    for name, values in sections.items():
        plain[name] = {**plain[name], **values}
    return plain


def test_inputs_of_the_demo_are_its_corpus_golden_set_and_model(tmp_path: Path) -> None:
    from sweep.chunking.tokenizers import minilm_path

    inputs, why = memo.run_inputs(_plain(tmp_path))
    assert why == ""
    assert [(i["kind"], i["path"]) for i in inputs] == [
        ("content", str((DEMO / "corpus").resolve())),
        ("content", str((DEMO / "golden.jsonl").resolve())),
        ("content", str((DEMO / "abstentions.jsonl").resolve())),
        ("model", str(Path(minilm_path()).resolve()))]
    assert inputs[0]["digest"] == content_digest(DEMO / "corpus")
    assert inputs[2]["digest"] == "missing"  # none yet: adding one is a change
    assert memo.changed_input(inputs) is None


@pytest.mark.parametrize(("sections", "reason"), [
    ({"generation": {"method": "openai"}}, "generation"),
    ({"embedding": {"family": "openai"}}, "embedding.family=openai"),
    ({"rerank": {"method": "cohere"}}, "rerank.method=cohere"),
    ({"index": {"kind": "chroma"}}, "index.kind=chroma"),
    ({"chunk": {"header": "contextual"}}, "chunk.header=contextual"),
    ({"rerank": {"method": "cross_encoder", "model": "org/not-here"}}, "rerank.model="),
    ({"embedding": {"name": "org/hub-model"}}, "embedding.name="),
    ({"chunk": {"tokenizer": "org/hub-tokenizer"}}, "chunk.tokenizer="),
    ({"cache": {"enabled": False, "dir": "/x"}}, "cache.enabled=false"),
])
def test_what_is_not_memoised(tmp_path: Path, sections: dict, reason: str) -> None:
    inputs, why = memo.run_inputs(_plain(tmp_path, **sections))
    assert inputs == [] and reason in why


def test_a_tokenizer_file_and_a_stop_word_list_are_inputs(tmp_path: Path) -> None:
    from sweep.chunking.tokenizers import minilm_path

    tok = tmp_path / "tokenizer.json"
    shutil.copy(Path(minilm_path()) / "tokenizer.json", tok)
    stop = tmp_path / "stop.txt"
    stop.write_text("the\nof\n")
    inputs, why = memo.run_inputs(_plain(tmp_path, chunk={"tokenizer": str(tok)},
                                         retrieval={"method": "bm25",
                                                    "bm25_stopwords": str(stop)}))
    assert why == ""
    assert {(i["kind"], i["path"]) for i in inputs} >= {("content", str(tok.resolve())),
                                                         ("content", str(stop.resolve()))}
    assert memo.changed_input(inputs) is None
    stop.write_text("the\nof\nand\n")
    assert memo.changed_input(inputs) == str(stop.resolve())


# --- store and lookup ------------------------------------------------------------------------

RUN = {"metrics": {"recall_at_5": 0.75, "mrr": 0.6219}, "n_questions": 3, "n_scored": 3,
       "prompt_k": 5, "config": {"chunk": {"size": 256}}, "config_hash": "h",
       "fingerprints": {"golden": "g"}, "per_question": {"q1": 1, "q2": None, "q3": 4}}


def test_a_stored_run_is_found_until_an_input_changes(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    shutil.copytree(DEMO / "corpus", corpus)
    plain = _plain(tmp_path, corpus={"path": str(corpus)})
    overrides = [f"cache.dir={tmp_path / 'cache'}", f"corpus.path={corpus}"]
    pending = memo.prepare(overrides, plain)
    assert isinstance(pending, memo.Pending)
    path = memo.store(pending, RUN)
    assert path is not None and path.parent == (tmp_path / "cache" / memo.FOLDER).resolve()
    run, line = memo.lookup(overrides)
    assert run == RUN and str(path) in line
    assert memo.lookup([*overrides, "chunk.size=128"])[0] is None  # another key
    first = sorted(corpus.rglob("*.md"))[0]
    first.write_text(first.read_text() + "\nOne more line.\n")
    run, line = memo.lookup(overrides)
    assert run is None and str(corpus) in line and "changed" in line


def test_numpy_numbers_are_stored_as_plain_numbers(tmp_path: Path) -> None:
    import numpy as np

    plain = _plain(tmp_path)
    overrides = [f"cache.dir={tmp_path / 'cache'}"]
    run = {**RUN, "metrics": {"recall_at_5": np.float64(0.75)}, "n_scored": np.int64(3)}
    memo.store(memo.prepare(overrides, plain), run)
    got, _ = memo.lookup(overrides)
    assert got is not None and got["metrics"]["recall_at_5"] == 0.75
    assert type(got["n_scored"]) is int


def test_no_memo_where_the_composed_cache_is_not_the_predicted_one(tmp_path: Path) -> None:
    """The reasons `prepare` gives instead of a memo to write."""
    plain = _plain(tmp_path)  # cache.dir = tmp/cache
    why = memo.prepare([f"cache.dir={tmp_path / 'other'}"], plain)
    assert isinstance(why, str) and "cache.dir composes to" in why
    assert "interpolation" in memo.prepare(["cache.dir=${oc.env:HOME}"], plain)
    assert "generation" in memo.prepare([], _plain(tmp_path, generation={"method": "openai"}))


def test_a_damaged_memo_means_a_run(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    plain = _plain(tmp_path)
    overrides = [f"cache.dir={tmp_path / 'cache'}"]
    path = memo.store(memo.prepare(overrides, plain), RUN)
    assert path is not None
    path.write_text(path.read_text()[:50])
    run, line = memo.lookup(overrides)
    assert run is None and "unreadable" in line
    assert any("unreadable memo" in r.getMessage() for r in caplog.records)
    doc = {"format": memo.FORMAT, "key": "not-this-one", "inputs": [], "run": RUN}
    path.write_text(json.dumps(doc))
    assert memo.lookup(overrides)[0] is None


def test_what_changes_while_the_configuration_runs_is_not_memoised_as_unchanged(
        tmp_path: Path, conf_copy: Path) -> None:
    """The key and the digests are taken before the run (`prepare`), not when the memo is
    written: an edit made meanwhile means the next check runs."""
    corpus = tmp_path / "corpus"
    shutil.copytree(DEMO / "corpus", corpus)
    plain = _plain(tmp_path, corpus={"path": str(corpus)})
    overrides = [f"cache.dir={tmp_path / 'cache'}"]
    pending = memo.prepare(overrides, plain)
    yaml = conf_copy / "chunk" / "default.yaml"
    yaml.write_text(yaml.read_text() + "\n# edited during the run\n")
    memo.store(pending, RUN)
    assert memo.lookup(overrides) == (None, "no memo for these inputs")
    pending = memo.prepare(overrides, plain)  # under the edited conf/
    (corpus / "during.md").write_text("written while the run ran\n")
    memo.store(pending, RUN)
    run, line = memo.lookup(overrides)
    assert run is None and "changed since the memo" in line


# --- a poisoned memo (issue 30) --------------------------------------------------------------

def _stored(tmp_path: Path, plain: dict | None = None) -> tuple[list[str], Path]:
    overrides = [f"cache.dir={tmp_path / 'cache'}"]
    path = memo.store(memo.prepare(overrides, plain or _plain(tmp_path)), RUN)
    assert path is not None and memo.lookup(overrides)[0] == RUN
    return overrides, path


def test_a_memo_edited_to_claim_better_metrics_means_a_run(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Failed before the seal: the edited numbers were the gate's."""
    overrides, path = _stored(tmp_path)
    doc = json.loads(path.read_text())
    doc["run"]["metrics"]["recall_at_5"] = 1.0
    path.write_text(json.dumps(doc, indent=1))
    run, line = memo.lookup(overrides)
    assert run is None and "does not match its seal" in line
    assert any("not used" in r.getMessage() for r in caplog.records)
    # the same edit with a seal recomputed the way this module does it: the self-check's limit
    doc["seal"] = memo.seal(doc)
    path.write_text(json.dumps(doc, indent=1))
    assert memo.lookup(overrides)[0]["metrics"]["recall_at_5"] == 1.0


def test_the_seal_is_an_hmac_under_the_secret_when_one_is_set(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import hmac

    monkeypatch.setenv(memo.SECRET_ENV, "ci-secret-1")
    overrides, path = _stored(tmp_path)
    doc = json.loads(path.read_text())
    body = {k: v for k, v in doc.items() if k != "seal"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"))
    assert doc["seal"] == hmac.new(b"ci-secret-1", text.encode(), "sha256").hexdigest()
    assert doc["sealed_with"] == "secret"
    # an attacker without the secret: an edit sealed under another one, or under none
    doc["run"]["metrics"]["mrr"] = 0.99
    monkeypatch.setenv(memo.SECRET_ENV, "guessed")
    doc["seal"] = memo.seal(doc)
    monkeypatch.setenv(memo.SECRET_ENV, "ci-secret-1")
    path.write_text(json.dumps(doc))
    assert memo.lookup(overrides)[0] is None
    monkeypatch.delenv(memo.SECRET_ENV)
    doc["sealed_with"] = "self-check"
    doc["seal"] = memo.seal(doc)
    path.write_text(json.dumps(doc))
    assert memo.lookup(overrides)[0] is not None  # without the secret, the self-check holds
    monkeypatch.setenv(memo.SECRET_ENV, "ci-secret-1")
    run, line = memo.lookup(overrides)
    assert run is None and "sealed with self-check" in line
    # the secret is in no file and not in the key
    assert "ci-secret-1" not in path.read_text()
    assert memo.memo_key(overrides) == path.stem


def test_a_corpus_file_changed_with_its_size_and_mtime_kept_means_a_run(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    shutil.copytree(DEMO / "corpus", corpus)
    overrides, _ = _stored(tmp_path, _plain(tmp_path, corpus={"path": str(corpus)}))
    overrides = [*overrides]
    first = sorted(corpus.rglob("*.md"))[0]
    st = first.stat()
    data = bytearray(first.read_bytes())
    data[len(data) // 2] ^= 0x20  # one letter's case
    first.write_bytes(bytes(data))
    os.utime(first, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert first.stat().st_size == st.st_size and first.stat().st_mtime_ns == st.st_mtime_ns
    run, line = memo.lookup(overrides)
    assert run is None and str(corpus) in line


def test_a_model_file_changed_past_its_first_bytes_means_a_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Failed before: a model folder's identity read 64 KiB of each file, so weights changed
    further in (same size, same mtime) reused the memo and the cached vectors."""
    model = tmp_path / "model"
    model.mkdir()
    weights = model / "model.safetensors"
    weights.write_bytes(bytes(range(256)) * 1024)  # 256 KiB
    (model / "config.json").write_text("{}")
    plain = _plain(tmp_path, embedding={"name": str(model)})
    overrides, _ = _stored(tmp_path, plain)
    st = weights.stat()
    data = bytearray(weights.read_bytes())
    data[200 * 1024] ^= 0xFF
    weights.write_bytes(bytes(data))
    os.utime(weights, ns=(st.st_atime_ns, st.st_mtime_ns))
    run, line = memo.lookup(overrides)
    assert run is None and str(model) in line
