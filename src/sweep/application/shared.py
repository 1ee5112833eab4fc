"""Embedding work shared across a sweep's configurations: planned once before the fan-out,
done once by whichever jobs claim it (``cache.prewarm``, docs/guide/cluster.md).

Two configurations with the same embedding model need the same questions, and often the same
chunk texts (a retrieval or reranking axis over one chunking; two boundaries that cut a
heading-less corpus alike). Jobs running at the same time on one cache, or on the nodes of a
cluster with the shared cache, would each embed them. Before the fan-out, the sweep's parent
chunks every configuration (no model runs), keeps the texts that more than one of them needs
under the same model fingerprint, and publishes them as units in the claims table of the cache
(`sweep.embedding.claims`). Each job takes part in that work before its own: it embeds the
units it claims and waits for those other jobs hold, then finds every shared text in the
cache. Each text is embedded once in total, and jobs that start together split the work.

``cache.prewarm``: ``auto`` (default) plans when the launcher runs jobs side by side (the basic
launcher runs them one after another in one process, where each text is embedded once
anyway); ``on`` plans with any launcher; ``off`` never. Only Hydra's basic sweeper is planned
for (another sweeper, e.g. Optuna's, chooses its configurations as it goes). Configurations
whose texts need a model or an LLM to exist (``chunk.boundary=semantic|cluster``,
``chunk.header=contextual``) are left out of the plan. A sweep in which no two configurations
share a model costs one composition per job and nothing else.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sweep.application.corpus import open_corpus_view
from sweep.common.errors import SweepError
from sweep.common.files import read_text_regular
from sweep.common.progress import Progress
from sweep.common.sqlite import text_key
from sweep.common.store import CacheTarget
from sweep.config.specs import JobSpec
from sweep.data.abstentions import load_abstentions
from sweep.embedding.claims import ClaimBoard, take_part
from sweep.pipeline.run import embedder_for

log = logging.getLogger(__name__)

MODES = ("auto", "on", "off")
PLAN_FILE = "prewarm.json"
UNIT_TEXTS = 256  # texts per claimable unit: a few minutes of MiniLM on 2 loaded cores


@dataclass(frozen=True)
class Need:
    """What one configuration sends to its embedding model (texts without their prefix)."""

    model: str  # the embedder's fingerprint: what keys the cache
    documents: tuple[str, ...]
    queries: tuple[str, ...]
    document_prefix: str = ""
    query_prefix: str = ""

    def keyed(self) -> dict[bytes, tuple[bool, str]]:
        """Cache key -> (as a query, text), each text once. A question that is also a chunk
        text under equal prefixes is one cache row: the chunk's."""
        out = {text_key(self.document_prefix + t): (False, t) for t in self.documents}
        for q in self.queries:
            out.setdefault(text_key(self.query_prefix + q), (True, q))
        return out


@dataclass
class Plan:
    """The sweep's texts per model: how many distinct, and those more than one needs."""

    configurations: int = 0  # configurations planned (their texts counted)
    unique: dict[str, int] = field(default_factory=dict)
    shared: dict[str, list[tuple[bool, str]]] = field(default_factory=dict)

    @property
    def n_unique(self) -> int:
        return sum(self.unique.values())

    @property
    def n_shared(self) -> int:
        return sum(len(v) for v in self.shared.values())

    def units(self, size: int = UNIT_TEXTS) -> list[tuple[str, bool, list[str]]]:
        """(model, as queries, texts) in claimable slices, documents and questions apart."""
        out: list[tuple[str, bool, list[str]]] = []
        for model, items in sorted(self.shared.items()):
            for query in (False, True):
                texts = [t for q, t in items if q == query]
                out += [(model, query, texts[lo:lo + size]) for lo in range(0, len(texts), size)]
        return out


def plan_shared(needs: Sequence[Need]) -> Plan:
    """The texts that more than one configuration needs, per model, in cache-key order."""
    count: dict[str, dict[bytes, int]] = {}
    text: dict[str, dict[bytes, tuple[bool, str]]] = {}
    for need in needs:
        counts = count.setdefault(need.model, {})
        texts = text.setdefault(need.model, {})
        for key, item in need.keyed().items():
            counts[key] = counts.get(key, 0) + 1
            texts.setdefault(key, item)
    shared = {m: [text[m][k] for k in sorted(c) if c[k] > 1] for m, c in count.items()}
    return Plan(len(needs), {m: len(c) for m, c in count.items()},
                {m: s for m, s in shared.items() if s})


