"""The caches' tests, once for every ``cache.backend``: each test takes a ``target`` fixture (a
`CacheTarget` with nothing in it yet). ``tests/unit/embedding/test_cache.py`` gives it a SQLite
folder (fast suite); ``tests/e2e/test_cache_postgres.py`` a fresh schema of a real PostgreSQL
server (slow suite: it needs the server). A module that imports ``*`` from here runs them all.

Damage is done through the cache's own store (``cache._db``), in the SQL both backends take.
"""

from __future__ import annotations

import dataclasses
import logging
import multiprocessing as mp

import numpy as np
import pytest

from helpers import DEMO
from sweep.chunking.cache import TokenStartsCache
from sweep.chunking.chunkers import (
    ChunkSpec,
    chunk_corpus,
    corpus_spans,
    corpus_token_starts,
    spans_key,
)
from sweep.chunking.tokenizers import load_chunk_tokenizer
from sweep.common.sqlite import text_key
from sweep.common.store import CacheTarget
from sweep.data.corpus import load_corpus
from sweep.data.parsers import ParseCache, get_parser, parse_file
from sweep.embedding.cache import EmbeddingCache

__all__ = [
    "test_a_changed_document_and_another_tokenizer_are_tokenised",
    "test_a_damaged_spans_row_is_cut_again",
    "test_a_damaged_starts_row_is_tokenised_again_with_a_warning",
    "test_a_whole_read_is_kept_as_a_pack_and_read_back_equal",
    "test_an_overwritten_vector_fails_its_checksum_and_is_dropped",
    "test_facts_are_replaced_and_lengths_are_first_write",
    "test_parse_cache_round_trip_and_an_unreadable_entry_is_a_miss",
    "test_round_trip_and_models_kept_apart",
    "test_second_pass_reads_every_document",
    "test_two_processes_writing_overlapping_keys",
]


def vec(i: int) -> np.ndarray:
    return np.full(8, i, dtype=np.float32) / (8**0.5 * max(i, 1))


def test_round_trip_and_models_kept_apart(target: CacheTarget) -> None:
    cache = EmbeddingCache(target)
    keys = [text_key(f"text {i}") for i in range(3)]
    assert cache.get_many("m1", keys) == {}
    assert cache.put_many("m1", [(k, vec(i)) for i, k in enumerate(keys)]) == 3
    got = cache.get_many("m1", keys + keys)  # duplicates asked for are fine
    assert set(got) == set(keys)
    for i, k in enumerate(keys):
        np.testing.assert_array_equal(got[k], vec(i))
    assert cache.get_many("m2", keys) == {}
    cache.put_many("m1", [(keys[0], vec(99))])  # first write wins: same key, same text
    np.testing.assert_array_equal(cache.get_many("m1", keys[:1])[keys[0]], vec(0))
    info = cache.info()
    assert info["vectors"] == 3 and info["models"]["m1"]["vectors"] == 3
    assert info["backend"] == target.backend and info["bytes_on_disk"] > 0
    assert cache.clear() == 3 and cache.info()["vectors"] == 0


def test_a_whole_read_is_kept_as_a_pack_and_read_back_equal(
        target: CacheTarget, monkeypatch: pytest.MonkeyPatch) -> None:
    from sweep.embedding import cache as ec

    monkeypatch.setattr(ec, "PACK_MIN_KEYS", 3)
    cache = EmbeddingCache(target)
    keys = [text_key(f"pack {i}") for i in range(4)]
    cache.get_many("m1", keys)  # a cold read: nothing yet
    cache.put_many("m1", [(k, vec(i)) for i, k in enumerate(keys)])
    packs = list((target.dir / ec.PACKS_FOLDER).glob("*.f32"))
    assert len(packs) == 1  # on the local disk, whatever the backend
    monkeypatch.setattr(cache, "_get_rows", lambda *a: pytest.fail("rows read"))
    got = cache.get_many("m1", keys)
    for i, k in enumerate(keys):
        np.testing.assert_array_equal(got[k], vec(i))
    monkeypatch.undo()
    assert cache.clear() == 4 and not list((target.dir / ec.PACKS_FOLDER).glob("*.f32"))


