#!/usr/bin/env bash
# A local Ray cluster for hydra/launcher=ray_cluster (`make ray-start` / `make ray-stop`): a head
# and WORKERS worker nodes, each its own `ray start` on 127.0.0.1 with its own temp dir, so a
# sweep's configurations spread over separate raylets as on a real cluster.
#
#   servers/ray.sh start          # prints the cluster's address (for RAY_ADDRESS) last
#   servers/ray.sh stop           # stops the nodes this script started here, and only those
#   servers/ray.sh kill-worker N  # SIGKILL worker node N's processes (a node that dies)
#   servers/ray.sh status
#
# Env: VENV (.venv-ray: the Python the nodes run, hence the jobs), STATE (.cache/ray: where the
# temp dirs are written down), PORT (6390: the head's GCS port), WORKERS (1), NUM_CPUS (1 per
# node), OBJECT_STORE_MB (100 per node), WAIT_S (120: the wait for every node to join).
# Every port is fixed and derived from PORT: node n (0 = the head, 1.. = workers) uses
# PORT+20n+1 .. PORT+20n+7 (node manager, object manager, runtime-env agent, dashboard agent
# gRPC and HTTP, metrics, and the Ray Client server on the head) and PORT+20n+10 .. +19 for its
# worker processes: 6390-6429 with the defaults. The dashboard is off.
# A node's processes are told apart from any other Ray on the machine by their temp dir, which
# is in their command lines: `stop` never touches a cluster it did not start (`ray stop` would
# stop every Ray on the host).
# The nodes inherit this environment (PYTHONPATH, HF_HUB_OFFLINE, CHUNK_SWEEP_CACHE ...); each
# worker node also gets CHUNK_SWEEP_NODE=worker<N> and the head CHUNK_SWEEP_NODE=head, so every
# job's report.json names the node that ran it.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="${VENV:-$ROOT/.venv-ray}"
STATE="${STATE:-$ROOT/.cache/ray}"
PORT="${PORT:-6390}"
WORKERS="${WORKERS:-1}"
NUM_CPUS="${NUM_CPUS:-1}"
OBJECT_STORE_MB="${OBJECT_STORE_MB:-100}"
WAIT_S="${WAIT_S:-120}"
POINTER="$STATE/ray-$PORT.tmpdir"
RAY="$VENV/bin/ray"

# The pids of one node's processes: those whose command line names DIR (the node's temp dir),
# with their descendants (Ray's agents and worker processes rename themselves, ray::IDLE ...,
# so only their parent, the raylet, shows the temp dir); for the head (EXTRA=client) also the
# Ray Client server, whose command line names only its port.
pids_of() {
  local dir="$1" extra="${2:-}" pid cmd stat found=" " grew=1
  declare -A parent=()
  for pid in $(ls /proc | grep -E '^[0-9]+$'); do
    [[ "$pid" == "$$" || "$pid" == "$BASHPID" ]] && continue
    cmd="$( { tr '\0' ' ' <"/proc/$pid/cmdline"; } 2>/dev/null || true) "
    stat="$( { cat "/proc/$pid/stat"; } 2>/dev/null || true)"
    [[ -z "$stat" ]] && continue
    stat="${stat##*) }"; stat="${stat#* }"  # past "pid (comm) state ": the parent's pid
    parent[$pid]="${stat%% *}"
    # "$dir/" or "$dir ": worker1 is not worker10
    if [[ "$cmd" == *"$dir/"* || "$cmd" == *"$dir "* ]] ||
       [[ "$extra" == client && "$cmd" == *ray.util.client.server* &&
          "$cmd" == *"--port=$((PORT + 7)) "* ]]; then
      found+="$pid "
    fi
  done
  while (( grew )); do  # add children until none is new
    grew=0
    for pid in "${!parent[@]}"; do
      if [[ "$found" != *" $pid "* && "$found" == *" ${parent[$pid]} "* ]]; then
        found+="$pid "; grew=1
      fi
    done
  done
  echo $found
}

alive_nodes() {  # how many nodes the head's GCS knows alive (empty when it does not answer)
  "$VENV/bin/python" - "$1" <<'EOF' 2>/dev/null || true
import sys, ray
ray.init(address=sys.argv[1], logging_level="ERROR", log_to_driver=False)
print(sum(1 for n in ray.nodes() if n["Alive"]))
EOF
}

node_args() {  # the fixed ports of node $1
  local b=$((PORT + 20 * $1))
  echo "--node-manager-port=$((b + 1)) --object-manager-port=$((b + 2))" \
    "--runtime-env-agent-port=$((b + 3)) --dashboard-agent-grpc-port=$((b + 4))" \
    "--dashboard-agent-listen-port=$((b + 5)) --metrics-export-port=$((b + 6))" \
    "--min-worker-port=$((b + 10)) --max-worker-port=$((b + 19))"
}

