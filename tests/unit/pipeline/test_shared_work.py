"""cache.prewarm: which texts a sweep's configurations share (computed by hand on a small
corpus), and the claims that make jobs running at the same time embed each shared text once."""

from __future__ import annotations

import json
import multiprocessing as mp
import time
from pathlib import Path

import numpy as np

from helpers import job_of
from sweep.application.shared import Need, Plan, plan_configs, plan_shared, totals, totals_line
from sweep.common.sqlite import text_key
from sweep.common.store import CacheTarget
from sweep.embedding.cache import EmbeddingCache
from sweep.embedding.claims import ClaimBoard, take_part
from sweep.pipeline import memo as pipeline


def test_plan_shared_by_hand() -> None:
    # Three configurations of model m (two chunkings, one repeated) and one of model n.
    needs = [
        Need("m", ("alpha", "beta"), ("q1", "q2")),
        Need("m", ("alpha", "gamma"), ("q1", "q2")),
        Need("m", ("delta", "delta"), ("q1", "q2")),  # a repeat within one is one need
        Need("n", ("alpha",), ("q1",)),  # another model: shares nothing with m
    ]
    plan = plan_shared(needs)
    assert plan.configurations == 4
    # m: alpha (2 configs), q1, q2 (3 each) shared; beta, gamma, delta needed once
    assert plan.unique == {"m": 6, "n": 2}
    assert sorted(t for _, t in plan.shared["m"]) == ["alpha", "q1", "q2"]
    assert dict((t, q) for q, t in plan.shared["m"]) == {"alpha": False, "q1": True,
                                                         "q2": True}
    assert "n" not in plan.shared
    assert plan.n_unique == 8 and plan.n_shared == 3
    # units: documents and questions apart, in slices
    assert plan.units(size=1) == [("m", False, ["alpha"]),
                                  *[("m", True, [t]) for _, t in plan.shared["m"] if _]]


def test_prefixes_make_the_key() -> None:
    # The same words as a chunk and as a question are two rows under different prefixes,
    # one row (the chunk's) under equal ones.
    a = Need("m", ("same",), ("same",), document_prefix="passage: ", query_prefix="query: ")
    assert len(a.keyed()) == 2
    b = Need("m", ("same",), ("same",))
    assert b.keyed() == {text_key("same"): (False, "same")}


def _corpus(tmp: Path) -> Path:
    """One short document under one heading (one chunk at sizes 128 and 256), two
    questions."""
    (tmp / "corpus").mkdir()
    text = "# Cats\n\nCats sleep for most of the day and hunt at dusk.\n"
    (tmp / "corpus" / "cats.md").write_text(text, encoding="utf-8")
    items = [{"qid": "a", "question": "when do cats hunt?",
              "evidence": [{"path": "cats.md", "quote": "hunt at dusk"}]},
             {"qid": "b", "question": "how long do cats sleep?",
              "evidence": [{"path": "cats.md", "quote": "Cats sleep for most of the day"}]}]
    (tmp / "golden.jsonl").write_text("".join(json.dumps(i) + "\n" for i in items),
                                      encoding="utf-8")
    return tmp


def test_plan_configs_on_a_small_corpus(tmp_path: Path) -> None:
    data = _corpus(tmp_path)
    base = [f"corpus.path={data}/corpus", f"golden.path={data}/golden.jsonl",
            f"cache.dir={tmp_path}/cache"]
    configs = [job_of([*base, "chunk.size=128", "chunk.header=none"]),
               job_of([*base, "chunk.size=256", "chunk.header=none"]),
               job_of([*base, "chunk.size=128", "chunk.header=path"]),
               # embeds nothing (no diagnosis either): not planned
               job_of([*base, "retrieval=bm25", "retrieval.diagnose=false"]),
               # another query prefix is another model fingerprint, alone with its own
               job_of([*base, "embedding.query_prefix=q:"])]
    pipeline.clear_memo()
    plan = plan_configs(configs)
    assert plan.configurations == 3  # bm25 embeds nothing; the prefixed model is alone
    (model,) = plan.shared
    whole = "# Cats\n\nCats sleep for most of the day and hunt at dusk."
    shared = sorted(t for _, t in plan.shared[model])
    # the document as one chunk without a header (sizes 128 and 256), and both questions;
    # the path-header chunk ("Cats" before the text) is needed by one configuration only
    assert len(shared) == 3
    assert "how long do cats sleep?" in shared and "when do cats hunt?" in shared
    (chunk_text,) = [t for q, t in plan.shared[model] if not q]
    assert chunk_text.strip().endswith("hunt at dusk.") and chunk_text.strip() in whole
    assert plan.unique == {model: 4}


# ------------------------------------------------------------------- claims