def need_of(job: JobSpec) -> Need | None:
    """What ``job`` embeds, from its chunks (the token-starts and spans caches fill as a job's
    would); None when it embeds nothing or its texts need a model to exist."""
    if not _plannable(job):
        return None
    embedder = embedder_for(job.embedding, job.cache)
    view = open_corpus_view(job)
    resolved = view.resolve()
    abstentions, _ = load_abstentions(job.golden)
    chunks = view.tiled()
    # what run_job embeds: the chunks, then the scored questions and the abstentions
    return Need(embedder.fingerprint, tuple(c.embed_text for c in chunks),
                tuple([r.item.question for r in resolved] + [a.question for a in abstentions]),
                embedder.spec.document_prefix, embedder.spec.query_prefix)


def _plannable(job: JobSpec) -> bool:
    # A boundary that cuts by meaning or a model-written header: the texts need a model to
    # exist, so they cannot be known before the fan-out.
    embeds = job.retrieval.uses_dense or job.retrieval.diagnose
    return (job.cache is not None and embeds and job.chunking.cutting is None
            and job.chunking.context is None)


def model_of(job: JobSpec) -> str:
    return embedder_for(job.embedding, job.cache).fingerprint


def plan_configs(jobs: Sequence[JobSpec], progress: Progress | None = None) -> Plan:
    """`plan_shared` over the configurations that share a model with another one: those
    alone with theirs are not chunked (nothing of theirs can be shared)."""
    by_model: dict[str, list[JobSpec]] = {}
    for job in jobs:
        if _plannable(job):
            by_model.setdefault(model_of(job), []).append(job)
    needs = []
    for group in by_model.values():
        if len(group) < 2:
            continue
        for job in group:
            need = need_of(job)
            if need is not None:
                needs.append(need)
            if progress is not None:
                progress.update(1, note=f"chunked {len(needs)} configurations")
    return plan_shared(needs)


def write_plan(sweep_dir: Path, target: CacheTarget, plan: Plan, n_configs: int,
               seconds: float) -> dict[str, Any]:
    """Publish ``plan``'s units on the claims board of ``target`` and write what the jobs
    and the sweep's end read into ``sweep_dir/prewarm.json``."""
    board = ClaimBoard(target)
    plan_id = uuid.uuid4().hex
    units = plan.units()
    board.publish(plan_id, units)
    info = {
        "plan": plan_id, "board": board.location, "configurations": n_configs,
        "planned": plan.configurations, "unique_texts": plan.n_unique,
        "shared_texts": plan.n_shared, "units": len(units), "plan_s": round(seconds, 3),
        "models": {m: {"unique_texts": plan.unique[m], "shared_texts": len(plan.shared.get(m, ()))}
                   for m in plan.unique},
        "cache": {"dir": str(target.dir), "backend": target.backend, "url": target.url,
                  "password_env": target.password_env},
    }
    board.close()
    sweep_dir.mkdir(parents=True, exist_ok=True)
    tmp = sweep_dir / f".{PLAN_FILE}.tmp"
    tmp.write_text(json.dumps(info, indent=1), encoding="utf-8")
    tmp.replace(sweep_dir / PLAN_FILE)  # a job never reads half a plan
    return info


def prewarm(mode: str, launcher: str, sweeper: str, sweep_dir: Path,
            expand: Callable[[], Sequence[Sequence[str]] | None],
            compose_job: Callable[[list[str]], JobSpec | None]) -> dict[str, Any] | None:
    """The pre-fan-out step: plan the sweep's jobs (``expand()``: their override lists, None
    when they cannot be listed; ``compose_job`` turns one into its `JobSpec`, None for a
    job that will fail on its own) and publish the shared texts. None when nothing is
    planned."""
    if mode not in MODES:
        raise SweepError(f"cache.prewarm: {mode!r} is not one of {', '.join(MODES)}")
    if mode == "off":
        return None
    if not sweeper.endswith(".BasicSweeper"):
        log.info("cache.prewarm: the sweeper %s chooses its configurations as it runs: no "
                 "shared texts planned", sweeper.rsplit(".", 1)[-1])
        return None
    if mode == "auto" and launcher.endswith(".BasicLauncher"):
        return None  # one process, one job after another: each text is embedded once anyway
    jobs = expand()
    if jobs is None or len(jobs) < 2:
        return None
    (sweep_dir / PLAN_FILE).unlink(missing_ok=True)  # a plan of an earlier run of this folder
    start = time.perf_counter()
    with Progress(f"cache.prewarm: the texts of {len(jobs)} configurations", bar=False) as bar:
        try:
            configs = [c for c in (compose_job(list(job)) for job in jobs) if c is not None]
            plan = plan_configs(configs, bar)
        except SweepError as exc:  # e.g. a corpus that does not load: each job says it
            log.warning("cache.prewarm: no shared texts planned (%s)", exc)
            return None
    if not plan.shared:
        log.info("cache.prewarm: no text is needed by two configurations (%.1f s)",
                 time.perf_counter() - start)
        return None
    target = configs[0].cache
    assert target is not None  # planned configurations have the cache on
    info = write_plan(sweep_dir, target, plan, len(jobs), time.perf_counter() - start)
    log.info("cache.prewarm: %s unique texts over %d configurations, %s of them needed by more "
             "than one: %d units, embedded once by the jobs that claim them (%.1f s)",
             f"{plan.n_unique:,}", plan.configurations, f"{plan.n_shared:,}", info["units"],
             info["plan_s"])
    return info


