// sweep label: the little the page does in the browser. No framework, no build step.
(() => {
  "use strict";
  const state = JSON.parse(document.getElementById("state").textContent);
  const $ = (id) => document.getElementById(id);
  // Set by queue.js (sweep label --queue): it saves a queued candidate and claims the next.
  const hooks = window.sweepLabelHooks || {};

  async function api(method, url, body) {
    // The token proves the request comes from a page this server rendered (see server.py).
    const opts = { method, headers: { "X-Label-Token": state.token } };
    if (body !== undefined) {
      opts.headers["Content-Type"] = "application/json";
      opts.body = JSON.stringify(body);
    }
    const res = await fetch(url, opts);
    const data = await res.json().catch(() => ({ error: res.status + " " + res.statusText }));
    if (!res.ok) throw new Error(data.error || res.statusText);
    return data;
  }

  function setStatus(message, kind) {
    const s = $("status");
    s.textContent = message;
    s.className = kind || "";
  }

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") node.className = v;
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v);
    }
    for (const c of children) node.append(c);
    return node;
  }

  // ------------------------------------------------------------------ the list view
  if (state.mode === "items") {
    for (const b of document.querySelectorAll("button.delete")) {
      b.addEventListener("click", async () => {
        if (!confirm(`Delete ${b.dataset.qid}? The golden file is rewritten without this line.`)) return;
        try {
          await api("POST", `/api/items/${encodeURIComponent(b.dataset.qid)}/delete`,
                    { digest: b.dataset.digest });
          location.reload();
        } catch (err) { setStatus(err.message, "bad"); }
      });
    }
    return;
  }

  // ------------------------------------------------------------------ the labelling page
  let evidence = (state.evidence || []).map((x) => ({ doc_id: x.doc_id, start: x.start, end: x.end }));
  let mentions = (state.answer_must_mention || []).slice();
  let pending = null;
  let timer = null;

  const pathUrl = (source) => "/doc/" + source.split("/").map(encodeURIComponent).join("/");

  // A selection inside one .doc-text box -> document offsets. The box holds the document's
  // text verbatim from offset data-base, so the length of the text before a boundary point
  // is its offset.
  function boxOf(node) {
    const elem = node.nodeType === Node.ELEMENT_NODE ? node : node.parentElement;
    return elem ? elem.closest(".doc-text") : null;
  }
  function selectionSpan() {
    const sel = document.getSelection();
    if (!sel || sel.rangeCount === 0 || sel.isCollapsed) return null;
    const r = sel.getRangeAt(0);
    const box = boxOf(r.startContainer);
    if (!box || box !== boxOf(r.endContainer)) return { invalid: true };
    const upto = (node, offset) => {
      const x = document.createRange();
      x.setStart(box, 0);
      x.setEnd(node, offset);
      return x.toString().length;
    };
    const base = Number(box.dataset.base);
    const start = base + upto(r.startContainer, r.startOffset);
    const end = base + upto(r.endContainer, r.endOffset);
    if (end <= start || !r.toString().trim()) return null;
    return { doc_id: box.dataset.doc, start, end, text: r.toString() };
  }

  document.addEventListener("selectionchange", () => {
    const span = selectionSpan();
    const preview = $("selection-preview");
    if (span && span.invalid) {
      pending = null;
      preview.textContent = "(select within one passage or one document)";
    } else if (span) {
      pending = span;
      const t = span.text.trim();
      preview.textContent = t.length > 220 ? t.slice(0, 220) + "…" : t;
    } else {
      pending = null;
      preview.textContent = "(nothing selected)";
    }
    $("add-evidence").disabled = !pending;
  });

  // Pressing the button must not clear the selection it is about to use.
  $("add-evidence").addEventListener("mousedown", (ev) => ev.preventDefault());
  $("add-evidence").addEventListener("click", () => {
    if (!pending) return;
    evidence.push({ doc_id: pending.doc_id, start: pending.start, end: pending.end });
    pending = null;
    document.getSelection().removeAllRanges();
    $("add-evidence").disabled = true;
    $("selection-preview").textContent = "(nothing selected)";
    refresh(0);
  });

  // Scroll only `box` (scrollIntoView would also scroll the window) so `target` is on top.
  function scrollTo(target, box, margin) {
    if (!box) return;
    box.scrollTop = target ? target.getBoundingClientRect().top - box.getBoundingClientRect().top
      + box.scrollTop - margin : 0;
  }

  async function openDoc(source, hl) {
    try {
      const res = await fetch(pathUrl(source) + "?fragment=1" + (hl ? "&hl=" + hl : ""));
      if (!res.ok) throw new Error(`${res.status} ${res.statusText}`);
      $("doc-view").innerHTML = await res.text();
      scrollTo($("doc-view").querySelector(".hl"), $("doc-view").closest(".col"), 60);
    } catch (err) { setStatus(`cannot open ${source}: ${err.message}`, "bad"); }
  }

  document.addEventListener("click", (ev) => {
    const open = ev.target.closest("a.open");
    if (open && open.dataset.source) {
      ev.preventDefault();
      openDoc(open.dataset.source, open.dataset.hl);
      return;
    }
    const jump = ev.target.closest("a[data-jump]");
    if (jump) {
      ev.preventDefault();
      scrollTo(document.getElementById(jump.dataset.jump), jump.closest(".col"), 8);
    }
  });

  async function search() {
    const q = $("question").value.trim();
    if (!q) return;
    $("bm25-results").innerHTML = $("dense-results").innerHTML = '<p class="muted">searching…</p>';
    // A search still running after a moment may be waiting for the embedding model to load
    // (the first one after start): ask, and say so rather than "searching…" for minutes.
    const slow = setTimeout(async () => {
      try {
        const st = await api("GET", "/api/status");
        if (st.dense !== "loading") return;
        const p = document.createElement("p");
        p.className = "muted";
        p.id = "model-loading";
        p.textContent = `searching… the embedding model ${st.model} is loading (the first ` +
          "search waits for it: a minute or two on a small machine)";
        $("dense-results").replaceChildren(p);
      } catch (err) { /* the search itself reports */ }
    }, 800);
    try {
      const data = await api("GET", "/api/search?q=" + encodeURIComponent(q));
      clearTimeout(slow);
      $("bm25-results").innerHTML = data.bm25;
      $("dense-results").innerHTML = data.dense;
      // Each snippet opens on its passage; the text around it is there to scroll to.
      for (const box of document.querySelectorAll(".snippet")) {
        scrollTo(box.querySelector(".chunk"), box, 18);
      }
    } catch (err) { clearTimeout(slow); setStatus(err.message, "bad"); }
  }
  $("search-form").addEventListener("submit", (ev) => { ev.preventDefault(); search(); });
  $("question").addEventListener("input", () => refresh(500));

  function payload() {
    return { question: $("question").value, evidence, answer_must_mention: mentions,
             notes: $("notes").value, qid: $("qid").value, needs: $("needs").value };
  }

  function refresh(delay) {
    clearTimeout(timer);
    timer = setTimeout(check, delay);
  }

  async function check() {
    try {
      const data = await api("POST", "/api/check", payload());
      evidence = data.evidence.map((x) => ({ doc_id: x.doc_id, start: x.start, end: x.end }));
      renderEvidence(data.evidence);
      renderWarnings(data.warnings);
      renderSuggestions(data.suggestions);
      $("line-preview").textContent = data.line || "(a question and at least one evidence passage are needed)";
    } catch (err) { setStatus(err.message, "bad"); }
  }

  function renderEvidence(items) {
    const list = $("evidence-list");
    list.replaceChildren();
    items.forEach((ev, i) => {
      const where = [ev.path, ev.page, ev.heading_path.join(" › "), ev.chunk_ids.join(" ")].filter(Boolean).join(" · ");
      list.append(el("li", { class: "evidence", "data-doc": ev.doc_id },
        el("b", {}, ev.title), " ", el("span", { class: "where" }, where),
        el("blockquote", {}, ev.quote),
        el("button", { type: "button", class: "show", onclick: () => openDoc(ev.path, `${ev.start}-${ev.end}`) }, "show"),
        " ",
        el("button", { type: "button", class: "remove", onclick: () => { evidence.splice(i, 1); refresh(0); } }, "remove")));
    });
    if (!items.length) list.append(el("li", { class: "muted" }, "none yet"));
    // all or any only means something with several passages
    $("needs-row").hidden = items.length < 2;
  }

  function renderWarnings(warnings) {
    const ul = $("warnings");
    ul.replaceChildren();
    for (const w of warnings) ul.append(el("li", { class: "w-" + w.kind }, w.message));
    if (!warnings.length) ul.append(el("li", { class: "muted" }, "none"));
  }

  function renderMentions() {
    const box = $("mentions");
    box.replaceChildren();
    mentions.forEach((m, i) => box.append(el("span", { class: "chip mention" }, m,
      el("button", { type: "button", title: "remove", onclick: () => { mentions.splice(i, 1); renderMentions(); refresh(0); } }, "×"))));
  }

  function renderSuggestions(suggestions) {
    const box = $("suggestions");
    box.replaceChildren();
    if (!suggestions.length) return;
    box.append(el("span", { class: "muted small" }, "suggested:"));
    for (const s of suggestions) {
      box.append(el("span", { class: "chip suggest", role: "button", tabindex: "0",
        onclick: () => addMention(s) }, "+ " + s));
    }
  }

  function addMention(text) {
    const t = text.trim();
    if (t && !mentions.includes(t)) mentions.push(t);
    renderMentions();
    refresh(0);
  }
  $("add-mention").addEventListener("click", () => { addMention($("mention-input").value); $("mention-input").value = ""; });
  $("mention-input").addEventListener("keydown", (ev) => {
    if (ev.key === "Enter") { ev.preventDefault(); $("add-mention").click(); }
  });
  $("notes").addEventListener("input", () => refresh(500));
  $("needs").addEventListener("change", () => refresh(0));

  $("save").addEventListener("click", async () => {
    const editing = state.mode === "edit";
    const url = editing ? `/api/items/${encodeURIComponent(state.qid)}` : "/api/items";
    const body = editing ? { ...payload(), digest: state.digest } : payload();
    try {
      const r = !editing && hooks.save ? await hooks.save(body, api) : await api("POST", url, body);
      $("line-preview").textContent = r.line;
      const warned = r.warnings.length ? ` ${r.warnings.length} warning(s) kept.` : "";
      const pages = r.pages && r.pages.length ? ` Evidence on ${r.pages.join(", ")}.` : "";
      setStatus(`Saved ${r.qid} to ${r.file} (line ${r.lineno}).${pages}${warned}`, "good");
      if (editing) {
        state.digest = r.digest;
        state.qid = r.qid;
      } else {
        $("question").value = "";
        $("notes").value = "";
        $("needs").value = "";
        $("qid").value = r.next_qid;
        evidence = [];
        mentions = [];
        renderMentions();
        renderEvidence([]);
        renderWarnings([]);
        renderSuggestions([]);
        const nav = $("nav-items");
        const n = Number((nav.textContent.match(/\d+/) || ["0"])[0]) + 1;
        nav.textContent = `Golden set (${n})`;
        if (hooks.saved) hooks.saved(r);
      }
    } catch (err) { setStatus(err.message, "bad"); }
  });

  $("clear").addEventListener("click", () => { location.href = "/"; });

  renderMentions();
  renderEvidence([]);
  if (state.problems && state.problems.length) setStatus(state.problems.join(" · "), "bad");
  if (evidence.length || $("question").value) refresh(0);
  if ($("question").value) search();
})();
