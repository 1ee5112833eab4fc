"""`sweep label`: the HTTP side of the labelling page (standard library only).

Security model: the server writes to a file on your disk, so it must only obey pages it
served itself.

* It binds 127.0.0.1 only: nothing on the network can reach it.
* Every request must carry ``Host: 127.0.0.1:PORT`` or ``localhost:PORT``: a DNS-rebinding
  page (evil.example resolving to 127.0.0.1) sends its own host name and is refused.
* A request with an ``Origin`` other than this server's is refused; a request that changes
  the golden file (POST) must carry this server's ``Origin``, a JSON body, and the random
  token embedded in the page (which another origin cannot read).
* Documents are served by looking their corpus-relative path up among the loaded documents,
  never by opening a path taken from the URL, and only when the real file is inside the
  corpus folder; ``../``, ``%2e%2e%2f``, absolute paths and outward symlinks get 404.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import secrets
import sys
import threading
from collections.abc import Sequence
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from sweep.common.errors import SweepError
from sweep.label import pages, review
from sweep.label.app import LabelApp, LabelSettings, build_app
from sweep.label.queue import LabelQueue, check_queue
from sweep.label.queue import api as queue_api
from sweep.label.store import StaleError
from sweep.outputs.misses_html import load_views, render_page

log = logging.getLogger(__name__)
_RUN_ID = re.compile(r"[0-9a-f]{32}")  # an MLflow run id

HOST = "127.0.0.1"
DEFAULT_PORT = 8765
MAX_BODY = 1_000_000


class BodyTimeout(Exception):
    """The client announced a body and stopped sending it: answered 408, nothing written."""


class ClientGone(Exception):
    """The client reset the connection while sending its body: nothing written or answered."""


class LabelServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port: int, app: LabelApp | None = None, *, quiet: bool = True) -> None:
        self.app = app
        self.quiet = quiet
        self.review: Path | None = None  # the queue of `sweep label --review FILE`
        super().__init__((HOST, port), LabelHandler)
        self.port = int(self.server_address[1])
        self.hosts = {f"127.0.0.1:{self.port}", f"localhost:{self.port}"}
        self.origins = {f"http://{h}" for h in self.hosts}

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/"

    def start_background(self) -> threading.Thread:
        """Serve from a daemon thread (tests); `shutdown()` stops it."""
        thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05},
                                  name="sweep-label", daemon=True)
        thread.start()
        return thread


def bind(port: int, app: LabelApp | None = None) -> LabelServer:
    try:
        return LabelServer(port, app)
    except OSError as exc:
        raise SweepError(f"cannot listen on {HOST}:{port} ({exc.strerror or exc})",
                         hint="pass --port N for another port") from None


class LabelHandler(BaseHTTPRequestHandler):
    server: LabelServer
    server_version = "sweep-label"
    sys_version = ""
    timeout = 30  # a client that announces a body and never sends it does not hold a thread

    def log_message(self, format: str, *args: Any) -> None:
        if not self.server.quiet:
            super().log_message(format, *args)

    # ------------------------------------------------------------------ responses

    def _send(self, status: int, body: bytes, content_type: str, nonce: str = "") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("X-Frame-Options", "DENY")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Cross-Origin-Resource-Policy", "same-origin")
        # Only the page's own inline script and style run; nothing is fetched from elsewhere.
        src = f"'nonce-{nonce}'" if nonce else "'none'"
        self.send_header("Content-Security-Policy",
                         f"default-src 'none'; script-src {src}; style-src {src}; "
                         "img-src 'self' data:; connect-src 'self'; base-uri 'none'; "
                         "form-action 'self'; frame-ancestors 'none'")
        try:
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client left before its answer: not our error

    def _json(self, status: int, data: Any) -> None:
        self._send(status, json.dumps(data).encode("utf-8"), "application/json; charset=utf-8")

    def _html(self, status: int, text: str, nonce: str) -> None:
        self._send(status, text.encode("utf-8"), "text/html; charset=utf-8", nonce)

    def _error(self, status: int, message: str, *, html: bool = False) -> None:
        if html:
            nonce = secrets.token_urlsafe(12)
            self._html(status, pages.error_page(self.server.app, message, nonce), nonce)
        else:
            self._json(status, {"error": message})

    # ------------------------------------------------------------------ the gate

    def _allowed(self, writing: bool) -> str | None:
        """Why the request is refused, or None."""
        host = self.headers.get("Host", "")
        if host not in self.server.hosts:
            return f"Host {host!r} is not this server"
        origin = self.headers.get("Origin")
        if origin is not None and origin not in self.server.origins:
            return f"Origin {origin!r} is not this server"
        site = self.headers.get("Sec-Fetch-Site")
        if site == "cross-site" and (writing or self.headers.get("Sec-Fetch-Mode") != "navigate"):
            return "cross-site request"
        if writing:
            if origin is None:
                return "a request that writes must carry this server's Origin"
            if self.headers.get("X-Label-Token") != self.server.app.token:  # type: ignore[union-attr]
                return "missing or wrong page token: reload the page"
            if (self.headers.get("Content-Type") or "").split(";")[0].strip() != \
                    "application/json":
                return "the body must be application/json"
        return None

    def _read(self, length: int) -> bytes:
        """``length`` bytes of the body (fewer if the client closed); `BodyTimeout` when the
        client stops sending for `timeout` seconds."""
        try:
            return self.rfile.read(length) if length > 0 else b""
        except TimeoutError:
            raise BodyTimeout from None
        except ConnectionError:  # the client reset the connection: no one to answer
            raise ClientGone from None

    def _body(self) -> Any:
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            raise SweepError("bad Content-Length") from None
        if length > MAX_BODY:
            raise SweepError(f"request body larger than {MAX_BODY} bytes")
        raw = self._read(length)
        if len(raw) < length:
            raise SweepError(f"the request body ended after {len(raw)} of {length} bytes; "
                             "nothing was saved")
        try:
            return json.loads(raw.decode("utf-8") or "null")
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise SweepError("the request body is not JSON") from None

    def _guarded(self, writing: bool) -> bool:
        if self.server.app is None:
            self._error(HTTPStatus.SERVICE_UNAVAILABLE, "still indexing, try again in a moment")
            return False
        reason = self._allowed(writing)
        if reason is not None:
            if writing:
                # Drain what was sent, so the client reads our answer instead of a reset.
                try:
                    self._read(min(int(self.headers.get("Content-Length") or 0), MAX_BODY))
                except (ValueError, BodyTimeout, ClientGone):
                    self.close_connection = True  # the rest of the body is never read
            self._error(HTTPStatus.FORBIDDEN, f"forbidden: {reason}")
            return False
        return True

    # ------------------------------------------------------------------ routes

    def do_HEAD(self) -> None:
        self.do_GET()

    def do_GET(self) -> None:
        if not self._guarded(writing=False):
            return
        app = self.server.app
        assert app is not None
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        path = url.path
        try:
            if path == "/":
                nonce = secrets.token_urlsafe(12)
                edit = (query.get("edit") or [""])[0]
                state: dict[str, Any] = app.edit_state(edit) if edit else {
                    "mode": "new", "qid": app.store.next_qid(), "evidence": [],
                    "answer_must_mention": [], "question": (query.get("q") or [""])[0]}
                self._html(HTTPStatus.OK, pages.label_page(app, state, nonce), nonce)
            elif path == "/review" and self.server.review is not None:
                nonce = secrets.token_urlsafe(12)
                self._html(HTTPStatus.OK, review.review_page(app, self.server.review, nonce),
                           nonce)
            elif path == "/items":
                nonce = secrets.token_urlsafe(12)
                ranks = app.sweep_ranks(refresh=bool(query.get("refresh")))
                rows, _ = app.rows(ranks)
                self._html(HTTPStatus.OK, pages.items_page(app, rows, ranks, nonce), nonce)
            elif path.startswith("/doc/"):
                self._doc(app, path[len("/doc/"):], query)
            elif path == "/api/status":
                dense = app.dense
                self._json(HTTPStatus.OK, {
                    "dense": "off" if dense is None else "ready" if dense.ready() else "loading",
                    "model": dense.name if dense is not None else ""})
            elif path == "/api/search":
                q = (query.get("q") or [""])[0]
                hits = app.search(q)
                self._json(HTTPStatus.OK, {k: pages.hits_html(app, v, q, k)
                                           for k, v in hits.items()})
            elif path.startswith("/run/"):
                self._run(app, path[len("/run/"):])
            elif path == "/favicon.ico":
                self._send(HTTPStatus.NO_CONTENT, b"", "image/x-icon")
            else:
                self._error(HTTPStatus.NOT_FOUND, "not found", html=True)
        except SweepError as exc:
            self._error(HTTPStatus.BAD_REQUEST, str(exc), html=not path.startswith("/api/"))

    def _run(self, app: LabelApp, run_id: str) -> None:
        """The misses of one run of the sweep store, each question linked to its labelling
        view. Only an MLflow run id is accepted: never a path on this machine."""
        if not _RUN_ID.fullmatch(run_id):
            self._error(HTTPStatus.NOT_FOUND, "not a run id", html=True)
            return
        if not app.settings.tracking_enabled:
            self._error(HTTPStatus.NOT_FOUND, "tracking is off, so there are no runs to show",
                        html=True)
            return
        data = load_views(run_id, app.settings.tracking_uri)
        nonce = secrets.token_urlsafe(12)
        self._html(HTTPStatus.OK, render_page(data["questions"], str(data.get("title", run_id)),
                                              data.get("counts", {}), nonce=nonce,
                                              edit_links=True), nonce)

    def _doc(self, app: LabelApp, raw: str, query: dict[str, list[str]]) -> None:
        # One decode only: "%252e" stays "%2e", which names no document.
        source = unquote(raw, errors="replace") if "\x00" not in raw else ""
        doc = app.doc_by_source(source)
        if doc is None:
            self._error(HTTPStatus.NOT_FOUND, "no such document in the corpus", html=True)
            return
        hl = None
        spec = (query.get("hl") or [""])[0]
        if spec:
            try:
                a, b = (int(x) for x in spec.split("-", 1))
                hl = (max(0, min(a, b)), min(len(doc.text), max(a, b)))
            except ValueError:
                hl = None
        nonce = secrets.token_urlsafe(12)
        if query.get("fragment"):
            self._html(HTTPStatus.OK, pages.doc_fragment(doc, hl), nonce)
        else:
            self._html(HTTPStatus.OK, pages.doc_page(app, doc, nonce, hl), nonce)

    def do_POST(self) -> None:
        if not self._guarded(writing=True):
            return
        app = self.server.app
        assert app is not None
        path = urlsplit(self.path).path
        try:
            body = self._body()
            parts = [unquote(p) for p in path.strip("/").split("/")]
            if path == "/api/check":
                self._json(HTTPStatus.OK, app.check(body))
            elif path == "/api/items":
                self._json(HTTPStatus.CREATED, app.save_new(body))
            elif len(parts) == 3 and parts[:2] == ["api", "review"] and self.server.review:
                self._json(HTTPStatus.OK, review.decide(app, self.server.review, parts[2], body))
            elif len(parts) == 3 and parts[:2] == ["api", "queue"] and app.queue is not None:
                self._json(HTTPStatus.OK, queue_api(app.queue, parts[2], body, app.save_new))
            elif len(parts) in (3, 4) and parts[:2] == ["api", "items"]:
                digest = body.get("digest") if isinstance(body, dict) else None
                if not isinstance(digest, str):
                    raise SweepError("digest: which version of the item is being changed")
                if len(parts) == 4 and parts[3] == "delete":
                    self._json(HTTPStatus.OK, app.delete(parts[2], digest))
                elif len(parts) == 3:
                    self._json(HTTPStatus.OK, app.save_edit(parts[2], digest, body))
                else:
                    self._error(HTTPStatus.NOT_FOUND, "not found")
            else:
                self._error(HTTPStatus.NOT_FOUND, "not found")
        except ClientGone:
            self.close_connection = True
        except BodyTimeout:
            # Nothing was parsed, so nothing was written; the connection cannot be reused
            # (the rest of the body may still arrive), so it is closed after the answer.
            self.close_connection = True
            self._error(HTTPStatus.REQUEST_TIMEOUT,
                        f"the request body did not arrive within {self.timeout} s; "
                        "nothing was saved")
        except StaleError as exc:
            self._error(HTTPStatus.CONFLICT, str(exc))
        except SweepError as exc:
            self._error(HTTPStatus.BAD_REQUEST, str(exc))
        except OSError as exc:
            log.error("writing the golden file failed: %s", exc)
            self._error(HTTPStatus.INTERNAL_SERVER_ERROR,
                        f"could not write the golden file ({exc.strerror or exc}); "
                        "the file on disk is unchanged")

    def do_PUT(self) -> None:
        self._error(HTTPStatus.METHOD_NOT_ALLOWED, "method not allowed")

    do_DELETE = do_PATCH = do_PUT


# --------------------------------------------------------------------------- the command


def open_queue(app: LabelApp, path: str, target: int = 50) -> LabelQueue:
    """The queue worked from this page; its passages and retrieved documents are opened by
    their corpus path, only when the page may show them."""
    def source(doc_id: str) -> str | None:
        doc = app.by_id.get(doc_id)
        return doc.source if doc is not None and doc_id not in app.hidden else None

    return LabelQueue(Path(path), app.store, target, doc_source=source)


def cmd_label(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="sweep label",
        description="A local page to label golden questions: search, select evidence, save.")
    parser.add_argument("--corpus", metavar="DIR", help="corpus folder (= corpus.path=DIR)")
    parser.add_argument("--golden", metavar="FILE",
                        help="golden JSONL file, created if missing (= golden.path=FILE)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT,
                        help=f"port on 127.0.0.1 (default {DEFAULT_PORT}; 0 = any free port)")
    parser.add_argument("--top", type=int, default=8, help="passages shown per retriever")
    parser.add_argument("--no-dense", action="store_true",
                        help="BM25 only: do not load the embedding model")
    parser.add_argument("--queue", metavar="QUEUE.jsonl",
                        help="work through a candidate queue (sweep questions import): the "
                             "next question pre-filled; label, skip or reject")
    parser.add_argument("--target", type=int, default=50,
                        help="golden items to reach, shown as a counter with --queue "
                             "(default 50)")
    parser.add_argument("--verbose", action="store_true", help="log every request")
    parser.add_argument("--review", metavar="FILE",
                        help="a review queue of `sweep golden rebase` (OUT.review.jsonl): its "
                             "golden file and corpus, and the page /review")
    parser.add_argument("overrides", nargs="*", help="config overrides, e.g. golden.path=FILE")
    args = parser.parse_args(argv)
    if not 0 <= args.port <= 65535:
        raise SweepError(f"--port {args.port}: must be between 0 and 65535")
    if args.top < 1:
        raise SweepError(f"--top {args.top}: must be at least 1")
    if args.target < 1:
        raise SweepError(f"--target {args.target}: must be at least 1")

    from sweep.config.checks import check_config
    from sweep.config.compose import compose
    from sweep.config.specs import build_job_spec

    overrides = list(args.overrides)
    queue = Path(args.review) if args.review else None
    if queue is not None:
        lines = review.load_queue(queue)
        if not lines:
            raise SweepError(f"{queue}: empty: the rebase left nothing to review")
        golden, corpus = review.queue_paths(lines, queue)
        args.golden = args.golden or golden
        args.corpus = args.corpus or corpus
        if not args.corpus:
            raise SweepError(f"{queue}: the new corpus was a git revision; pass --corpus DIR "
                             "(that revision checked out, or the folder it came from)")
    if args.corpus:
        overrides.append(f"corpus.path={args.corpus}")
    if args.golden:
        overrides.append(f"golden.path={args.golden}")
    cfg = compose(overrides)
    check_config(cfg)
    job = build_job_spec(cfg)
    settings = LabelSettings(job, args.top)
    if args.queue:  # a bad queue is reported before minutes of indexing
        check_queue(Path(args.queue))

    def say(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    # Bind first: a port in use is reported before minutes of indexing.
    server = bind(args.port)
    server.quiet = not args.verbose
    dense_spec = None if args.no_dense else job.embedding
    say(f"sweep label: corpus {settings.corpus}, golden {settings.golden}")
    try:
        app = build_app(settings, dense_spec=dense_spec, cache_dir=settings.cache_dir, say=say)
        if args.queue:
            app.queue = open_queue(app, args.queue, args.target)
            c = app.queue.counts()
            say(f"queue {args.queue}: {c['left']} of {c['queued']} candidates left "
                f"({c['labelled']} labelled, {c['rejected']} rejected); decisions in "
                f"{app.queue.decisions_file}")
        server.app = app
    except BaseException:
        server.server_close()
        raise
    server.app.review_queue = queue
    server.review = queue
    print(f"sweep label: serving on {server.url} (127.0.0.1 only; open it in your browser; "
          "Ctrl-C to stop)", flush=True)
    if queue is not None:
        print(f"sweep label: review queue {queue}: {server.url}review", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        say("sweep label: stopped")
    finally:
        server.server_close()
    return 0
