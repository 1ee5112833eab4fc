"""Shared helpers for the test tiers (importable from any folder: pyproject puts tests/ on
``pythonpath``). Fixtures live in conftest.py; plain functions and constants live here, because
pytest discourages importing conftest modules by name."""

from __future__ import annotations

import contextlib
import os
import select
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# The public data sets sit beside the clone; $CHUNK_SWEEP_SHARED_DATA points elsewhere (e.g. from a
# git worktree, whose parent folder is not the clone's).
SHARED_DATA = Path(os.environ.get("CHUNK_SWEEP_SHARED_DATA") or ROOT.parent / "shared" / "data")
DEMO = ROOT / "data" / "demo"


def job_of(overrides: Sequence[str]) -> Any:
    """The `JobSpec` of ``overrides`` (composed, then built once, as a job builds it)."""
    from sweep.config.compose import compose
    from sweep.config.specs import build_job_spec

    return build_job_spec(compose(list(overrides)))


def label_settings(corpus: str | Path, golden: str | Path, *overrides: str, top: int = 8
                   ) -> Any:
    """`sweep label`'s settings for a test corpus, built as the command builds them (from the
    composed configuration's `JobSpec`): caches and tracking off and markdown and text files
    only, unless ``overrides`` say otherwise."""
    from sweep.label.app import LabelSettings

    base = [f"corpus.path={corpus}", f"golden.path={golden}", "cache.enabled=false",
            "tracking=off", "corpus.extensions=['.md','.markdown','.txt']"]
    return LabelSettings(job_of([*base, *overrides]), top)


def run_cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
            timeout: int = 900) -> subprocess.CompletedProcess[str]:
    """Run ``python -m sweep ...`` (or ``-m sweep.cli`` for subcommands) in a subprocess.

    Without ``cwd`` it runs in the current folder, which during a test session is the
    session's scratch folder (conftest.py), never the repository: Hydra's ``outputs/`` and
    ``multirun/`` and the default ``mlflow.db`` are relative to it.
    """
    full_env = {**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=full_env,
                          capture_output=True, text=True, timeout=timeout)


def import_covid(shared_data: Path, folder: Path) -> Path:
    """COVID-QA from ../shared/data imported with `sweep import squad` into ``folder / "d"``
    (``corpus/`` and ``golden.jsonl``); returns that folder."""
    src = shared_data / "covid_qa" / "200423_covidQA.json"
    res = run_cli("-m", "sweep.cli", "import", "squad", str(src), "--out", str(folder / "d"),
                  cwd=folder)
    assert res.returncode == 0, res.stderr[-2000:]
    return folder / "d"


@contextmanager
def mlflow_tracking_uri(uri: str) -> Iterator[None]:
    """MLflow's global tracking URI set to ``uri`` for in-process use of its fluent API
    (tracing, ``mlflow.set_experiment``), then put back as it was.

    ``mlflow.set_tracking_uri`` also exports MLFLOW_TRACKING_URI, and restoring with
    ``set_tracking_uri(mlflow.get_tracking_uri())`` exports the *default* it computed (this
    folder's mlflow.db, absolute): every later subprocess of the session then wrote to that
    store. The variable's own earlier value is what is restored (None unsets both)."""
    import mlflow

    saved = os.environ.get("MLFLOW_TRACKING_URI")
    mlflow.set_tracking_uri(uri)
    try:
        yield
    finally:
        mlflow.set_tracking_uri(saved)


def mlflow_runs(uri: str) -> tuple:
    """(client, every run of every experiment) in the MLflow store at ``uri``."""
    from mlflow import MlflowClient

    client = MlflowClient(uri)
    exps = [e.experiment_id for e in client.search_experiments()]
    return client, client.search_runs(exps, max_results=100)


def check_written(out: Path) -> list[Any]:
    """An importer's written folder loads, parses without errors and resolves without errors."""
    from sweep.data.corpus import load_corpus
    from sweep.data.golden import load_golden
    from sweep.evaluation.relevance import CorpusIndex, resolve_all

    docs = load_corpus(out / "corpus")
    golden = load_golden(out / "golden.jsonl")
    assert golden.errors == []
    by_id = {d.doc_id: d for d in docs}
    for item in golden.items:
        for ev in item.evidence:
            assert by_id[ev.doc_id].text[ev.start:ev.end] == ev.quote
    resolved = resolve_all(golden.items, CorpusIndex(docs), None)
    assert [p for r in resolved for p in r.problems if p.severity == "error"] == []
    return resolved


