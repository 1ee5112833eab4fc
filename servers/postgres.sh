#!/usr/bin/env bash
# A throwaway PostgreSQL server for cache.backend=postgres (`make postgres` / `make postgres-stop`).
#
#   servers/postgres.sh start   # initdb in a new temporary folder, 127.0.0.1 only; prints the URL last
#   servers/postgres.sh stop    # stops it and removes its data folder
#
# Env: PORT (5433) STATE (.cache/postgres: where the data folder is written down) DB (sweep_cache)
# ROLE (sweep) PASSWORD_ENV (CHUNK_SWEEP_CACHE_PASSWORD: the NAME of the variable that holds the
# role's password; it must be set, and the password goes to initdb through a pipe, so it is in
# no file, no command line and no log).
# The binaries are Debian's (package postgresql): on PATH, else the newest
# /usr/lib/postgresql/*/bin, else `apt-get install postgresql` (sudo when not root). PostgreSQL
# refuses to run as root: as root, the server runs as the `postgres` user the package creates.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PORT="${PORT:-5433}"
STATE="${STATE:-$ROOT/.cache/postgres}"
DB="${DB:-sweep_cache}"
ROLE="${ROLE:-sweep}"
PASSWORD_ENV="${PASSWORD_ENV:-CHUNK_SWEEP_CACHE_PASSWORD}"
POINTER="$STATE/postgres.datadir"

find_bin() {
  if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
    dirname "$(readlink -f "$(command -v pg_ctl)")"; return 0
  fi
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
  [[ -n "$d" && -x "$d/pg_ctl" ]] && { echo "$d"; return 0; }
  return 1
}

BIN=$(find_bin || true)
if [[ -z "$BIN" && "${1:-start}" == start ]]; then
  SUDO=$([ "$(id -u)" -eq 0 ] || echo sudo)
  echo ">> no initdb/pg_ctl on PATH or under /usr/lib/postgresql: installing postgresql with apt-get" >&2
  $SUDO apt-get update -q >&2 && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql >&2
  BIN=$(find_bin) || { echo "error: postgresql installed but no pg_ctl found" >&2; exit 1; }
fi

# As root, run the server's programs as `postgres`; the environment (the password variable) is kept.
as_owner() {
  if [[ "$(id -u)" -eq 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi
}

running() { [[ -f "$POINTER" ]] && [[ -f "$(cat "$POINTER")/postmaster.pid" ]] &&
  as_owner "$BIN/pg_ctl" -D "$(cat "$POINTER")" status >/dev/null 2>&1; }

url() { echo "postgresql://$ROLE@127.0.0.1:$PORT/$DB"; }

case "${1:-start}" in
start)
  mkdir -p "$STATE"
  if running; then
    echo ">> postgres already started here (data $(cat "$POINTER")) on 127.0.0.1:$PORT" >&2
    url; exit 0
  fi
  [[ -n "${!PASSWORD_ENV:-}" ]] || {
    echo "error: set $PASSWORD_ENV to the password the role '$ROLE' gets (PASSWORD_ENV=... names another variable)" >&2
    exit 1; }
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/chunk-sweep-postgres.XXXXXX")
  if [[ "$(id -u)" -eq 0 ]]; then chown postgres: "$tmp"; fi
  data="$tmp/data"
  echo "$data" >"$POINTER"
  LOG="$tmp/server.log"  # beside the data: the server's user may not reach $STATE
  export PASSWORD_ENV
  # The pipe is made by the shell that runs initdb, so the server's user can read it.
  as_owner bash -c '"$0/initdb" -D "$1" -U "$2" --auth=scram-sha-256 --encoding=UTF8 \
      --pwfile=<(printf "%s\n" "${!PASSWORD_ENV}") >>"$3" 2>&1' "$BIN" "$data" "$ROLE" "$LOG" || {
    echo "error: initdb failed; last lines of $LOG:" >&2; tail -5 "$LOG" >&2; exit 1; }
  # TCP on 127.0.0.1 only; the Unix socket inside the data folder (not /var/run/postgresql).
  as_owner "$BIN/pg_ctl" -D "$data" -l "$LOG" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $PORT -c unix_socket_directories=$data" start >/dev/null || {
    echo "error: postgres did not start on 127.0.0.1:$PORT; last lines of $LOG:" >&2; tail -5 "$LOG" >&2; exit 1; }
  PGPASSWORD="${!PASSWORD_ENV}" "$BIN/psql" -q -h 127.0.0.1 -p "$PORT" -U "$ROLE" -d postgres \
    -c "CREATE DATABASE $DB" >/dev/null
  echo ">> postgres on 127.0.0.1:$PORT (data $data, log $LOG; make postgres-stop stops it)" >&2
  url
  ;;
stop)
  if [[ -f "$POINTER" ]]; then
    data="$(cat "$POINTER")"
    if [[ -f "$data/postmaster.pid" ]]; then
      as_owner "$BIN/pg_ctl" -D "$data" -m fast -w stop >/dev/null 2>&1 || true
      echo ">> postgres stopped (its temporary folder $(dirname "$data") removed)"
    fi
    rm -rf "$data" "$(dirname "$data")/server.log"
    rmdir "$(dirname "$data")" 2>/dev/null || true
    rm -f "$POINTER"
  else
    echo ">> no postgres started here"
  fi
  ;;
*) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
