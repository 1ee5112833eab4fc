// sweep label --queue: claim the next candidate, show why it is next, skip or reject it.
// Runs before label.js, which calls window.sweepLabelHooks to save a claimed candidate.
(() => {
  "use strict";
  const state = JSON.parse(document.getElementById("state").textContent);
  if (!state.queue) return;
  const $ = (id) => document.getElementById(id);
  // One id per page load: two tabs (even a duplicated one) never share a claim.
  const bytes = new Uint8Array(12);
  crypto.getRandomValues(bytes);
  const tab = "tab-" + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  let current = null;
  // The qid the page pre-filled when this candidate was claimed. Another tab may have saved
  // an item under that very qid since; unless the labeller typed their own, the server picks
  // the next free one at save time.
  let autoQid = null;

  async function post(action, body) {
    const res = await fetch("/api/queue/" + action, {
      method: "POST", headers: { "X-Label-Token": state.token, "Content-Type": "application/json" },
      body: JSON.stringify({ tab, ...body }) });
    const data = await res.json().catch(() => ({ error: res.status + " " + res.statusText }));
    if (!res.ok) throw new Error(data.error || res.statusText);
    return data;
  }

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") node.className = v; else node.setAttribute(k, v);
    }
    for (const c of children) if (c !== null && c !== undefined) node.append(c);
    return node;
  }

  function status(message, kind) {
    const s = $("status");
    if (s) { s.textContent = message; s.className = kind || ""; }
  }

  function counter(c) {
    $("queue-counter").textContent = `golden set ${c.golden_items} / ${c.target} · from this queue: ` +
      `${c.labelled} labelled, ${c.rejected} rejected, ${c.left} left` +
      (c.skipped ? ` (${c.skipped} skipped)` : "") +
      (c.held_by_other_tabs ? ` · ${c.held_by_other_tabs} held by other tabs` : "");
  }

  // A passage or a retrieved document, opened in the document column by label.js.
  function passageLink(p, label) {
    if (p.path) {
      const hl = Number.isInteger(p.start) && Number.isInteger(p.end) ? { "data-hl": `${p.start}-${p.end}` } : {};
      return el("a", { class: "open", href: "#", "data-source": p.path, ...hl }, label || p.path);
    }
    return el("code", {}, p.doc_id || "(unknown document)");
  }

  function render(c) {
    const box = $("queue-candidate");
    box.replaceChildren();
    box.className = "";
    const facts = [(c.source || "source not given") + (c.source_ref ? ` (${c.source_ref})` : ""),
      c.count ? `asked ${c.count}×` : null,
      c.feedback ? `feedback: ${c.feedback}` + (c.negative_count ? ` (${c.negative_count} negative)` : "") : null,
      c.priority ? `priority ${c.priority}` : null,
      c.last_seen ? `last seen ${c.last_seen}` : null].filter(Boolean).join(" · ");
    box.append(el("div", { class: "q-question" }, el("b", {}, c.question)),
      el("div", { class: "q-reason" }, c.reason || ""), el("div", { class: "muted small" }, facts));
    if (c.variants.length) {
      box.append(el("div", { class: "small" }, "also asked as: ",
        ...c.variants.map((v) => el("span", { class: "chip variant" }, v))));
    }
    if (c.retrieved.length) {
      const ul = el("ul", { class: "q-retrieved small" });
      for (const r of c.retrieved) {
        ul.append(el("li", {}, passageLink(r), r.text ? " " + r.text.slice(0, 160) : ""));
      }
      box.append(el("div", { class: "small muted" }, "the assistant retrieved:"), ul);
    }
    if (c.passage) {
      box.append(el("div", { class: "small q-passage" }, "generated from ", passageLink(c.passage),
        c.passage.text ? el("blockquote", {}, c.passage.text.slice(0, 400)) : null));
    }
  }

  async function next() {
    current = null;
    $("queue-skip").disabled = $("queue-reject").disabled = true;
    try {
      const data = await post("claim", {});
      counter(data.counts);
      if (!data.candidate) {
        $("queue-candidate").textContent = "The queue is done: nothing left to label in it.";
        $("queue-candidate").className = "good";
        return;
      }
      current = data.candidate;
      autoQid = $("qid").value;
      render(current);
      $("queue-skip").disabled = $("queue-reject").disabled = false;
      $("question").value = current.question;
      $("search-form").requestSubmit();
    } catch (err) { status(err.message, "bad"); }
  }

  window.sweepLabelHooks = {
    // Saving a new item while a candidate is claimed saves it as that candidate.
    save: async (item, api) => current
      ? api("POST", "/api/queue/save", { tab, cid: current.cid,
                                         item: item.qid === autoQid ? { ...item, qid: "" } : item })
      : api("POST", "/api/items", item),
    saved: () => { next(); },
  };

  function cleared() {
    for (const id of ["queue-note"]) $(id).value = "";
  }

  $("queue-skip").addEventListener("click", async () => {
    if (!current) return;
    try {
      await post("skip", { cid: current.cid });
      status(`Skipped: it goes to the back of the queue.`, "");
      cleared();
      location.href = "/";
    } catch (err) { status(err.message, "bad"); next(); }
  });

  $("queue-reject").addEventListener("click", async () => {
    if (!current) return;
    try {
      const r = await post("reject", { cid: current.cid, why: $("queue-why").value,
                                       note: $("queue-note").value });
      status(r.abstention ? `Rejected as not answerable: ${r.abstention} added to abstentions.jsonl.`
        : "Rejected.", "good");
      cleared();
      location.href = "/";
    } catch (err) { status(err.message, "bad"); next(); }
  });

  window.addEventListener("pagehide", () => {
    // The claim goes back at once (a reload claims again); keepalive outlives the page.
    fetch("/api/queue/release", { method: "POST", keepalive: true,
      headers: { "X-Label-Token": state.token, "Content-Type": "application/json" },
      body: JSON.stringify({ tab }) });
  });

  next();
})();