def read_plan(sweep_dir: Path) -> dict[str, Any] | None:
    path = sweep_dir / PLAN_FILE
    try:
        return json.loads(read_text_regular(path))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        log.warning("%s: unreadable (%s); this job embeds its texts alone", path, exc)
        return None


def join(job: JobSpec, sweep_dir: Path, *, progress: bool = True) -> dict[str, float] | None:
    """A job's part of the shared work of its sweep (before its own): the units of its model
    it claims, embedded into the cache, and the wait for the rest. None without a plan."""
    info = read_plan(sweep_dir)
    target = job.cache
    if info is None or target is None or not _plannable(job):
        return None
    embedder = embedder_for(job.embedding, job.cache)
    if embedder.fingerprint not in info["models"]:
        return None
    board = ClaimBoard(target)
    if board.location != info["board"]:  # another cache (another node's cache.dir)
        board.close()
        return None

    def encode(texts: list[str], query: bool) -> int:
        before = embedder.encoded_texts
        embedder.encode(texts, query=query, progress=False)
        return embedder.encoded_texts - before

    start = time.perf_counter()
    try:
        done = take_part(board, info["plan"], embedder.fingerprint, encode, progress=progress)
    finally:
        board.close()
    return {**done, "seconds": round(time.perf_counter() - start, 3)}


def add_to_report(rep: dict[str, Any], work: dict[str, float] | None) -> None:
    """The shared work into report.json: ``shared_work``, and its texts in ``texts_encoded``
    (every text this job sent to a model)."""
    if work is None:
        return
    rep["shared_work"] = {k: (int(v) if k in ("units", "texts_encoded") else v)
                          for k, v in work.items()}
    rep["texts_encoded"] = int(rep.get("texts_encoded", 0)) + int(work["texts_encoded"])


def totals(reports: Sequence[dict[str, Any]], plan: dict[str, Any] | None) -> dict[str, Any]:
    """texts_encoded per node and in total over the jobs that ran (a resumed job sent
    nothing), against the sweep's unique texts when the plan counted them."""
    per_node: dict[str, int] = {}
    for rep in reports:
        if rep.get("resumed_from_run") or "texts_encoded" not in rep:
            continue
        node = str(rep.get("node") or "?")
        per_node[node] = per_node.get(node, 0) + int(rep["texts_encoded"])
    return {"per_node": dict(sorted(per_node.items())), "total": sum(per_node.values()),
            "unique": plan.get("unique_texts") if plan else None,
            "shared": plan.get("shared_texts") if plan else None}


def totals_line(t: dict[str, Any]) -> str | None:
    if not t["per_node"]:
        return None
    nodes = ", ".join(f"{n} {v:,}" for n, v in t["per_node"].items())
    line = f"texts encoded: {t['total']:,} in total ({nodes})"
    if t["unique"] is not None:
        line += (f"; the sweep's unique texts: {t['unique']:,} ({t['shared']:,} needed by more "
                 "than one configuration, embedded once through cache.prewarm)")
    return line


def finish(sweep_dir: Path) -> dict[str, Any] | None:
    """The sweep ended: its plan's units leave the claims table (their texts are in the
    cache). Returns the plan, for the totals."""
    info = read_plan(sweep_dir)
    if info is None:
        return None
    c = info["cache"]
    try:
        board = ClaimBoard(CacheTarget(Path(c["dir"]), c["backend"], c["url"], c["password_env"]))
        board.drop(info["plan"])
        board.close()
    except SweepError as exc:
        log.warning("cache.prewarm: the plan's claims were not removed (%s)", exc)
    return info
