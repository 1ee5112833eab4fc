"""Server-rendered HTML of the labelling page. Every corpus or golden string is escaped.

A `.doc-text` element holds document text verbatim, starting at offset ``data-base`` of
document ``data-doc``, with no text added between its tags: the page turns a mouse
selection into character offsets by measuring the text before it (see label.js). A PDF's page
markers are therefore empty elements whose label is drawn by CSS (``.pg::before``): they add
no characters to the offsets, and a browser does not copy generated content.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from urllib.parse import quote

from sweep.data.corpus import Document
from sweep.label.app import Hit, ItemRow, LabelApp, SweepRanks, page_label
from sweep.label.queue_page import queue_panel, queue_script
from sweep.label.shell import e, json_script, shell
from sweep.retrieval.bm25 import query_tokens

CONTEXT_CHARS = 240  # document text shown before and after a hit


def doc_url(doc: Document) -> str:
    return "/doc/" + quote(doc.source)


def _highlight_words(text: str, words: Sequence[str]) -> str:
    """``text`` escaped, with the query's words in <b>: the text content is unchanged."""
    if not words:
        return e(text)
    pattern = re.compile(r"\b(" + "|".join(re.escape(w) for w in words) + r")\b",
                         re.IGNORECASE)
    out, last = [], 0
    for m in pattern.finditer(text):
        out.append(e(text[last:m.start()]))
        out.append(f'<b class="qw">{e(m.group(0))}</b>')
        last = m.end()
    out.append(e(text[last:]))
    return "".join(out)


def _context_bounds(doc: Document, start: int, end: int) -> tuple[int, int]:
    """A little text around a chunk, cut at a word boundary."""
    a = max(0, start - CONTEXT_CHARS)
    if a > 0:
        space = doc.text.find(" ", a, start)
        a = space + 1 if space >= 0 else a
    b = min(len(doc.text), end + CONTEXT_CHARS)
    if b < len(doc.text):
        space = doc.text.rfind(" ", end, b)
        b = space if space > end else b
    return a, b


def hits_html(app: LabelApp, hits: Sequence[Hit], query: str, kind: str) -> str:
    if not hits:
        if kind == "dense" and app.dense is None:
            return f'<p class="muted">{e(app.dense_note)}</p>'
        return '<p class="muted">No passage shares a word with the question.</p>' \
            if kind == "bm25" else '<p class="muted">No results.</p>'
    words = query_tokens(query)
    out = []
    for hit in hits:
        c = hit.chunk
        doc = app.by_id[c.doc_id]
        a, b = _context_bounds(doc, c.start, c.end)
        path = " › ".join(c.heading_path) or "(before the first heading)"
        page = page_label(doc, c.start, c.end)
        out.append(
            f'<article class="hit" data-chunk="{e(c.chunk_id)}">'
            f'<div class="hit-head"><span class="rank">{hit.rank}</span> '
            f'<a class="open" href="{e(doc_url(doc))}" data-source="{e(doc.source)}" '
            f'data-hl="{c.start}-{c.end}">{e(doc.title)}</a>'
            f'<span class="score">{hit.score:.3g}</span></div>'
            f'<div class="where"><code>{e(doc.source)}</code>'
            f'{f" · <span class=pgno>{e(page)}</span>" if page else ""} · {e(path)} · '
            f'<code>{e(c.chunk_id)}</code></div>'
            f'<div class="doc-text snippet" data-doc="{e(doc.doc_id)}" data-base="{a}">'
            f'<span class="ctx">{e(doc.text[a:c.start])}</span>'
            f'<span class="chunk">{_highlight_words(c.text, words)}</span>'
            f'<span class="ctx">{e(doc.text[c.end:b])}</span></div></article>')
    return "".join(out)


def _page_marker(n: int) -> str:
    """An empty element where page ``n`` of a PDF starts: CSS draws "page n" (see above)."""
    return f'<span class="pg" id="p-{n}" data-page="{n}"></span>'


def _segments(doc: Document, hl: tuple[int, int] | None) -> str:
    """The document text cut at heading lines, page starts and the highlighted range."""
    page_of = {start: n for n, start in enumerate(doc.pages, start=1)
               if 0 <= start <= len(doc.text)}
    heads: dict[int, tuple[int, int]] = {}  # heading line start -> (end, level)
    for s in doc.sections:
        if s.level > 0:
            nl = doc.text.find("\n", s.start, s.end)
            heads[s.start] = (nl if nl >= 0 else s.end, s.level)
    cuts = {0, len(doc.text)}
    for start, (end, _) in heads.items():
        cuts.update((start, end))
    cuts.update(page_of)
    if hl is not None:
        cuts.update(hl)
    bounds = sorted(c for c in cuts if 0 <= c <= len(doc.text))
    out = []
    for a, b in itertools.pairwise(bounds):
        if a == b:
            continue
        if a in page_of:
            out.append(_page_marker(page_of[a]))
        classes, attrs = [], ""
        for start, (end, level) in heads.items():
            if start <= a and b <= end:
                classes.append(f"h h{min(level, 6)}")
                if a == start:
                    attrs = f' id="h-{start}"'
        if hl is not None and hl[0] <= a and b <= hl[1]:
            classes.append("hl")
        cls = f' class="{" ".join(classes)}"' if classes else ""
        out.append(f"<span{attrs}{cls}>{e(doc.text[a:b])}</span>")
    return "".join(out)


