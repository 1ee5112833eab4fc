"""Working a labelling queue (issue 27): the next candidate, claimed; label, skip or reject.

The queue (``sweep questions import`` / ``generate`` write it) is JSONL in priority order, one
candidate a line (``cid``, ``question``, ``count``, ``source``, ``reason`` ...). It is never
rewritten here: what happened to a candidate is appended to ``<queue stem>.decisions.jsonl``
beside it, one line per decision ``{"cid", "decision", "qid", "at", "reason"}``, and the last
decision for a cid wins:

* ``labelled`` and ``rejected`` candidates never come back;
* ``skipped`` ones go to the back, in the order they were skipped;
* a candidate whose ``cid`` is already on a line of the golden file counts as labelled even
  without its decision line (a crash between the two appends loses nothing and never offers
  the same question twice); likewise a ``cid`` already in ``abstentions.jsonl`` counts as
  rejected (rejecting it again would write a second line with the same qid, which every
  later sweep refuses).

Two tabs (or two people on one page) must never get or save the same candidate: the next
candidate is *claimed* by the asking tab (an id the page keeps for its lifetime) until it
decides or the claim expires (`CLAIM_TTL_S`, so a closed tab does not hold a question for
ever). Every decision is checked under a lock on the decisions file, against the file as it is
on disk: a candidate another tab (or another process on the same queue) has labelled or
rejected meanwhile is refused with `ClaimConflict` (HTTP 409), and nothing is written.

A rejection "not answerable from the corpus" also appends the question to
``abstentions.jsonl`` beside the golden file (``{"qid", "question", "source", "source_ref",
"cid", "at"}``), which a later sweep scores as "should retrieve nothing relevant"
(`sweep.evaluation.abstention`).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from sweep.common.errors import SweepError
from sweep.common.files import read_bytes_regular
from sweep.data.abstentions import abstentions_path
from sweep.label.store import LOCK_TIMEOUT_S, GoldenFile, StaleError, append_bytes

DECISIONS = ("labelled", "rejected", "skipped")
FINAL = frozenset({"labelled", "rejected"})
QUEUE_SOURCES = ("log", "trace", "owner", "synthetic")
# Why a candidate is rejected; the first writes an abstention.
REJECT_REASONS = {
    "unanswerable": "not answerable from the corpus",
    "not_a_question": "not a question a user would ask (noise, test, greeting)",
    "duplicate": "the same question as one already labelled",
}
ABSTAIN = "unanswerable"
CLAIM_TTL_S = 15 * 60
MAX_REASON = 500


class ClaimConflict(StaleError):
    """Another tab holds this candidate, or has decided it already: nothing was written."""


def decisions_path(queue: Path) -> Path:
    """``q.jsonl`` -> ``q.decisions.jsonl`` beside it."""
    return queue.with_name(f"{queue.stem}.decisions.jsonl")


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass(frozen=True)
class Candidate:
    cid: str
    question: str
    line: int
    data: dict[str, Any]  # the whole queue line, shown on the page

    @property
    def source(self) -> str | None:
        source = self.data.get("source")
        return source if isinstance(source, str) else None  # read_queue checked its value

    @property
    def source_ref(self) -> str | None:
        ref = self.data.get("source_ref")
        if isinstance(ref, str) and ref.strip():
            return ref
        trace = self.data.get("trace_id")
        return trace if isinstance(trace, str) and trace.strip() else None


@dataclass(frozen=True)
class Decision:
    cid: str
    decision: str
    line: int  # its line in the decisions file: later lines win, and order the skipped


def _lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) of each non-blank line; a line that is not a JSON object is one
    `SweepError` naming the file and line."""
    try:
        data = read_bytes_regular(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise SweepError(f"{path}: cannot read ({exc.strerror})") from None
    for lineno, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
            why = exc.msg if isinstance(exc, json.JSONDecodeError) else type(exc).__name__
            raise SweepError(f"{path}:{lineno}: not a JSON line ({why})") from None
        if not isinstance(obj, dict):
            raise SweepError(f"{path}:{lineno}: each line must be a JSON object, got "
                             f"{type(obj).__name__}")
        yield lineno, obj


def read_queue(path: Path) -> list[Candidate]:
    """The candidates in priority order; a bad line is a `SweepError` naming line and field."""
    if not path.is_file():
        raise SweepError(f"queue file not found: {path}",
                         hint="write one with `sweep questions import LOG --out QUEUE.jsonl`")
    out: list[Candidate] = []
    seen: dict[str, int] = {}
    for lineno, obj in _lines(path):
        where = f"{path}:{lineno}"
        cid, question = obj.get("cid"), obj.get("question")
        if not isinstance(cid, str) or not cid.strip():
            raise SweepError(f"{where}: cid: missing or not a non-empty string: {cid!r}")
        if cid in seen:
            raise SweepError(f"{where}: cid: duplicate {cid!r} (first on line {seen[cid]})")
        if not isinstance(question, str) or not question.strip():
            raise SweepError(f"{where}: question: missing or not a non-empty string")
        source = obj.get("source")
        if source is not None and source not in QUEUE_SOURCES:
            raise SweepError(f"{where}: source: {source!r} is not one of "
                             f"{', '.join(QUEUE_SOURCES)}")
        seen[cid] = lineno
        out.append(Candidate(cid, question, lineno, obj))
    if not out:
        raise SweepError(f"{path}: the queue is empty")
    return out


def read_decisions(path: Path) -> dict[str, Decision]:
    """The last decision for each cid."""
    last: dict[str, Decision] = {}
    for lineno, obj in _lines(path):
        cid, decision = obj.get("cid"), obj.get("decision")
        if not isinstance(cid, str) or not cid:
            raise SweepError(f"{path}:{lineno}: cid: missing or not a string")
        if decision not in DECISIONS:
            raise SweepError(f"{path}:{lineno}: decision: {decision!r} is not one of "
                             f"{', '.join(DECISIONS)}")
        last[cid] = Decision(cid, decision, lineno)
    return last


def check_queue(path: Path) -> None:
    """The queue and its decisions file read, or the first bad line as a `SweepError`."""
    read_queue(path)
    read_decisions(decisions_path(path))


def order(candidates: list[Candidate], last: dict[str, Decision],
          labelled: frozenset[str] = frozenset()) -> list[Candidate]:
    """What is left to work, in order: the undecided in queue order, then the skipped in the
    order they were (last) skipped. Labelled, rejected and ``labelled`` cids are gone."""
    fresh = [c for c in candidates if c.cid not in last and c.cid not in labelled]
    skipped = sorted((c for c in candidates if c.cid not in labelled
                      and c.cid in last and last[c.cid].decision == "skipped"),
                     key=lambda c: last[c.cid].line)
    return fresh + skipped


@dataclass
class Claim:
    tab: str
    expires: float


@dataclass
class LabelQueue:
    """One queue file worked from one labelling page (and safe beside others on the file)."""

    path: Path
    golden: GoldenFile
    target: int = 50
    clock: Callable[[], float] = time.monotonic
    # doc_id -> the corpus path the page opens it by (None: not in the corpus, not shown)
    doc_source: Callable[[str], str | None] = lambda _doc_id: None
    claims: dict[str, Claim] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.path = Path(self.path)
        self._stamp: tuple[int, int] | None = None
        self._reload()
        self.decisions_file = decisions_path(self.path)
        read_decisions(self.decisions_file)  # a bad decisions file fails at start-up
        self._lock = threading.Lock()
        real = Path(os.path.realpath(self.decisions_file))
        self._file_lock = FileLock(str(real.with_name(f".{real.name}.lock")),
                                   timeout=LOCK_TIMEOUT_S)

    # ------------------------------------------------------------------ reading

    def _reload(self) -> None:
        """Read the queue again when its file changed: an import into it while the page runs
        (it replaces the file atomically) shows up at the next claim, claims kept."""
        try:
            st = self.path.stat()
        except OSError:
            st = None
        stamp = (st.st_mtime_ns, st.st_size) if st is not None else None
        if stamp is not None and stamp == self._stamp:
            return
        self.candidates = read_queue(self.path)
        self.by_cid = {c.cid: c for c in self.candidates}
        self._stamp = stamp

    def golden_cids(self) -> frozenset[str]:
        return frozenset(str(e.obj["cid"]) for e in self.golden.entries()
                         if e.obj is not None and isinstance(e.obj.get("cid"), str))

    def abstained_cids(self) -> frozenset[str]:
        """The cids already in abstentions.jsonl (written before their decision line)."""
        return frozenset(str(obj["cid"]) for _, obj in _lines(abstentions_path(self.golden.path))
                         if isinstance(obj.get("cid"), str))

    def _decided(self, last: dict[str, Decision]) -> dict[str, Decision]:
        """The decisions file's, plus a rejection for an abstention whose decision line a
        crash lost (line 0: before every real line)."""
        lost = self.abstained_cids() - {c for c, d in last.items() if d.decision in FINAL}
        return {**last, **{c: Decision(c, "rejected", 0) for c in lost}}

    def _state(self) -> tuple[dict[str, Decision], frozenset[str], list[Candidate]]:
        self._reload()
        last = self._decided(read_decisions(self.decisions_file))
        labelled = self.golden_cids()
        return last, labelled, order(self.candidates, last, labelled)

    def counts(self, last: dict[str, Decision] | None = None,
               labelled: frozenset[str] | None = None,
               left: list[Candidate] | None = None) -> dict[str, int]:
        if last is None or labelled is None or left is None:
            last, labelled, left = self._state()
        mine = {c.cid for c in self.candidates}
        done = {cid for cid, d in last.items() if cid in mine and d.decision == "labelled"}
        done |= labelled & mine
        return {
            "golden_items": len(self.golden.entries()),
            "target": self.target,
            "labelled": len(done),
            "rejected": sum(1 for cid, d in last.items()
                            if cid in mine and d.decision == "rejected" and cid not in done),
            "skipped": sum(1 for c in left if c.cid in last),
            "left": len(left),
            "queued": len(self.candidates),
        }

    # ------------------------------------------------------------------ claiming

    def _live(self, cid: str, now: float) -> Claim | None:
        claim = self.claims.get(cid)
        if claim is not None and claim.expires <= now:
            del self.claims[cid]
            return None
        return claim

    def claim(self, tab: str) -> dict[str, Any]:
        """The candidate this tab works on now (the one it holds, else the next free one),
        and the counts. ``candidate`` is None when nothing is left for this tab."""
        tab = _tab(tab)
        with self._lock:
            last, labelled, left = self._state()
            now = self.clock()
            open_cids = {c.cid for c in left}
            for cid in list(self.claims):  # claims on decided candidates are void
                if cid not in open_cids:
                    del self.claims[cid]
            chosen = next((c for c in left if (cl := self._live(c.cid, now)) is not None
                           and cl.tab == tab), None)
            if chosen is None:
                chosen = next((c for c in left if self._live(c.cid, now) is None), None)
            if chosen is not None:
                self.claims[chosen.cid] = Claim(tab, now + CLAIM_TTL_S)
            counts = self.counts(last, labelled, left)
            counts["held_by_other_tabs"] = sum(
                1 for cid, cl in self.claims.items() if cl.tab != tab and cl.expires > now)
        return {"candidate": None if chosen is None else self.view(chosen), "counts": counts}

    def view(self, c: Candidate) -> dict[str, Any]:
        d = c.data

        def located(ref: Any) -> dict[str, Any] | None:
            if not isinstance(ref, dict):
                return None
            doc_id = ref.get("doc_id")
            return {**ref, "path": self.doc_source(doc_id) if isinstance(doc_id, str) else None}

        return {"cid": c.cid, "question": c.question, "line": c.line,
                "source": c.source, "source_ref": c.source_ref,
                "count": d.get("count"), "reason": d.get("reason"),
                "priority": d.get("priority"), "feedback": d.get("feedback"),
                "negative_count": d.get("negative_count"), "trace_id": d.get("trace_id"),
                "variants": [v for v in d.get("variants") or [] if isinstance(v, str)][:10],
                "first_seen": d.get("first_seen"), "last_seen": d.get("last_seen"),
                "retrieved": [x for r in (d.get("retrieved") or [])[:10]
                              if (x := located(r)) is not None],
                "passage": located(d.get("passage"))}

    # ------------------------------------------------------------------ deciding

    @contextmanager
    def _deciding(self, tab: str, cid: str) -> Iterator[Candidate]:
        """Held while a decision is checked and written: this process's tabs, then every
        process on the decisions file. Raises `ClaimConflict` when the candidate is not this
        tab's to decide."""
        candidate = self.by_cid.get(cid) if isinstance(cid, str) else None
        if candidate is None:
            raise SweepError(f"cid {cid!r} is not in the queue {self.path}")
        with self._lock:
            try:
                self._file_lock.acquire()
            except Timeout:
                raise SweepError(f"{self.decisions_file}: another process has been writing it "
                                 f"for {LOCK_TIMEOUT_S} s; nothing was saved, try again"
                                 ) from None
            try:
                last = self._decided(read_decisions(self.decisions_file))
                if cid in self.golden_cids() or (cid in last and last[cid].decision in FINAL):
                    done = "labelled" if cid in self.golden_cids() else last[cid].decision
                    raise ClaimConflict(f"this question was {done} meanwhile (another tab or "
                                        "process); nothing was saved, take the next one")
                claim = self._live(cid, self.clock())
                if claim is not None and claim.tab != tab:
                    raise ClaimConflict("another tab is working on this question; nothing was "
                                        "saved, take the next one")
                yield candidate
                self.claims.pop(cid, None)
            finally:
                self._file_lock.release()

    def _record(self, cid: str, decision: str, qid: str | None, reason: str | None,
                at: str) -> None:
        line = json.dumps({"cid": cid, "decision": decision, "qid": qid, "at": at,
                           "reason": reason}, ensure_ascii=False)
        append_bytes(self.decisions_file, line.encode("utf-8") + b"\n")

    def save(self, tab: str, cid: str, write: Callable[[dict[str, Any]], dict[str, Any]]
             ) -> dict[str, Any]:
        """Label the candidate: ``write`` gets the golden fields the candidate adds (source,
        source_ref, cid), appends the item and returns what the page shows (with its qid);
        then the decision is recorded."""
        tab = _tab(tab)
        with self._deciding(tab, cid) as c:
            fields: dict[str, Any] = {"cid": c.cid}
            if c.source:
                fields["source"] = c.source
            if c.source_ref:
                fields["source_ref"] = c.source_ref
            saved = write(fields)
            self._record(cid, "labelled", saved.get("qid"), None, now_iso())
        saved["queue"] = self.counts()
        return saved

    def release(self, tab: str) -> dict[str, Any]:
        """The tab is closing (or reloading): its claim goes back to the queue at once."""
        tab = _tab(tab)
        with self._lock:
            for cid in [cid for cid, cl in self.claims.items() if cl.tab == tab]:
                del self.claims[cid]
        return {"released": True}

    def skip(self, tab: str, cid: str) -> dict[str, Any]:
        with self._deciding(_tab(tab), cid):
            self._record(cid, "skipped", None, None, now_iso())
        return {"skipped": cid, "counts": self.counts()}

    def reject(self, tab: str, cid: str, why: str, note: str = "") -> dict[str, Any]:
        if not isinstance(why, str) or why not in REJECT_REASONS:
            raise SweepError(f"reason: {why!r} is not one of {', '.join(REJECT_REASONS)}")
        if not isinstance(note, str):
            raise SweepError("note must be a string")
        reason = REJECT_REASONS[why] + (f": {' '.join(note.split())[:MAX_REASON]}"
                                        if note.strip() else "")
        at = now_iso()
        with self._deciding(_tab(tab), cid) as c:
            qid = None
            if why == ABSTAIN:
                qid = f"abstain-{c.cid.removeprefix('c-')}"
                line = json.dumps({"qid": qid, "question": c.question, "source": c.source,
                                   "source_ref": c.source_ref, "cid": c.cid, "at": at},
                                  ensure_ascii=False)
                append_bytes(abstentions_path(self.golden.path), line.encode("utf-8") + b"\n")
            self._record(cid, "rejected", qid, reason, at)
        return {"rejected": cid, "abstention": qid, "counts": self.counts()}


def _tab(tab: Any) -> str:
    if not isinstance(tab, str) or not 8 <= len(tab) <= 64 or not tab.isascii():
        raise SweepError("tab: the page's tab id is missing; reload the page")
    return tab


def api(queue: LabelQueue, action: str, body: Any,
        write: Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]]) -> dict[str, Any]:
    """``POST /api/queue/<action>`` with a JSON object: claim, skip, reject, save. ``write``
    saves the page's payload with the candidate's extra fields (`LabelApp.save_new`)."""
    if not isinstance(body, dict):
        raise SweepError("the request body must be a JSON object")
    tab = body.get("tab")
    if action == "claim":
        return queue.claim(tab)
    if action == "release":
        return queue.release(tab)
    cid = body.get("cid")
    if action == "skip":
        return queue.skip(tab, cid)
    if action == "reject":
        return queue.reject(tab, cid, body.get("why", ABSTAIN), body.get("note") or "")
    if action == "save":
        payload = body.get("item")
        if not isinstance(payload, dict):
            raise SweepError("item: the labelled item is missing")
        return queue.save(tab, cid, lambda extra: write(payload, extra))
    raise SweepError(f"unknown queue action {action!r}")
