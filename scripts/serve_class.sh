#!/usr/bin/env bash
# Serve the app to a class: N Streamlit workers (default: the number of cores) behind HAProxy, which pins each
# student to a worker with a cookie it inserts, passes websockets through, health-checks every worker on
# /_stcore/health and sends a dead worker's students to a live one. This script restarts a worker that exits and
# stops everything on Ctrl-C or SIGTERM. Every worker runs in server mode (CNN_CALC_SERVER=1) with one shared
# server.cookieSecret. Needs the app's set-up, bash 5.1+ and HAProxy (scripts/install_haproxy.sh installs it).
#
#   scripts/serve_class.sh [--workers N] [--port P] [--bind ADDR] [--worker-port Q] [--run-dir DIR] [--check]
#
#   --workers N      Streamlit workers (default: nproc)
#   --port P         the port students open (default 8501), on --bind ADDR (default 0.0.0.0: every interface)
#   --worker-port Q  the first worker's port on 127.0.0.1; the others follow (default P+1)
#   --run-dir DIR    where haproxy.cfg, the workers' pid files and the logs go (default: a new /tmp/cnn-calc-class-*)
#   --check          write haproxy.cfg, check it with `haproxy -c`, print its path and stop
#
# Environment: CNN_CALC_PYTHON (default .venv/bin/python, else python3), CNN_CALC_COOKIE_SECRET (default: a new
# random secret each start). Details: docs/app.md#serving-a-class.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"

die() { echo "serve_class: $*" >&2; exit 2; }
log() { echo "serve_class: $*"; }

WORKERS="$(nproc 2>/dev/null || echo 1)"
PORT=8501
BIND=0.0.0.0
WORKER_PORT=""
RUN_DIR=""
CHECK=0
while [ $# -gt 0 ]; do
    case "$1" in
        --workers) WORKERS="${2:-}"; shift 2 ;;
        --port) PORT="${2:-}"; shift 2 ;;
        --bind) BIND="${2:-}"; shift 2 ;;
        --worker-port) WORKER_PORT="${2:-}"; shift 2 ;;
        --run-dir) RUN_DIR="${2:-}"; shift 2 ;;
        --check) CHECK=1; shift ;;
        -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown argument: $1 (--help lists them)" ;;
    esac
done
is_int() { [[ "$1" =~ ^[0-9]+$ ]]; }
is_int "$WORKERS" && [ "$WORKERS" -ge 1 ] || die "--workers wants a whole number ≥ 1, not '$WORKERS'"
is_int "$PORT" && [ "$PORT" -ge 1 ] && [ "$PORT" -le 65535 ] || die "--port wants a port number, not '$PORT'"
WORKER_PORT="${WORKER_PORT:-$((PORT + 1))}"
is_int "$WORKER_PORT" && [ "$((WORKER_PORT + WORKERS - 1))" -le 65535 ] || die "bad --worker-port '$WORKER_PORT'"
if [ "$PORT" -ge "$WORKER_PORT" ] && [ "$PORT" -lt "$((WORKER_PORT + WORKERS))" ]; then
    die "--port $PORT is one of the workers' ports ($WORKER_PORT…$((WORKER_PORT + WORKERS - 1)))"
fi
HAPROXY="$(command -v haproxy || echo /usr/sbin/haproxy)"          # /usr/sbin is not on every user's PATH
[ -x "$HAPROXY" ] || die "haproxy is not installed: run 'bash scripts/install_haproxy.sh' (Debian)"
(( BASH_VERSINFO[0] > 5 || (BASH_VERSINFO[0] == 5 && BASH_VERSINFO[1] >= 1) )) || die "needs bash 5.1 or later"

if [ -n "$RUN_DIR" ]; then
    mkdir -p "$RUN_DIR"
else
    RUN_DIR="$(mktemp -d "${TMPDIR:-/tmp}/cnn-calc-class-XXXXXX")"
fi
RUN_DIR="$(cd "$RUN_DIR" && pwd)"
CFG="$RUN_DIR/haproxy.cfg"

# the configuration: the template's fields filled in, one server line per worker (the cookie value names it)
{
    sed -e "s|@BIND@|$BIND|g" -e "s|@PORT@|$PORT|g" -e "s|@RUN_DIR@|$RUN_DIR|g" "$ROOT/scripts/haproxy.cfg.in"
    for ((k = 1; k <= WORKERS; k++)); do
        echo "    server w$k 127.0.0.1:$((WORKER_PORT + k - 1)) cookie w$k"
    done
} >"$CFG"
"$HAPROXY" -c -q -f "$CFG" || die "HAProxy refuses $CFG"
if [ "$CHECK" -eq 1 ]; then
    echo "$CFG"
    exit 0
