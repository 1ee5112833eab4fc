"""The label page's frame: its assets, escaping, the JSON a page's script reads, and the shell
every page sits in. Apart from `sweep.label.pages` so that the review page can use them
without importing the pages (which import the app, which imports the review: a circle)."""

from __future__ import annotations

import json
from functools import lru_cache
from html import escape
from importlib import resources
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sweep.label.app import LabelApp


@lru_cache(maxsize=4)
def asset(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def e(value: object) -> str:
    return escape(str(value), quote=True)


def json_script(element_id: str, data: object) -> str:
    """JSON for the page's script, safe inside HTML (no ``</script>`` can close it)."""
    text = json.dumps(data).replace("<", "\\u003c").replace(">", "\\u003e").replace(
        "&", "\\u0026")
    return f'<script type="application/json" id="{e(element_id)}">{text}</script>'


def shell(app: LabelApp, title: str, body: str, nonce: str, *, script: bool = True,
          body_class: str = "") -> str:
    n = len(app.store.entries())
    js = (f'<script nonce="{e(nonce)}">{asset("label.js")}</script>' if script else "")
    return (
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<meta name=\"viewport\" content=\"width=device-width\"><title>{e(title)}</title>"
        f'<style nonce="{e(nonce)}">{asset("label.css")}</style></head>'
        f'<body class="{e(body_class)}">'
        f'<header><b>sweep label</b> <span class="muted">corpus</span> '
        f'<code>{e(app.settings.corpus)}</code> ({len(app.docs)} documents) '
        f'<span class="muted">golden</span> <code>{e(app.store.shown_path)}</code> '
        f'<nav><a href="/" id="nav-new">New question</a> '
        f'<a href="/items" id="nav-items">Golden set ({n})</a></nav></header>'
        f"{body}{js}</body></html>"
    )
