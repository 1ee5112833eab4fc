"""bm25s indexes kept in cache.dir (issue 21): read back, they score every query bit for bit
as the index built from the texts; anything that changes an index changes its key; a damaged
folder is rebuilt with a warning; a cache that cannot be written costs nothing but a warning."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from helpers import DEMO
from sweep.chunking.chunkers import ChunkSpec, chunk_corpus
from sweep.chunking.tokenizers import load_chunk_tokenizer
from sweep.data.corpus import load_corpus
from sweep.data.golden import load_golden
from sweep.retrieval.bm25 import CACHE_FOLDER, BM25Index


def _texts() -> list[str]:
    docs = load_corpus(DEMO / "corpus")
    return [c.embed_text for c in chunk_corpus(docs, ChunkSpec("recursive", 48, 8, "path"),
                                               load_chunk_tokenizer("minilm"))]


QUESTIONS = [i.question for i in load_golden(DEMO / "golden.jsonl").items] + [
    "refund refund", "zzzz qqqq", "the of and"]


def _same_scores(a: BM25Index, b: BM25Index) -> None:
    for q in QUESTIONS:
        x, y = a.scores(q), b.scores(q)
        assert x.dtype == y.dtype and np.array_equal(x, y), q


def test_read_back_scores_as_built(tmp_path: Path) -> None:
    texts = _texts()
    built = BM25Index(texts, backend="bm25s", cache_dir=tmp_path)
    assert not built.from_cache
    assert len(list((tmp_path / CACHE_FOLDER).iterdir())) == 1
    again = BM25Index(texts, backend="bm25s", cache_dir=tmp_path)
    assert again.from_cache
    _same_scores(built, again)
    _same_scores(BM25Index(texts, backend="bm25s"), again)
    assert again.size_bytes() == built.size_bytes()
    assert not any(p.name.startswith(".tmp-") for p in (tmp_path / CACHE_FOLDER).iterdir())


@pytest.mark.parametrize("change", ["texts", "k1", "b", "stopwords", "order"])
def test_what_changes_an_index_changes_its_key(tmp_path: Path, change: str) -> None:
    texts = _texts()
    BM25Index(texts, backend="bm25s", cache_dir=tmp_path)
    args = {"k1": 1.5, "b": 0.75, "stopwords": "english"}
    if change == "texts":
        texts = [*texts[:-1], texts[-1] + " more"]
    elif change == "order":
        texts = [texts[1], texts[0], *texts[2:]]
    elif change == "k1":
        args["k1"] = 1.2
    elif change == "b":
        args["b"] = 0.5
    else:
        args["stopwords"] = "none"
    other = BM25Index(texts, backend="bm25s", cache_dir=tmp_path, **args)  # type: ignore[arg-type]
    assert not other.from_cache
    _same_scores(BM25Index(texts, backend="bm25s", **args), other)  # type: ignore[arg-type]


def bm25s_scores(index: object, query: str, k1: float = 1.5) -> np.ndarray:
    """What bm25s itself scores for ``query`` (its `get_scores` of the known words, times
    k1 + 1; zeros when it knows none): the reference the numpy scoring must equal."""
    from sweep.retrieval.bm25 import query_tokens

    known = [t for t in query_tokens(query) if t in index.vocab_dict]  # type: ignore[attr-defined]
    if not known:
        return np.zeros(index.scores["num_docs"])  # type: ignore[attr-defined]
    return np.asarray(index.get_scores(known), dtype=np.float64) * (k1 + 1.0)  # type: ignore[attr-defined]


def test_read_back_scores_as_bm25s_reads_the_folder(tmp_path: Path) -> None:
    """The index read back without bm25s against bm25s's own `BM25.load` of the same folder:
    every query's scores the same float64 bits, one query at a time and in a block."""
    from sweep.retrieval.bm25 import _import_bm25s

    texts = _texts()
    BM25Index(texts, backend="bm25s", cache_dir=tmp_path)
    again = BM25Index(texts, backend="bm25s", cache_dir=tmp_path)
    assert again.from_cache
    (folder,) = (tmp_path / CACHE_FOLDER).iterdir()
    ref = _import_bm25s().BM25.load(str(folder), show_progress=False, verbosity=0)
    expected = np.stack([bm25s_scores(ref, q) for q in QUESTIONS])
    assert expected[:-3].any(axis=1).all() and not expected[-2:].any()  # some match, some not
    single = np.stack([again.scores(q) for q in QUESTIONS])
    assert np.array_equal(single.view(np.int64), expected.view(np.int64))
    assert np.array_equal(again.scores_many(QUESTIONS).view(np.int64), expected.view(np.int64))