fi

for p in "$PORT" $(seq "$WORKER_PORT" $((WORKER_PORT + WORKERS - 1))); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then die "port $p is in use"; fi
done
PY="${CNN_CALC_PYTHON:-}"
[ -n "$PY" ] || { [ -x "$ROOT/.venv/bin/python" ] && PY="$ROOT/.venv/bin/python" || PY=python3; }
"$PY" -c "import streamlit" 2>/dev/null || die "$PY has no Streamlit: set up the app as the README says"
SECRET="${CNN_CALC_COOKIE_SECRET:-$("$PY" -c 'import secrets; print(secrets.token_hex(32))')}"

declare -A PIDS=() STARTED=()          # worker number → its pid, when it started (s)
HAPROXY_PID="" PAUSE_PID=""

start_worker() {
    local k=$1 port=$((WORKER_PORT + $1 - 1))
    (cd "$ROOT" && CNN_CALC_SERVER=1 STREAMLIT_SERVER_COOKIE_SECRET="$SECRET" exec "$PY" -m streamlit run app.py \
        --server.headless true --server.address 127.0.0.1 --server.port "$port" \
        --server.fileWatcherType none --server.runOnSave false \
        >>"$RUN_DIR/worker-$k.log" 2>&1) &
    PIDS[$k]=$!
    STARTED[$k]=$SECONDS
    echo "${PIDS[$k]}" >"$RUN_DIR/worker-$k.pid"
}

stop_all() {
    trap - INT TERM HUP
    log "stopping"
    local pids=("${PIDS[@]}") pid alive
    [ -z "$HAPROXY_PID" ] || pids+=("$HAPROXY_PID")
    [ -z "$PAUSE_PID" ] || kill "$PAUSE_PID" 2>/dev/null || true
    kill -TERM "${pids[@]}" 2>/dev/null || true
    for _ in $(seq 100); do                  # what has not stopped in 10 s is killed
        alive=0
        for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
        [ "$alive" -eq 1 ] || break
        sleep 0.1
    done
    kill -KILL "${pids[@]}" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -f "$RUN_DIR"/worker-*.pid "$RUN_DIR/haproxy.pid" "$RUN_DIR/haproxy.sock"
    log "stopped"
    exit "${1:-0}"
}
trap 'stop_all 0' INT TERM HUP

log "config, pid files and logs in $RUN_DIR"
for ((k = 1; k <= WORKERS; k++)); do start_worker "$k"; done
ready=0
for k in "${!PIDS[@]}"; do          # HAProxy starts once every worker answers its health check (or has exited)
    port=$((WORKER_PORT + k - 1))
    for _ in $(seq 240); do
        if "$PY" -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$port/_stcore/health', timeout=2)" \
            2>/dev/null; then ready=$((ready + 1)); break; fi
        kill -0 "${PIDS[$k]}" 2>/dev/null || { log "worker $k did not start: see $RUN_DIR/worker-$k.log"; break; }
        sleep 0.5
    done
done
"$HAPROXY" -db -f "$CFG" >>"$RUN_DIR/haproxy.log" 2>&1 &
HAPROXY_PID=$!
echo "$HAPROXY_PID" >"$RUN_DIR/haproxy.pid"
log "serving $ready of $WORKERS workers on $BIND:$PORT: students open http://<this machine>:$PORT (Ctrl-C stops)"

while true; do                       # the supervisor: a worker that exits is started again
    status=0
    wait -n -p done_pid || status=$?
    [ -n "${done_pid:-}" ] || continue
    if [ "$done_pid" = "$HAPROXY_PID" ]; then
        log "HAProxy exited with status $status (see $RUN_DIR/haproxy.log)"
        stop_all 1
    fi
    for k in "${!PIDS[@]}"; do
        if [ "${PIDS[$k]}" = "$done_pid" ]; then
            log "worker $k (port $((WORKER_PORT + k - 1))) exited with status $status; restarting it"
            # one that dies as it starts (see its log) is retried every 5 s, not in a tight loop
            if [ $((SECONDS - STARTED[$k])) -lt 10 ]; then pause=5; else pause=1; fi
            sleep "$pause" &                                 # a signal stops the pause at once
            PAUSE_PID=$!
            wait "$PAUSE_PID" || true
            PAUSE_PID=""
            start_worker "$k"
        fi
    done
    unset done_pid
done