def test_facts_are_replaced_and_lengths_are_first_write(target: CacheTarget) -> None:
    cache = EmbeddingCache(target)
    keys = [text_key(f"text {i}") for i in range(3)]
    assert cache.get_lengths("m1", keys) == {}
    assert cache.put_lengths("m1", [(k, 10 + i) for i, k in enumerate(keys)]) == 3
    assert cache.put_lengths("m1", [(keys[0], 99)]) == 1  # ignored: the length is the text's
    assert cache.get_lengths("m1", keys + keys[:1]) == {k: 10 + i for i, k in enumerate(keys)}
    assert cache.get_lengths("m2", keys) == {}
    cache.put_facts("m1", "query_ms@here", [(keys[0], 1.5), (keys[1], 2.0)])
    cache.put_facts("m1", "query_ms@here", [(keys[0], 3.25)])  # a newer measure replaces
    assert cache.get_facts("m1", "query_ms@here", keys) == {keys[0]: 3.25, keys[1]: 2.0}
    assert cache.get_facts("m1", "other", keys) == {}
    cache.put_many("m1", [(keys[0], vec(1))])
    assert cache.info()["token_lengths"] == 3
    assert cache.clear() == 1
    assert cache.get_lengths("m1", keys) == {}


def test_an_overwritten_vector_fails_its_checksum_and_is_dropped(
        target: CacheTarget, caplog: pytest.LogCaptureFixture) -> None:
    cache = EmbeddingCache(target)
    a, b = text_key("a"), text_key("b")
    va, vb = np.arange(8, dtype=np.float32), -np.arange(8, dtype=np.float32)
    cache.put_many("m", [(a, va), (b, vb)])
    # b's vector copied over a's row: a valid shape, the wrong text
    cache._db.execute("UPDATE embeddings SET vector = ? WHERE key = ?", [vb.tobytes(), a])
    with caplog.at_level(logging.WARNING):
        got = cache.get_many("m", [a, b])
    assert set(got) == {b} and "fail their checksum" in caplog.text
    cache.put_many("m", [(a, va)])  # the bad row was dropped, so the fresh one is stored
    np.testing.assert_array_equal(cache.get_many("m", [a])[a], va)


def _writer(target: CacheTarget, start: int, stop: int) -> None:
    cache = EmbeddingCache(target)
    for lo in range(start, stop, 25):
        items = [(text_key(f"text {i}"), vec(i)) for i in range(lo, min(lo + 25, stop))]
        cache.put_many("model", items)
    cache.close()


def test_two_processes_writing_overlapping_keys(target: CacheTarget) -> None:
    EmbeddingCache(target).close()
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(target, 0, 600)),
             ctx.Process(target=_writer, args=(target, 300, 900))]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    cache = EmbeddingCache(target)
    keys = [text_key(f"text {i}") for i in range(900)]
    got = cache.get_many("model", keys)
    assert len(got) == 900
    for i, k in enumerate(keys):
        np.testing.assert_array_equal(got[k], vec(i))
    assert cache.info()["vectors"] == 900


class Counting:
    """A tokenizer that counts the documents it tokenises."""

    def __init__(self, inner: object) -> None:
        self.inner = inner
        self.name = inner.name  # type: ignore[attr-defined]
        self.fingerprint = inner.fingerprint  # type: ignore[attr-defined]
        self.calls = 0

    def token_starts(self, text: str) -> np.ndarray:
        self.calls += 1
        return self.inner.token_starts(text)  # type: ignore[attr-defined]


def test_second_pass_reads_every_document(target: CacheTarget) -> None:
    docs = load_corpus(DEMO / "corpus")
    tok = Counting(load_chunk_tokenizer("minilm"))
    first = corpus_token_starts(docs, tok, TokenStartsCache(target))
    assert tok.calls == len(docs)
    second = corpus_token_starts(docs, tok, TokenStartsCache(target))
    assert tok.calls == len(docs)  # nothing tokenised again
    plain = [tok.inner.token_starts(d.text) for d in docs]
    assert all(np.array_equal(a, b) for a, b in zip(second, plain, strict=True))
    assert [a.dtype for a in second] == [a.dtype for a in first]
    spec = ChunkSpec("recursive", 40, 8, "path")
    assert chunk_corpus(docs, spec, tok.inner, second) == chunk_corpus(docs, spec, tok.inner)


