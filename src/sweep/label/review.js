// sweep label --review: accept a proposal or drop an item (re-select is a link to the editor).
(() => {
  "use strict";
  const state = JSON.parse(document.getElementById("state").textContent);
  const status = document.getElementById("status");

  async function decide(button, decision) {
    const qid = button.dataset.qid;
    if (decision === "drop" && !confirm(`Drop ${qid}? It leaves the golden file (its line is kept in the decisions log).`)) return;
    try {
      // The token proves the request comes from a page this server rendered (see server.py).
      const res = await fetch(`/api/review/${encodeURIComponent(qid)}`, {
        method: "POST",
        headers: { "X-Label-Token": state.token, "Content-Type": "application/json" },
        body: JSON.stringify({ digest: button.dataset.digest, decision }),
      });
      const data = await res.json().catch(() => ({ error: res.status + " " + res.statusText }));
      if (!res.ok) throw new Error(data.error || res.statusText);
      location.reload();
    } catch (err) {
      status.textContent = err.message;
      status.className = "bad";
    }
  }

  for (const b of document.querySelectorAll("button.accept")) b.addEventListener("click", () => decide(b, "accept"));
  for (const b of document.querySelectorAll("button.drop")) b.addEventListener("click", () => decide(b, "drop"));
})();
