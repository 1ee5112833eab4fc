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


@pytest.mark.parametrize("damage", ["truncated_scores", "missing_vocab", "other_texts"])
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
    else:  # a valid index, but of other texts, under this key
        shorter = tmp_path / "other"
        BM25Index(texts[:5], backend="bm25s", cache_dir=shorter)
        (short,) = (shorter / CACHE_FOLDER).iterdir()
        for f in short.iterdir():
            (folder / f.name).write_bytes(f.read_bytes())
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