def test_a_warm_process_reads_the_index_without_bm25s_or_scipy(tmp_path: Path) -> None:
    """A fresh process that finds the index in the cache imports neither bm25s nor scipy, and
    scores as the index built here."""
    import json
    import textwrap

    from helpers import run_cli

    texts = _texts()
    built = BM25Index(texts, backend="bm25s", cache_dir=tmp_path / "c")
    (tmp_path / "texts.json").write_text(json.dumps(texts), encoding="utf-8")
    code = textwrap.dedent(f"""
        import json, sys
        from pathlib import Path
        from sweep.retrieval.bm25 import BM25Index
        tmp = Path({str(tmp_path)!r})
        texts = json.loads((tmp / "texts.json").read_text(encoding="utf-8"))
        index = BM25Index(texts, backend="bm25s", cache_dir=tmp / "c")
        print(json.dumps({{"cached": index.from_cache,
                          "imported": sorted(m for m in ("bm25s", "scipy") if m in sys.modules),
                          "scores": index.scores({QUESTIONS[0]!r}).tolist()}}))
    """)
    res = run_cli("-c", code, cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-2000:]
    out = json.loads(res.stdout.splitlines()[-1])
    assert out["cached"] and out["imported"] == []
    assert out["scores"] == built.scores(QUESTIONS[0]).tolist() and any(out["scores"])


def test_the_key_reads_bm25s_version_as_bm25s_does() -> None:
    """The cache key's bm25s version, read without importing bm25s, is `bm25s.__version__`."""
    from sweep.retrieval.bm25 import _bm25s_version, _import_bm25s

    assert _bm25s_version() == _import_bm25s().__version__


def _damage_arrays(folder: Path, damage: str) -> None:
    """Arrays that load but do not hold together (each would score wrong or crash)."""
    def edit(name: str, change: object) -> None:
        path = folder / f"{name}.csc.index.npy"
        a = np.load(path)
        np.save(path, change(a))  # type: ignore[operator]

    if damage == "index_past_the_texts":
        edit("indices", lambda a: np.where(a == a.max(), a.max() + 1000, a))
    elif damage == "indptr_decreasing":
        edit("indptr", lambda a: np.concatenate([a[:1], a[2:3], a[1:2], a[3:]]))
    elif damage == "float32_scores":
        edit("data", lambda a: a.astype(np.float32))
    elif damage == "vocab_past_the_words":
        import json

        vocab = json.loads((folder / "vocab.index.json").read_text(encoding="utf-8"))
        vocab["refund"] = 10**6
        (folder / "vocab.index.json").write_text(json.dumps(vocab), encoding="utf-8")
    else:  # another variant's parameters
        import json

        params = json.loads((folder / "params.index.json").read_text(encoding="utf-8"))
        params["method"] = "bm25+"
        (folder / "params.index.json").write_text(json.dumps(params), encoding="utf-8")


@pytest.mark.parametrize("damage", ["truncated_scores", "missing_vocab", "other_texts",
                                    "index_past_the_texts", "indptr_decreasing",
                                    "float32_scores", "vocab_past_the_words", "other_method"])