stop_dir() {  # TERM, then KILL, the processes of one node (pids_of's arguments)
  local pids i
  pids=$(pids_of "$@")
  [[ -z "$pids" ]] && return 0
  kill -TERM $pids 2>/dev/null || true
  local deadline=$((SECONDS + 15))  # then KILL what is left, as `ray stop` does
  while (( SECONDS < deadline )); do
    sleep 1
    for i in $pids; do [[ -d /proc/$i ]] && continue 2; done
    return 0
  done
  kill -KILL $pids 2>/dev/null || true
}

case "${1:-start}" in
start)
  [[ -x "$RAY" ]] || { echo "error: no $RAY: run make ray-venv first" >&2; exit 1; }
  mkdir -p "$STATE"
  if [[ -f "$POINTER" ]] && [[ -n "$(pids_of "$(cat "$POINTER")/head" client)" ]]; then
    echo ">> a Ray cluster is already started here (temp dir $(cat "$POINTER"))" >&2
    echo "127.0.0.1:$PORT"; exit 0
  fi
  # Short: Ray's Unix sockets live under the temp dir, and a socket path is at most 107 bytes.
  tmp=$(mktemp -d /tmp/csray.XXXXXX)
  echo "$tmp" >"$POINTER"
  common=(--node-ip-address=127.0.0.1 --num-cpus="$NUM_CPUS" --num-gpus=0
          --object-store-memory=$((OBJECT_STORE_MB * 1024 * 1024)) --disable-usage-stats)
  # shellcheck disable=SC2046
  CHUNK_SWEEP_NODE=head RAY_USAGE_STATS_ENABLED=0 "$RAY" start --head --port="$PORT" \
    --ray-client-server-port=$((PORT + 7)) --include-dashboard=false \
    --temp-dir="$tmp/head" "${common[@]}" $(node_args 0) >"$tmp/head.log" 2>&1 || {
    echo "error: the Ray head did not start on 127.0.0.1:$PORT; last lines of $tmp/head.log:" >&2
    tail -15 "$tmp/head.log" >&2; exit 1; }
  for n in $(seq 1 "$WORKERS"); do
    # shellcheck disable=SC2046
    CHUNK_SWEEP_NODE="worker$n" RAY_USAGE_STATS_ENABLED=0 "$RAY" start \
      --address="127.0.0.1:$PORT" --temp-dir="$tmp/worker$n" --include-log-monitor=false \
      "${common[@]}" $(node_args "$n") >"$tmp/worker$n.log" 2>&1 || {
      echo "error: Ray worker $n did not join 127.0.0.1:$PORT; last lines of $tmp/worker$n.log:" >&2
      tail -15 "$tmp/worker$n.log" >&2; exit 1; }
  done
  want=$((WORKERS + 1))
  deadline=$((SECONDS + WAIT_S))
  until [[ "$(alive_nodes "127.0.0.1:$PORT")" == "$want" ]]; do
    (( SECONDS < deadline )) || { echo "error: $want Ray nodes were not alive after ${WAIT_S}s" >&2; exit 1; }
    sleep 1
  done
  echo ">> Ray cluster on 127.0.0.1:$PORT: head + $WORKERS worker(s), $NUM_CPUS CPU each (temp dir $tmp; make ray-stop stops it)" >&2
  echo "127.0.0.1:$PORT"
  ;;
stop)
  [[ -f "$POINTER" ]] || { echo ">> no Ray cluster started here" >&2; exit 0; }
  tmp=$(cat "$POINTER")
  # The workers first: a head that goes first leaves them retrying for a while.
  for d in "$tmp"/worker*; do [[ -d "$d" ]] && stop_dir "$d"; done
  stop_dir "$tmp/head" client
  stop_dir "$tmp"
  rm -rf "$tmp" "$POINTER"
  echo ">> Ray cluster on 127.0.0.1:$PORT stopped" >&2
  ;;
kill-worker)
  [[ -f "$POINTER" ]] || { echo "error: no Ray cluster started here" >&2; exit 1; }
  dir="$(cat "$POINTER")/worker${2:-1}"
  pids=$(pids_of "$dir")
  [[ -n "$pids" ]] || { echo "error: worker ${2:-1} has no process" >&2; exit 1; }
  kill -KILL $pids
  echo ">> killed worker ${2:-1}: pids $(echo $pids)" >&2
  ;;
status)
  [[ -f "$POINTER" ]] || { echo "no Ray cluster started here"; exit 1; }
  echo "temp dir $(cat "$POINTER"), alive nodes: $(alive_nodes "127.0.0.1:$PORT")"
  ;;
*)
  echo "usage: $0 start|stop|kill-worker [N]|status" >&2; exit 2
  ;;
esac