def doc_fragment(doc: Document, hl: tuple[int, int] | None = None) -> str:
    outline = []
    for s in doc.sections:
        if s.level > 0 and s.heading_path:
            page = doc.page_at(s.start)
            outline.append(f'<li class="lvl{min(s.level, 6)}"><a href="#h-{s.start}" '
                           f'data-jump="h-{s.start}">{e(s.heading_path[-1] or "(untitled)")}'
                           "</a>" + (f' <span class="pgno">p. {page}</span>' if page else "")
                           + "</li>")
    pages = "".join(f'<a href="#p-{n}" data-jump="p-{n}">{n}</a> '
                    for n in range(1, len(doc.pages) + 1))
    return (
        f'<div class="doc" data-doc="{e(doc.doc_id)}">'
        f'<div class="doc-head"><h2>{e(doc.title)}</h2>'
        f'<div class="where"><code>{e(doc.source)}</code> · {len(doc.text):,} characters · '
        + (f"{len(doc.pages)} pages ({e(doc.parser)}) · " if doc.pages else "")
        + f'<a href="{e(doc_url(doc))}" target="_blank" rel="noopener">open alone</a></div>'
        + (f'<details class="outline"><summary>Headings ({len(outline)})</summary>'
           f'<ul>{"".join(outline)}</ul></details>' if outline else "")
        + (f'<details class="outline pages"><summary>Pages ({len(doc.pages)})</summary>'
           f"<p>{pages}</p></details>" if doc.pages else "")
        + "</div>"
        f'<div class="doc-text full" data-doc="{e(doc.doc_id)}" data-base="0">'
        f"{_segments(doc, hl)}</div></div>"
    )


def doc_page(app: LabelApp, doc: Document, nonce: str, hl: tuple[int, int] | None) -> str:
    return shell(app, f"{doc.title} · sweep label",
                 f'<main class="alone">{doc_fragment(doc, hl)}</main>', nonce, script=False)


# The choice offered when an item has several evidence passages (golden field `needs`); "all"
# is the default, so it is written as no field.
NEEDS_CHOICES = (("", "all: the answer needs every passage"),
                 ("any", "any: each passage alone answers"))


def needs_options(current: object) -> str:
    """The ``<option>``s of the needs control, ``current`` selected."""
    current = "" if current == "all" else current
    return "".join(f'<option value="{e(v)}"{" selected" if v == current else ""}>{e(text)}'
                   "</option>" for v, text in NEEDS_CHOICES)


def label_page(app: LabelApp, state: dict[str, object], nonce: str) -> str:
    editing = state.get("mode") == "edit"
    queued = app.queue is not None and not editing
    dense_title = f"Dense ({app.dense.name})" if app.dense else "Dense (off)"
    chunk_note = {"sidecar": "chunk ids: reference chunking",
                  "new": "chunk ids: new reference chunking (written on first save)",
                  "": "no reference chunking: chunk ids are not written"}[app.reference_from]
    body = f"""
<form id="search-form" autocomplete="off">
  <input id="question" name="q" placeholder="Type the question as a user would ask it"
    value="{e(state.get('question', ''))}">
  <button id="search" type="submit">Search</button>
  <span id="mode" class="{'editing' if editing else ''}">{
    f"Editing {e(state.get('qid'))} (line {e(state.get('lineno'))})" if editing
    else "New item"}</span>
</form>
{queue_panel(app, nonce) if queued else ""}
<main class="grid">
  <section class="col"><h3>BM25</h3><div id="bm25-results" class="results">
    <p class="muted">Search to see the passages BM25 finds (query words in bold).</p></div></section>
  <section class="col"><h3>{e(dense_title)}</h3><div id="dense-results" class="results">
    <p class="muted">{e(app.dense_note or "Search to see the passages dense search finds.")}</p>
    </div></section>
  <section class="col doc-col"><div id="doc-view"><p class="muted">Open a passage's document
    (its title) to read it in full here. Select the text that answers the question, in a
    passage or a document, then add it as evidence.</p></div></section>
  <aside class="col side">
    <div id="selection-box"><div class="muted">Selection</div>
      <div id="selection-preview" class="muted">(nothing selected)</div>
      <button id="add-evidence" type="button" disabled>Add selection as evidence</button></div>
    <h3>Evidence</h3><ol id="evidence-list"></ol>
    <h3>Answer must mention</h3><div id="mentions" class="chips"></div>
    <div class="row"><input id="mention-input" placeholder="a string any right answer contains">
      <button id="add-mention" type="button">Add</button></div>
    <div id="suggestions" class="chips"></div>
    <h3>Item</h3>
    <div class="row"><label for="qid">qid</label> <input id="qid" value="{e(state.get('qid', ''))}">
    </div>
    <div class="row"><label for="notes">notes</label> <input id="notes"
      value="{e(state.get('notes', ''))}"></div>
    <div class="row" id="needs-row" hidden><label for="needs">needs</label> <select id="needs"
      title="how the evidence passages make the answer">{needs_options(state.get('needs', ''))}
      </select></div>
    <h3>Warnings</h3><ul id="warnings"><li class="muted">none</li></ul>
    <details id="preview-box"><summary>Line to be written</summary><pre id="line-preview">
</pre></details>
    <div class="row"><button id="save" type="button" class="primary">{
      "Save changes" if editing else "Save to golden file"}</button>
      <button id="clear" type="button">Clear</button></div>
    <div id="status" role="status"></div>
    <p class="muted small">{e(chunk_note)} · writes to <code>{e(app.store.shown_path)}</code></p>
  </aside>
</main>
{json_script("state", {**state, "token": app.token, **({"queue": True} if queued else {})})}
{queue_script(nonce) if queued else ""}
"""
    return shell(app, "sweep label", body, nonce, body_class="labelling")


