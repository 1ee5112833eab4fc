"""The queue's part of the labelling page (`sweep label --queue`): a bar above the columns
with the claimed candidate (why it is next, how often it was asked, its variants, what the
assistant retrieved or the passage it was generated from), the counter against the target,
and skip / reject. ``queue.js`` fills it; saving goes through the page's own Save button."""

from __future__ import annotations

from html import escape
from importlib import resources
from typing import TYPE_CHECKING

from sweep.label.queue import ABSTAIN, REJECT_REASONS

if TYPE_CHECKING:
    from sweep.label.app import LabelApp


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def queue_panel(app: LabelApp, nonce: str) -> str:
    queue = app.queue
    assert queue is not None
    options = "".join(f'<option value="{_e(k)}"{" selected" if k == ABSTAIN else ""}>'
                      f"{_e(v)}</option>" for k, v in REJECT_REASONS.items())
    return (
        '<section id="queue-panel" class="queue">'
        f'<div class="q-head"><b>Queue</b> <code>{_e(queue.path)}</code> '
        '<span id="queue-counter" class="muted"></span></div>'
        '<div id="queue-candidate" class="muted">claiming the next question…</div>'
        '<div class="row q-actions">'
        '<button id="queue-skip" type="button" disabled>Skip (back of the queue)</button> '
        '<select id="queue-why">' + options + "</select> "
        '<input id="queue-note" placeholder="note (optional)"> '
        '<button id="queue-reject" type="button" disabled>Reject</button>'
        '<span class="muted small"> · label it: add evidence, then "Save to golden file"'
        "</span></div></section>")


def queue_script(nonce: str) -> str:
    js = resources.files(__package__).joinpath("queue.js").read_text(encoding="utf-8")
    return f'<script nonce="{_e(nonce)}">{js}</script>'