def test_claims_expire_when_the_holder_dies(tmp_path: Path) -> None:
    target = CacheTarget(tmp_path)
    ClaimBoard(target).publish("p", [("m", False, ["a", "b"]), ("m", True, ["c"])])
    dead = ClaimBoard(target, holder="dead", lease_s=0.3)
    held = dead.claim("p", "m")
    assert held is not None and held.texts == ("a", "b") and not held.query
    alive = ClaimBoard(target, holder="alive", lease_s=60)
    second = alive.claim("p", "m")
    assert second is not None and second.texts == ("c",) and second.query
    assert alive.claim("p", "m") is None  # the first is held, its lease running
    time.sleep(0.4)  # "dead" never renews: its lease runs out
    taken = alive.claim("p", "m")
    assert taken is not None and taken.unit == held.unit
    alive.finish(taken)
    alive.finish(second)
    assert alive.counts("p") == (2, 2)
    alive.drop("p")
    assert alive.counts("p") == (0, 0)


def test_a_living_holder_keeps_its_claim(tmp_path: Path) -> None:
    target = CacheTarget(tmp_path)
    ClaimBoard(target).publish("p", [("m", False, ["a"])])
    slow = ClaimBoard(target, holder="slow", lease_s=0.4)
    unit = slow.claim("p", "m")
    assert unit is not None
    beating = slow.heartbeat(unit)  # what take_part runs while it embeds the unit
    try:
        time.sleep(1.2)  # three leases: renewed all along
        assert ClaimBoard(target, holder="other").claim("p", "m") is None
    finally:
        beating.set()
    time.sleep(0.6)  # no heartbeat any more: the lease runs out
    assert ClaimBoard(target, holder="other").claim("p", "m") is not None


DIM = 8


def _vector(text: str) -> np.ndarray:
    rng = np.random.default_rng(int.from_bytes(text_key(text)[:4], "little"))
    return rng.standard_normal(DIM).astype(np.float32)


def _job(folder: str, texts: list[str], go: object, out: object) -> None:
    """A job: its part of the shared units (claims), then its own texts from the cache or a
    "model" that counts what it is sent."""
    target = CacheTarget(Path(folder))
    cache = EmbeddingCache(target)
    board = ClaimBoard(target, lease_s=30)
    sent: list[str] = []

    def model(batch: list[str]) -> int:
        time.sleep(0.05 * len(batch))  # slow enough that the two jobs overlap
        missing = [t for t in batch if text_key(t) not in cache.get_many("m", [text_key(t)])]
        sent.extend(missing)
        cache.put_many("m", [(text_key(t), _vector(t)) for t in missing])
        return len(missing)

    go.wait(120)  # type: ignore[attr-defined]  # both jobs imported and ready: they start together
    take_part(board, "p", "m", lambda batch, _q: model(batch), poll_s=0.05, progress=False)
    model(texts)  # its own pass: the shared texts are cached now
    out.put(sent)  # type: ignore[attr-defined]


def test_two_concurrent_jobs_encode_each_text_once(tmp_path: Path) -> None:
    a = [f"chunk {i}" for i in range(60)] + [f"question {i}" for i in range(20)]
    b = [f"chunk {i}" for i in range(30, 90)] + [f"question {i}" for i in range(20)]
    plan = plan_shared([Need("m", tuple(a), ()), Need("m", tuple(b), ())])
    assert plan.n_shared == 30 + 20 and plan.n_unique == 110
    ClaimBoard(CacheTarget(tmp_path)).publish("p", plan.units(size=10))
    ctx = mp.get_context("spawn")
    go, out = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_job, args=(str(tmp_path), texts, go, out)) for texts in (a, b)]
    for p in procs:
        p.start()
    sent = [out.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    # every text of the sweep encoded once in total; both jobs took a part of the shared ones
    assert sorted(sent[0] + sent[1]) == sorted(set(a) | set(b))
    shared = {t for _, t in plan.shared["m"]}
    assert all(shared & set(s) for s in sent)
    assert len(EmbeddingCache(CacheTarget(tmp_path)).get_many(
        "m", [text_key(t) for t in set(a) | set(b)])) == 110


def test_totals_per_node_against_the_unique_texts() -> None:
    reports = [{"node": "b", "texts_encoded": 5}, {"node": "a", "texts_encoded": 7},
               {"node": "a", "texts_encoded": 3},
               {"node": "a", "texts_encoded": 9, "resumed_from_run": "r"}]  # sent nothing now
    t = totals(reports, {"unique_texts": 12, "shared_texts": 4})
    assert t == {"per_node": {"a": 10, "b": 5}, "total": 15, "unique": 12, "shared": 4}
    assert totals_line(t) == ("texts encoded: 15 in total (a 10, b 5); the sweep's unique "
                              "texts: 12 (4 needed by more than one configuration, embedded "
                              "once through cache.prewarm)")
    assert totals([], None)["unique"] is None
    assert isinstance(Plan(), Plan)