def test_a_changed_document_and_another_tokenizer_are_tokenised(target: CacheTarget) -> None:
    docs = load_corpus(DEMO / "corpus")
    cache = TokenStartsCache(target)
    minilm = Counting(load_chunk_tokenizer("minilm"))
    corpus_token_starts(docs, minilm, cache)
    edited = [dataclasses.replace(docs[0], text=docs[0].text + " one more sentence."), *docs[1:]]
    corpus_token_starts(edited, minilm, cache)
    assert minilm.calls == len(docs) + 1
    regex = Counting(load_chunk_tokenizer("regex"))
    got = corpus_token_starts(docs, regex, cache)
    assert regex.calls == len(docs)
    assert np.array_equal(got[0], regex.inner.token_starts(docs[0].text))
    assert cache.count() == 2 * len(docs) + 1


@pytest.mark.parametrize("damage", ["unsorted", "past_the_end", "torn"])
def test_a_damaged_starts_row_is_tokenised_again_with_a_warning(
        target: CacheTarget, damage: str, caplog: pytest.LogCaptureFixture) -> None:
    docs = load_corpus(DEMO / "corpus")[:2]
    tok = Counting(load_chunk_tokenizer("minilm"))
    cache = TokenStartsCache(target)
    good = corpus_token_starts(docs, tok, cache)
    bad = good[0].copy()
    if damage == "unsorted":
        bad[[1, 2]] = bad[[2, 1]]
    elif damage == "past_the_end":
        bad[-1] = len(docs[0].text)
    blob = bad.tobytes()[:-2] if damage == "torn" else bad.tobytes()
    cache._db.execute("UPDATE token_starts SET starts = ? WHERE key = ?",
                      [blob, text_key(docs[0].text)])
    with caplog.at_level(logging.WARNING):
        again = corpus_token_starts(docs, tok, TokenStartsCache(target))
    assert "fail their check" in caplog.text
    assert tok.calls == len(docs) + 1
    assert all(np.array_equal(a, b) for a, b in zip(again, good, strict=True))
    corpus_token_starts(docs, tok, TokenStartsCache(target))  # the fresh starts replaced it
    assert tok.calls == len(docs) + 1


def test_a_damaged_spans_row_is_cut_again(target: CacheTarget,
                                          caplog: pytest.LogCaptureFixture) -> None:
    docs = load_corpus(DEMO / "corpus")
    tok = load_chunk_tokenizer("minilm")
    starts = corpus_token_starts(docs, tok)
    spec = ChunkSpec("fixed", 48, 0, "none")
    expected = corpus_spans(docs, spec, tok, starts)
    cache = TokenStartsCache(target)
    assert corpus_spans(docs, spec, tok, starts, cache) == expected
    assert cache.count_spans() == len({spans_key(d, spec, tok.fingerprint) for d in docs})
    # a span past the end of the document, and a truncated row
    cache._db.execute("UPDATE chunk_spans SET spans = ? WHERE key = ?",
                      [(10**9).to_bytes(8, "little") * 2 * len(expected[0]),
                       spans_key(docs[0], spec, tok.fingerprint)])
    cache._db.execute("UPDATE chunk_spans SET spans = ? WHERE key = ?",
                      [b"\x00", spans_key(docs[1], spec, tok.fingerprint)])
    with caplog.at_level(logging.WARNING):
        assert corpus_spans(docs, spec, tok, starts, cache) == expected
    assert any("fail their check" in r.getMessage() for r in caplog.records)


def test_parse_cache_round_trip_and_an_unreadable_entry_is_a_miss(target: CacheTarget) -> None:
    from pdfgen import make_pdf

    cache = ParseCache(target)
    data = make_pdf([[(18, True, "1 Links"), (10, False, "A hard link is a duplicate name.")]])
    parser = get_parser("pdf", "pypdf")
    parsed, rec = parse_file(data, "b.pdf", parser, cache)
    assert not rec.cached
    again, rec2 = parse_file(data, "b.pdf", parser, ParseCache(target))
    assert rec2.cached and again == parsed
    if target.shared:
        cache._db.execute("UPDATE parsed SET payload = ?", [b"{not json"])
    else:
        (entry,) = (target.dir / "parsed").rglob("*.json")
        entry.write_text("{not json")
    third, rec3 = parse_file(data, "b.pdf", parser, cache)
    assert not rec3.cached and third == parsed
