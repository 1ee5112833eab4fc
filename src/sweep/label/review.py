"""`sweep label --review FILE`: the review queue `sweep golden rebase` wrote, worked on the page.

The queue (``<out stem>.review.jsonl``) lists the items a rebase could not carry on its own,
one a line: ``{"qid", "question", "status", "reason", "golden", "corpus", "mentions_missing",
"passages": [{"status", "reason", "old": {path, start, end, text}, "new": {...} | null}],
"candidates": [{path, start, end, text, word_overlap, holds_mentions}]}``. The page
(``/review``) shows each item's old passage and the proposed new one side by side, and the
nearest candidates of the new version where no proposal can be trusted, with three decisions:

- **accept**: the proposal becomes the evidence (the golden line already holds it as its
  evidence; accepting marks it reviewed, so a sweep scores it); not offered when a passage has
  no proposal or an ``answer_must_mention`` string is missing from the proposal (the answer
  changed: re-select and edit the mentions);
- **re-select**: the labelling page opens the item (``/?edit=QID``) on the new corpus; saving
  there writes the new selection and marks it reviewed (`reviewed_record`);
- **drop**: the item leaves the golden file; its whole line is kept in the decisions log.

Every decision rewrites the item's ``rebase`` record with ``review: {decision, at}`` (the note
of the review), and is appended to ``<queue stem>.decisions.jsonl``:
``{"qid", "decision": "accepted" | "reselected" | "dropped", "at", "item": {...}}``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sweep.common.errors import SweepError
from sweep.common.files import read_text_regular
from sweep.data.drift import now_iso
from sweep.data.golden import PENDING_STATUSES
from sweep.label.shell import asset, json_script, shell
from sweep.label.store import append_bytes

if TYPE_CHECKING:
    from sweep.label.app import LabelApp


def e(value: object) -> str:
    return escape(str(value), quote=True)


def decisions_path(queue: Path) -> Path:
    """``out.review.jsonl`` -> ``out.review.decisions.jsonl``."""
    return queue.with_name(queue.stem + ".decisions.jsonl")


def load_queue(path: str | Path) -> list[dict[str, Any]]:
    """The queue's lines; a malformed one is a one-line `SweepError` naming file and line."""
    path = Path(path)
    try:
        text = read_text_regular(path)
    except FileNotFoundError:
        raise SweepError(f"review queue not found: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SweepError(f"{path}: cannot read ({exc})") from None
    out = []
    for lineno, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SweepError(f"{path}:{lineno}: not valid JSON ({exc.msg})") from None
        if not isinstance(obj, dict) or not isinstance(obj.get("qid"), str):
            raise SweepError(f"{path}:{lineno}: qid: each line must be an object with a qid")
        if not isinstance(obj.get("passages"), list):
            raise SweepError(f"{path}:{lineno}: passages: must be a list")
        out.append(obj)
    return out


def queue_paths(queue: list[dict[str, Any]], path: Path) -> tuple[str | None, str | None]:
    """The golden file and corpus the queue was written for (None when it does not say)."""
    goldens = {q.get("golden") for q in queue} - {None}
    corpora = {q.get("corpus") for q in queue} - {None}
    if len(goldens) > 1 or len(corpora) > 1:
        raise SweepError(f"{path}: names several golden files or corpora; pass --golden and "
                         "--corpus")
    return (next(iter(goldens), None), next(iter(corpora), None))


def reviewed_record(record: Mapping[str, Any], decision: str) -> dict[str, Any]:
    """An item's ``rebase`` record once a human decided: scored from now on."""
    status = {"accepted": "accepted", "reselected": "reselected"}[decision]
    return {**record, "status": status, "pending_was": record.get("status"),
            "review": {"decision": decision, "at": now_iso()}}


def is_pending(obj: Mapping[str, Any] | None) -> bool:
    rebase = (obj or {}).get("rebase")
    return isinstance(rebase, dict) and rebase.get("status") in PENDING_STATUSES


def log_decision(queue: Path, qid: str, decision: str, item: Mapping[str, Any]) -> None:
    line = json.dumps({"qid": qid, "decision": decision, "at": now_iso(), "item": item},
                      ensure_ascii=False)
    append_bytes(decisions_path(queue), line.encode("utf-8") + b"\n")


def decide(app: LabelApp, queue: Path, qid: str, body: Any) -> dict[str, Any]:
    """Apply ``accept`` or ``drop`` to item ``qid`` (as the page saw it: ``digest``)."""
    if not isinstance(body, dict) or not isinstance(body.get("digest"), str):
        raise SweepError("digest: which version of the item is being changed")
    decision = body.get("decision")
    entry = next((x for x in app.store.entries() if x.qid == qid), None)
    if entry is None or entry.obj is None:
        raise SweepError(f"no item {qid!r} in {app.store.shown_path}")
    if not is_pending(entry.obj):
        raise SweepError(f"item {qid!r} is not waiting for review (already decided?)")
    if decision == "accept":
        passages = entry.obj["rebase"].get("passages") or []
        if not passages or any(not isinstance(p, dict) or not p.get("new") for p in passages):
            raise SweepError(f"item {qid!r} has a passage with no proposal: re-select its "
                             "evidence or drop it")
        missing = entry.obj["rebase"].get("mentions_missing") or []
        if missing:
            # The expected answer is not in the proposal: the fact changed, and the mentions
            # with it; accepting would keep a mention no passage holds.
            raise SweepError(f"item {qid!r}: answer_must_mention {missing[0]!r} is not in the "
                             "proposed text: re-select (and edit the mentions) or drop it")
        obj = {**entry.obj, "rebase": reviewed_record(entry.obj["rebase"], "accepted")}
        new = app.store.replace(qid, body["digest"], obj)
        log_decision(queue, qid, "accepted", obj)
        return {"qid": qid, "decision": "accepted", "line": new.raw.decode("utf-8")}
    if decision == "drop":
        app.store.delete(qid, body["digest"])
        log_decision(queue, qid, "dropped", entry.obj)
        return {"qid": qid, "decision": "dropped"}
    raise SweepError(f"decision: must be accept or drop, got {decision!r}")


def _passage(p: Mapping[str, Any] | None, empty: str) -> str:
    if not p:
        return f'<td class="muted">{e(empty)}</td>'
    return (f'<td><div class="where"><code>{e(p.get("path"))}</code> '
            f'{e(p.get("start"))}–{e(p.get("end"))}</div>'
            f'<blockquote class="passage">{e(p.get("text"))}</blockquote></td>')


def _candidates(found: Any) -> str:
    """The passages of the new version nearest the old one, for an item no proposal of which
    can be trusted (its answer_must_mention is missing, or the diff could not place it)."""
    if not isinstance(found, list) or not found:
        return ""
    items = "".join(
        f'<li><code>{e(c.get("path"))}</code> {e(c.get("start"))}–{e(c.get("end"))} '
        f'(word overlap {e(c.get("word_overlap"))}'
        + ("; holds the mention" if c.get("holds_mentions") else "")
        + f')<blockquote class="passage">{e(c.get("text"))}</blockquote></li>'
        for c in found if isinstance(c, dict))
    return f'<div class="candidates small"><b>nearest candidates</b><ol>{items}</ol></div>'


def review_page(app: LabelApp, queue_path: Path, nonce: str) -> str:

    queue = load_queue(queue_path)
    entries = {x.qid: x for x in app.store.entries() if x.qid is not None}
    blocks = []
    open_items = 0
    for q in queue:
        entry = entries.get(q["qid"])
        rebase = (entry.obj or {}).get("rebase") if entry is not None else None
        if entry is None:
            state = "dropped (no longer in the golden file)"
        elif is_pending(entry.obj):
            state = ""
            open_items += 1
        else:
            review = rebase.get("review", {}) if isinstance(rebase, dict) else {}
            state = f"done: {review.get('decision') or (rebase or {}).get('status') or 'edited'}"
        rows = "".join(
            f'<tr class="p-{e(p.get("status"))}"><td><b>{e(p.get("status"))}</b>'
            f'<div class="small muted">{e(p.get("reason") or "")}</div></td>'
            f'{_passage(p.get("old"), "")}{_passage(p.get("new"), "no counterpart found")}</tr>'
            for p in q["passages"] if isinstance(p, dict))
        # The line on disk wins over the queue: the reviewer may have fixed it since.
        missing = (rebase if isinstance(rebase, dict) else q).get("mentions_missing") or []
        can_accept = not missing and bool(q["passages"]) and all(
            isinstance(p, dict) and p.get("new") for p in q["passages"])
        actions = ""
        if entry is not None and not state:
            actions = (
                (f'<button type="button" class="accept primary" data-qid="{e(q["qid"])}" '
                 f'data-digest="{e(entry.digest)}">Accept the proposal</button> '
                 if can_accept else "")
                + f'<a class="reselect" href="/?edit={e(q["qid"])}">Re-select the evidence</a> '
                f'<button type="button" class="drop" data-qid="{e(q["qid"])}" '
                f'data-digest="{e(entry.digest)}">Drop the item</button>')
        blocks.append(
            f'<section class="review-item" data-qid="{e(q["qid"])}">'
            f'<h3><code>{e(q["qid"])}</code> {e(q.get("question") or "")} '
            f'<span class="status-{e(q.get("status"))}">{e(q.get("status"))}</span> '
            f'<span class="done">{e(state)}</span></h3>'
            f'<p class="small muted">{e(q.get("reason") or "")}'
            + (f' · answer_must_mention not in the new text: '
               f'{", ".join(e(m) for m in missing)}' if missing else "")
            + '</p><table class="side-by-side"><thead><tr><th></th><th>old passage</th>'
            f'<th>proposed new passage</th></tr></thead><tbody>{rows}</tbody></table>'
            + _candidates(q.get("candidates"))
            + f'<p class="actions">{actions}</p></section>')
    body = (f'<main class="alone"><h2>Review after <code>sweep golden rebase</code>: '
            f'<span id="open-count">{open_items}</span> of {len(queue)} items to decide</h2>'
            f'<p class="muted small">queue <code>{e(queue_path)}</code>; decisions are logged '
            f'in <code>{e(decisions_path(queue_path))}</code></p>'
            f'{"".join(blocks) or "<p class=muted>The queue is empty.</p>"}'
            '<div id="status" role="status"></div></main>'
            + json_script("state", {"mode": "review", "token": app.token}))
    style = (f'<style nonce="{e(nonce)}">.side-by-side {{ width: 100%; table-layout: fixed; '
             "border-collapse: collapse; background: #fff; } .side-by-side td { vertical-align: "
             "top; border-top: 1px solid #e6e9ee; padding: .4em; } .side-by-side th:first-child "
             "{ width: 14em; } blockquote.passage { margin: 0; white-space: pre-wrap; } "
             ".review-item { margin: 1em 0 2em; } .done { color: #1b7a35; font-size: 13px; }"
             "</style>")
    script = f'<script nonce="{e(nonce)}">{_asset("review.js")}</script>'
    return shell(app, "review · sweep label", style + body + script, nonce, script=False)


def _asset(name: str) -> str:

    return asset(name)
