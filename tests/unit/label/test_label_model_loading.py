"""The label page while the embedding model loads (issue 30): /api/status says "loading"
until the model is in memory, a search waits for it and then answers, and the page's script
asks for the status and says so (rather than "searching…" for two minutes)."""

from __future__ import annotations

import http.client
import json
import shutil
import threading
from pathlib import Path

import numpy as np

from helpers import DEMO, ROOT, label_settings
from sweep.label.app import DenseIndex, build_app
from sweep.label.server import LabelServer


def _get(server: LabelServer, path: str) -> tuple[int, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    conn.request("GET", path, headers={"Host": f"127.0.0.1:{server.port}",
                                       "X-Label-Token": server.app.token})
    res = conn.getresponse()
    body = json.loads(res.read())
    conn.close()
    return res.status, body


def test_status_says_loading_until_the_model_is_in_memory(tmp_path: Path) -> None:
    shutil.copytree(DEMO / "corpus", tmp_path / "corpus")
    shutil.copy(DEMO / "golden.jsonl", tmp_path / "golden.jsonl")
    shutil.copy(DEMO / "golden.reference.yaml", tmp_path / "golden.reference.yaml")
    app = build_app(label_settings(tmp_path / "corpus", tmp_path / "golden.jsonl"), say=lambda _: None)
    loaded = threading.Event()
    vecs = np.eye(len(app.chunks), 8, dtype=np.float32)

    def encode_query(q: str) -> np.ndarray:
        loaded.wait(30)  # a model loading: the first query waits for it
        return np.eye(1, 8, dtype=np.float32)[0]

    app.dense = DenseIndex("slow-model", vecs, encode_query, ready=loaded.is_set)
    server = LabelServer(0, app)
    server.start_background()
    try:
        assert _get(server, "/api/status") == (200, {"dense": "loading", "model": "slow-model"})
        answer: list[tuple[int, dict]] = []
        search = threading.Thread(target=lambda: answer.append(
            _get(server, "/api/search?q=refund")))
        search.start()
        search.join(0.5)
        assert not answer  # waiting for the model...
        assert _get(server, "/api/status")[1]["dense"] == "loading"  # ...and the page can ask
        loaded.set()
        search.join(30)
        status, body = answer[0]
        assert status == 200 and "refund" in body["bm25"].lower()
        assert _get(server, "/api/status") == (200, {"dense": "ready", "model": "slow-model"})
        app.dense = None
        assert _get(server, "/api/status")[1] == {"dense": "off", "model": ""}
    finally:
        server.shutdown()
        server.server_close()


def test_the_page_script_asks_and_says_the_model_is_loading() -> None:
    js = (ROOT / "src" / "sweep" / "label" / "label.js").read_text()
    search = js[js.index("async function search()"):js.index('$("search-form")')]
    assert '"/api/status"' in search and 'st.dense !== "loading"' in search
    assert "is loading" in search and "textContent" in search  # the name is text, not HTML
    assert search.count("clearTimeout(slow)") == 2  # a quick answer or an error: no message
