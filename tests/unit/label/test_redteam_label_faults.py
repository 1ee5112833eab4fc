"""Faults of the labelling page (issue 14): two processes writing one golden file, and a
client that stalls in the middle of its request body."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import ROOT
from sweep.label.server import LabelHandler, LabelServer
from sweep.label.store import GoldenFile

# One writer process: appends N new items (qids PREFIX000...), or edits q001 N times, each
# edit re-reading the file for the line's current digest (as a reloaded page would).
WRITER = textwrap.dedent("""
    import sys
    from sweep.label.store import GoldenFile, StaleError
    path, mode, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    gf = GoldenFile(path)
    quote = "You can return most Kestrel Home products within 30 days of delivery"
    def item(qid, question):
        return {"qid": qid, "question": question,
                "evidence": [{"path": "returns/refund-policy.md", "quote": quote}]}
    done = 0
    while done < n:
        if mode == "edit":
            entry = next(e for e in gf.entries() if e.qid == "q001")
            try:
                gf.replace("q001", entry.digest, item("q001", f"edited question number {done}"))
            except StaleError:
                continue  # the other process changed the file between our read and write
        else:
            gf.append(item(f"{mode}{done:03d}", f"appended question number {done}"))
        done += 1
""")


def _item(qid: str) -> str:
    return json.dumps({"qid": qid, "question": "how long can i send it back",
                       "evidence": [{"path": "returns/refund-policy.md",
                                     "quote": "within 30 days of delivery"}]})


def test_two_processes_writing_one_golden_file_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "golden.jsonl"
    path.write_text(_item("q001") + "\n" + _item("q002") + "\n")
    n = 40
    env = {"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"}
    # Two appenders and one editor at once: an edit replaces the whole file, so before the
    # cross-process lock an append landing between its read and its rename was lost.
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), mode, str(n)], env=env,
                              stderr=subprocess.PIPE, text=True)
             for mode in ("a", "b", "edit")]
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    entries = GoldenFile(path).entries()
    qids = [e.qid for e in entries]
    expected = {"q001", "q002", *(f"{p}{i:03d}" for p in "ab" for i in range(n))}
    assert sorted(q for q in qids if q) == sorted(expected)  # every append kept, none twice
    assert len(entries) == len(expected)
    edited = next(e.obj for e in entries if e.qid == "q001")
    assert edited is not None and edited["question"] == f"edited question number {n - 1}"
    # Each writer's own appends stay in the order it made them.
    for prefix in "ab":
        mine = [q for q in qids if q and q.startswith(prefix)]
        assert mine == [f"{prefix}{i:03d}" for i in range(n)]


class _QuickTimeout(LabelHandler):
    timeout = 1  # 30 s in use: a stalled client is given up on quickly here


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabelServer]:
    """The demo corpus and a copy of its golden set behind a server with a 1 s timeout."""
    import shutil

    from helpers import DEMO, label_settings
    from sweep.label.app import build_app

    tmp_path = tmp_path_factory.mktemp("stall")
    shutil.copytree(DEMO / "corpus", tmp_path / "corpus")
    shutil.copy(DEMO / "golden.jsonl", tmp_path / "golden.jsonl")
    shutil.copy(DEMO / "golden.reference.yaml", tmp_path / "golden.reference.yaml")
    app = build_app(label_settings(tmp_path / "corpus", tmp_path / "golden.jsonl"), say=lambda _: None)
    srv = LabelServer(0, app)
    srv.RequestHandlerClass = _QuickTimeout
    srv.start_background()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()


def _post_head(port: int, path: str, token: str) -> str:
    """The headers of a same-origin JSON POST that announces a 400-byte body."""
    return (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Origin: http://127.0.0.1:{port}\r\nX-Label-Token: {token}\r\n"
            "Content-Type: application/json\r\nContent-Length: 400\r\n\r\n")


def _stalled_post(srv: LabelServer, path: str, *, token: str) -> bytes:
    """Headers announcing a 400-byte JSON body, 40 bytes of it, then silence: the answer
    (read until the server closes the connection)."""
    body = json.dumps({"question": "how long is the refund window", "evidence": []})
    head = _post_head(srv.port, path, token)
    with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as s:
        s.sendall(head.encode() + body.encode()[:40])
        # A server that never answered would end this read with the socket's 10 s timeout
        # (an error), so no wall-clock bound is needed.
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
    return answer


@pytest.mark.parametrize("path", ["/api/items", "/api/items/q001", "/api/check"])
@pytest.mark.parametrize("own_token", [True, False])
def test_a_stalled_request_body_gets_408_and_writes_nothing(
        server: LabelServer, capfd: pytest.CaptureFixture[str], path: str, own_token: bool
) -> None:
    golden = Path(server.app.store.path)  # type: ignore[union-attr]
    before = golden.read_bytes()
    token = server.app.token if own_token else "wrong"  # type: ignore[union-attr]
    answer = _stalled_post(server, path, token=token)
    status_line = answer.split(b"\r\n", 1)[0]
    # A write without the page's token is refused before its body matters.
    expected = b" 408 Request Timeout" if own_token else b" 403 Forbidden"
    assert status_line.endswith(expected), answer[:300]
    assert b"golden file" not in answer  # not "could not write the golden file"
    assert golden.read_bytes() == before
    assert "Traceback" not in capfd.readouterr().err
    # The server still answers the next client.
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
        s.sendall(f"GET /favicon.ico HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
                  "Connection: close\r\n\r\n".encode())
        assert s.recv(100).split(b"\r\n", 1)[0].endswith(b" 204 No Content")


def test_a_body_that_ends_early_gets_400_and_writes_nothing(server: LabelServer) -> None:
    golden = Path(server.app.store.path)  # type: ignore[union-attr]
    before = golden.read_bytes()
    head = _post_head(server.port, "/api/items", server.app.token)  # type: ignore[union-attr]
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
        s.sendall(head.encode() + b'{"question": "how long')
        s.shutdown(socket.SHUT_WR)  # the client is done: 22 of the 400 bytes announced
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
    assert answer.split(b"\r\n", 1)[0].endswith(b" 400 Bad Request")
    assert b"ended after 22 of 400 bytes" in answer
    assert golden.read_bytes() == before


def test_a_client_that_resets_mid_body_is_not_an_error(server: LabelServer,
                                                        capfd: pytest.CaptureFixture[str],
                                                        caplog: pytest.LogCaptureFixture) -> None:
    import struct

    golden = Path(server.app.store.path)  # type: ignore[union-attr]
    before = golden.read_bytes()
    head = _post_head(server.port, "/api/items", server.app.token)  # type: ignore[union-attr]
    s = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    s.sendall(head.encode() + b'{"question": "how long')
    time.sleep(0.2)  # the server is now waiting for the rest of the body
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()  # linger 0: a reset, not an orderly close
    time.sleep(1.5)  # past the server's 1 s timeout, so its thread has finished either way
    assert golden.read_bytes() == before
    assert "Traceback" not in capfd.readouterr().err
    assert not [r for r in caplog.records if r.levelname == "ERROR"]