@contextmanager
def running_label_server(args: list[str], folder: Path) -> Iterator[str]:
    """``sweep label --port 0 ARGS`` in a subprocess run from ``folder`` (its stderr in
    ``folder/server.log``); yields the URL it announces, stops it afterwards. Fails the test
    with the log when the server does not start within 300 s."""
    log = (folder / "server.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "sweep.cli", "label", "--port", "0", *args],
        cwd=folder, stdout=subprocess.PIPE, stderr=log, text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"})
    url = None
    deadline = time.monotonic() + 300
    assert proc.stdout is not None
    while time.monotonic() < deadline and proc.poll() is None:
        ready, _, _ = select.select([proc.stdout], [], [], 1.0)
        if ready:
            line = proc.stdout.readline()
            if "serving on " in line:
                url = line.split("serving on ", 1)[1].split()[0]
                break
    try:
        if url is None:
            import pytest

            proc.kill()
            log.close()
            pytest.fail("sweep label did not start:\n" + (folder / "server.log").read_text())
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def check_rows_against_reference(rows: list[dict[str, Any]], resolved: list[Any],
                                 chunks: list[Any], rankings: list[Any], spans: list[Any],
                                 spec: Any) -> int:
    """Every rank, span and document metric of ``evaluate``'s rows equals (==) what the
    per-metric reference functions of `sweep.evaluation.metrics` give on the same ranking and
    placed ``spans``; returns how many rows were checked."""
    from sweep.evaluation import metrics as m
    from sweep.evaluation.evaluate import MIN_MODE_CAP

    ks = sorted(set(spec.k) | {spec.prompt_k})
    checked = 0
    for row, res, ranking in zip(rows, resolved, rankings, strict=True):
        if res.doc_ids:
            docs = m.collapse_to_docs([chunks[i].doc_id for i in ranking.indices])
            assert row["doc_mrr"] == m.reciprocal_rank(docs, set(res.doc_ids))
            for k in ks:
                assert row[f"doc_recall_at_{k}"] == m.recall_at_k(docs, set(res.doc_ids), k)
        if row["status"] != "scored":
            continue
        checked += 1
        ids = [chunks[i].chunk_id for i in ranking.indices]
        rel = set(row["relevant_ids"].split())
        ranked = [spans[i] for i in ranking.indices]
        ev = list(res.spans)
        for k in ks:
            assert row[f"recall_at_{k}"] == m.recall_at_k(ids, rel, k)
            assert row[f"hit_at_{k}"] == m.hit_at_k(ids, rel, k)
            assert row[f"ndcg_at_{k}"] == m.ndcg_at_k(ids, dict.fromkeys(rel, 1.0), k)
            assert row[f"evidence_recall_at_{k}"] == m.evidence_recall_at_k(ranked, ev, k)
            assert row[f"span_precision_at_{k}"] == m.span_precision_at_k(ranked, ev, k)
            assert row[f"span_iou_at_{k}"] == m.span_iou_at_k(ranked, ev, k)
        tokens = [chunks[i].n_tokens for i in ranking.indices]
        assert row["evidence_recall_at_budget"] == m.evidence_recall_at_budget(
            ranked, tokens, ev, spec.token_budget)
        k_min = min(max(row["n_touching"], 1), MIN_MODE_CAP)
        assert row["evidence_recall_at_min"] == m.evidence_recall_at_k(ranked, ev, k_min)
        assert row["span_precision_at_min"] == m.span_precision_at_k(ranked, ev, k_min)
        assert row["span_iou_at_min"] == m.span_iou_at_k(ranked, ev, k_min)
    return checked


def old_run_all(search: Any, questions: Sequence[str], query_vecs: Any) -> list[Any]:
    """`ConfigSearch.run_all` as it was before the batched first stage (a copy, written with
    the per-question reference functions): every block's dense product ranked by `top_k` row
    by row, then `ConfigSearch.run` per question (`lexical_search`, `rrf_fuse`)."""
    from sweep.retrieval.ranking import top_k

    if search.chunk_vecs is None or query_vecs is None:
        return [search.run(q) for q in questions]
    dense = []
    for lo in range(0, query_vecs.shape[0], 256):
        block = query_vecs[lo : lo + 256] @ search.chunk_vecs.T
        dense.extend(top_k(row, search.tiebreak, search.depth) for row in block)
    return [search.run(q, dense=d) for q, d in zip(questions, dense, strict=True)]


def same_results(new: list[Any], old: list[Any]) -> int:
    """Two lists of `SearchResult` equal (final, dense and BM25 rankings: indices and scores,
    ==); returns how many ranked entries were compared."""
    assert len(new) == len(old)
    for a, b in zip(new, old, strict=True):
        assert (a.final, a.dense, a.bm25) == (b.final, b.dense, b.bm25)
    return sum(len(r.final.indices) for r in new)


class TcpRelay:
    """A TCP relay from 127.0.0.1:``port`` to a real server, for the fault tests: the only
    fake between the client and the server, and what a dropped connection or a server that
    dies looks like from the client's side.

    - ``cut()``: the server died: every open connection closed, new ones refused (the
      listener is gone).
    - ``cut_on``: do that at the first client chunk whose first line holds these bytes (an
      HTTP request line such as ``b"/add "``).
    - ``cut_after``: cut only the one connection that carries more than that many bytes
      towards the server (both sides closed mid-stream); later connections pass everything.
    - ``refuse``: accept and at once close every new connection (a server out of reach).
    ``cuts`` counts the connections cut by ``cut_after``.
    """

    def __init__(self, host: str, port: int) -> None:
        self.upstream = (host, port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self.cut_on: bytes | None = None
        self.cut_after: int | None = None
        self.refuse = False
        self.cuts = 0
        self.dead = False
        self._socks: list[socket.socket] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if self.dead or self.refuse:
                client.close()
                if self.dead:
                    return
                continue
            try:
                server = socket.create_connection(self.upstream)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._socks += [client, server]
            threading.Thread(target=self._pipe, args=(client, server, True), daemon=True).start()
            threading.Thread(target=self._pipe, args=(server, client, False),
                             daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket, upward: bool) -> None:
        sent = 0
        try:
            while data := src.recv(65536):
                sent += len(data)
                if upward and self.cut_on and self.cut_on in data.split(b"\r\n", 1)[0]:
                    self.cut()
                    return
                if upward and self.cut_after is not None and sent > self.cut_after:
                    self.cut_after = None
                    self.cuts += 1
                    break
                dst.sendall(data)
        except OSError:
            pass
        for sock in (src, dst):  # one side ended: the other learns it at once
            _close(sock)

    def cut(self) -> None:
        self.dead = True
        # wakes the accept() blocked in the other thread (a bare close() would not)
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()
        with self._lock:
            for sock in self._socks:
                _close(sock)

    def close(self) -> None:
        self.cut()


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()


PG_PASSWORD_ENV = "CHUNK_SWEEP_CACHE_PASSWORD"


def postgres_server(tmp_path_factory: Any) -> Iterator[str]:
    """The body of a module fixture: a PostgreSQL URL for the cache.backend=postgres tests
    (no password in it; the password is in $CHUNK_SWEEP_CACHE_PASSWORD). The server .ci/run
    started ($CHUNK_SWEEP_TEST_POSTGRES), or one this fixture starts with servers/postgres.sh
    on a free port and stops after the module."""
    import secrets

    import pytest

    given = os.environ.get("CHUNK_SWEEP_TEST_POSTGRES")
    if given:
        if not os.environ.get(PG_PASSWORD_ENV):
            pytest.fail(f"CHUNK_SWEEP_TEST_POSTGRES is set but {PG_PASSWORD_ENV} is not",
                        pytrace=False)
        yield given
        return
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    patch = pytest.MonkeyPatch()
    patch.setenv(PG_PASSWORD_ENV, secrets.token_urlsafe(18))
    env = {**os.environ, "PORT": str(port), "STATE": str(tmp_path_factory.mktemp("postgres"))}
    script = str(ROOT / "servers" / "postgres.sh")
    res = subprocess.run([script, "start"], env=env, capture_output=True, text=True,
                         timeout=300)
    try:
        if res.returncode != 0:
            pytest.fail(f"postgres did not start on port {port}: {res.stderr.strip()}",
                        pytrace=False)
        yield res.stdout.strip().splitlines()[-1]
    finally:
        subprocess.run([script, "stop"], env=env, capture_output=True, timeout=120)
        patch.undo()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now (for a server a test starts)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def served_model_ids(url: str) -> list[str] | None:
    """The model ids an OpenAI-compatible server at ``url`` (without /v1) lists, or None when
    it does not answer."""
    import json
    import urllib.request

    try:
        with urllib.request.urlopen(f"{url}/v1/models", timeout=3) as resp:
            return [m["id"] for m in json.load(resp)["data"]]
    except OSError:
        return None