def test_a_damaged_folder_is_rebuilt_with_a_warning(tmp_path: Path, damage: str,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    texts = _texts()
    BM25Index(texts, backend="bm25s", cache_dir=tmp_path)
    (folder,) = (tmp_path / CACHE_FOLDER).iterdir()
    if damage == "truncated_scores":
        data = folder / "data.csc.index.npy"
        data.write_bytes(data.read_bytes()[:-40])
    elif damage == "missing_vocab":
        (folder / "vocab.index.json").unlink()
    elif damage == "other_texts":  # a valid index, but of other texts, under this key
        shorter = tmp_path / "other"
        BM25Index(texts[:5], backend="bm25s", cache_dir=shorter)
        (short,) = (shorter / CACHE_FOLDER).iterdir()
        for f in short.iterdir():
            (folder / f.name).write_bytes(f.read_bytes())
    else:
        _damage_arrays(folder, damage)
    with caplog.at_level(logging.WARNING):
        rebuilt = BM25Index(texts, backend="bm25s", cache_dir=tmp_path)
    assert not rebuilt.from_cache and "cannot be read back" in caplog.text
    _same_scores(BM25Index(texts, backend="bm25s"), rebuilt)
    assert BM25Index(texts, backend="bm25s", cache_dir=tmp_path).from_cache  # replaced


def test_rank_bm25_is_not_cached_and_a_read_only_cache_only_warns(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    texts = _texts()
    BM25Index(texts, backend="rank_bm25", cache_dir=tmp_path / "c")
    assert not (tmp_path / "c").exists()
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    with caplog.at_level(logging.WARNING):
        index = BM25Index(texts, backend="bm25s", cache_dir=blocked)
    assert "cannot write" in caplog.text
    _same_scores(BM25Index(texts, backend="bm25s"), index)


def test_other_code_is_another_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The key holds bm25.py's source: an edited tokenisation never reads an old index."""
    import sweep.retrieval.bm25 as bm25_module

    texts = _texts()
    BM25Index(texts, backend="bm25s", cache_dir=tmp_path)
    assert BM25Index(texts, backend="bm25s", cache_dir=tmp_path).from_cache
    monkeypatch.setattr(bm25_module, "source_key", lambda path: "edited")
    assert not BM25Index(texts, backend="bm25s", cache_dir=tmp_path).from_cache


def test_bm25s_logs_at_the_callers_level(caplog: pytest.LogCaptureFixture) -> None:
    """bm25s sets its logger to DEBUG when imported; building an index must not print its
    debug lines past a WARNING root (what `sweep` configures)."""
    logging.getLogger("bm25s").setLevel(logging.DEBUG)  # as bm25s's import leaves it
    with caplog.at_level(logging.WARNING):
        BM25Index(_texts(), backend="bm25s")
    assert logging.getLogger("bm25s").level == logging.NOTSET
    assert [r for r in caplog.records if r.name.startswith("bm25s")] == []


def test_a_texts_key_given_is_the_same_folder(tmp_path: Path) -> None:
    """The process memo hands its `parts_key` of the texts over (`texts_key`): the index is
    read from the folder an index built without it wrote, and the folder name is that of the
    key worked out from the texts."""
    from sweep.common.sqlite import parts_key
    from sweep.config.specs import Bm25Spec
    from sweep.pipeline import memo

    texts = _texts()
    built = BM25Index(texts, backend="bm25s", cache_dir=tmp_path)
    folders = sorted(p.name for p in (tmp_path / "bm25").iterdir())
    assert folders == [built._key(texts)] == [built._key(texts, parts_key(texts))]
    given = BM25Index(texts, backend="bm25s", cache_dir=tmp_path, texts_key=parts_key(texts))
    assert given.from_cache
    _same_scores(built, given)
    memo.clear_memo()
    try:
        index, _ = memo.bm25_for(texts, Bm25Spec("bm25s", 1.5, 0.75, "english"), "bm25s",
                                    tmp_path)
    finally:
        memo.clear_memo()
    assert index.from_cache and sorted(p.name for p in (tmp_path / "bm25").iterdir()) == folders
