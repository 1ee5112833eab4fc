#!/usr/bin/env bash
# The Chroma server for index.kind=chroma (`make chroma-start` / `make chroma-stop`).
#
#   servers/chroma.sh start    # background; waits until the heartbeat answers (WAIT_S); idempotent
#   servers/chroma.sh stop     # stops the server this script started (its pid file)
#
# Env: VENV (.venv-chroma) HOST (127.0.0.1) PORT (8000) STATE (.cache: data, pid file, log)
# WAIT_S (120: a first start on a slow machine takes well over 10 s)
# A second start never starts a second server: one that fails on the port would overwrite the
# pid file, and stop would then leave the real one running.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="${VENV:-$ROOT/.venv-chroma}"
HOST="${HOST:-127.0.0.1}"
PORT="${PORT:-8000}"
STATE="${STATE:-$ROOT/.cache}"
PIDFILE="$STATE/chroma.pid"
LOG="$STATE/chroma.log"
WAIT_S="${WAIT_S:-120}"

healthy() { curl -sf --max-time 2 "http://$HOST:$PORT/api/v2/heartbeat" >/dev/null 2>&1; }
running() { [[ -f "$PIDFILE" ]] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; }

case "${1:-start}" in
start)
  if running; then
    echo ">> chroma already started here (pid $(cat "$PIDFILE")); $(healthy && echo answering || echo 'still starting') on $HOST:$PORT"
    exit 0
  fi
  if healthy; then echo ">> a server not started here already answers on $HOST:$PORT; not starting another"; exit 0; fi
  [[ -x "$VENV/bin/chroma" ]] || { echo "error: $VENV/bin/chroma missing (run make chroma-venv)" >&2; exit 1; }
  mkdir -p "$STATE"
  nohup "$VENV/bin/chroma" run --path "$STATE/chroma" --host "$HOST" --port "$PORT" >"$LOG" 2>&1 &
  echo $! >"$PIDFILE"
  start=$(date +%s)
  echo ">> chroma starting on $HOST:$PORT (pid $(cat "$PIDFILE")); waiting up to ${WAIT_S}s for its heartbeat"
  until healthy; do
    if ! running; then
      echo "error: chroma exited during start-up; last lines of $LOG:" >&2; tail -5 "$LOG" >&2
      rm -f "$PIDFILE"; exit 1
    fi
    if (( $(date +%s) - start >= WAIT_S )); then
      echo "error: chroma not answering after ${WAIT_S}s (pid $(cat "$PIDFILE") still running: make chroma-stop, or WAIT_S=... to wait longer); see $LOG" >&2
      exit 1
    fi
    sleep 0.5
  done
  echo ">> chroma on $HOST:$PORT (pid $(cat "$PIDFILE"), up in $(( $(date +%s) - start ))s, log $LOG)"
  ;;
stop)
  if running; then
    pid="$(cat "$PIDFILE")"; kill "$pid"
    for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
    echo ">> chroma stopped (pid $pid)"
  else
    echo ">> no chroma started here"
  fi
  rm -f "$PIDFILE"
  ;;
*) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