def _rank_class(rank: str) -> str:
    if rank.isdigit():
        return "good" if int(rank) <= 5 else "bad"
    return "bad" if rank == "not found" else "muted"


def items_page(app: LabelApp, rows: Sequence[ItemRow], ranks: SweepRanks, nonce: str) -> str:
    trs = []
    for r in rows:
        obj = r.entry.obj or {}
        evidence = obj.get("evidence") if isinstance(obj.get("evidence"), list) else []
        ev_html = "".join(
            f'<li><code>{e(ev.get("path") or ev.get("doc_id"))}</code> '
            f'{e(str(ev.get("quote") or "")[:140])}</li>'
            for ev in evidence if isinstance(ev, dict)) + "".join(
            f'<li class="pgno">found on {e(p)}</li>' for p in r.pages)
        cids = obj.get("relevant_chunk_ids") if isinstance(obj.get("relevant_chunk_ids"),
                                                           list) else []
        problems = "".join(f'<li class="bad">{e(p)}</li>' for p in r.errors) + "".join(
            f'<li class="warn">{e(p)}</li>' for p in r.warnings)
        question = obj.get("question") if isinstance(obj.get("question"), str) else \
            r.entry.raw.decode("utf-8", "replace")[:200]
        actions = ""
        if r.entry.qid is not None and r.entry.obj is not None:
            actions = (f'<a class="edit" href="/?edit={e(quote(r.entry.qid))}">edit</a> '
                       f'<button type="button" class="delete" data-qid="{e(r.entry.qid)}" '
                       f'data-digest="{e(r.entry.digest)}">delete</button>')
        trs.append(
            f'<tr data-qid="{e(r.entry.qid or "")}"><td class="num">{r.entry.lineno}</td>'
            f"<td><code>{e(r.entry.qid or '?')}</code></td><td>{e(question)}"
            f'{f"<ul class=problems>{problems}</ul>" if problems else ""}</td>'
            f'<td><ul class="ev">{ev_html}</ul></td>'
            f'<td>{" ".join(f"<code>{e(c)}</code>" for c in cids)}</td>'
            f'<td class="res-{r.resolves}">{"✓" if r.resolves == "yes" else "~" if r.resolves == "doc" else "✗"} '
            f"{e(r.resolves_text)}</td>"
            f'<td class="num {_rank_class(r.rank)}" title="{e(r.rank_title)}">{e(r.rank)}</td>'
            f"<td>{actions}</td></tr>")
    note_class = "" if ranks.ok else "muted"
    body = f"""
<main class="alone">
<h2>Golden set <code>{e(app.store.shown_path)}</code>: {len(rows)} items</h2>
<p class="{note_class}" id="ranks-note">Last sweep rank: {e(ranks.note)}
  <a href="/items?refresh=1">refresh</a></p>
<table id="items"><thead><tr><th>line</th><th>qid</th><th>question</th><th>evidence</th>
<th>chunk ids</th><th>resolves under the reference chunking</th><th>last sweep rank</th><th></th>
</tr></thead><tbody>{"".join(trs) or '<tr><td colspan="8" class="muted">No items yet.</td></tr>'}
</tbody></table>
<div id="status" role="status"></div>
</main>
{json_script("state", {"mode": "items", "token": app.token})}
"""
    return shell(app, "golden set · sweep label", body, nonce)


def error_page(app: LabelApp | None, message: str, nonce: str) -> str:
    body = f'<main class="alone"><h2>Error</h2><p>{e(message)}</p><p><a href="/">back</a></p></main>'
    if app is None:
        return f"<!doctype html><title>error</title>{body}"
    return shell(app, "error · sweep label", body, nonce, script=False)
