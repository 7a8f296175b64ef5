#!/usr/bin/env bash
# bench/find/run.sh — the capacity search against nginx (issue 40): `loadmark find` under
# `p99 < 5ms` beside wrk's closed-loop maximum, in the same run, and how long the search took.
#
#   bench/find/run.sh [--from F] [--slo 'p99 < 5ms'] [--no-write]
#
# FIND_EXTRA='--hold 1s' adds flags to the find (a quick check of the script; the figure in
# RESULTS.md uses none).
# nginx (1 worker, the configuration of bench/serverview.py, access log off) is pinned to
# CPU 0 and serves `GET /json` (100 B, keep-alive; `/` has no index there); every client is
# pinned to CPU 1 (`taskset -c 1`, so loadmark runs one load thread):
#   1. wrk -t1 -c50 -d10s URL: the closed-loop maximum req/s (nginx's own count beside it);
#   2. loadmark find URL --slo SLO --from F --to 100F (its default steps otherwise), timed
#      from start to end (the issue asks ≤ 3 minutes for a 100x range);
#   3. wrk again, so a drift of the machine during the search shows.
# The result (the find's own text output: the verdict and the curve), the commands, nginx's
# count for each, and the host state bench/lag records go into a section of bench/RESULTS.md
# (replaced when it exists; --no-write prints it only). Uses target/release/loadmark
# (`cargo build --release -p loadmark`). Loopback only; every run bounded by `timeout`; nginx is
# stopped by its PID.
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
BENCH="$(dirname "$HERE")"
ROOT="$(dirname "$BENCH")"
LOADMARK="${LOADMARK:-$ROOT/target/release/loadmark}"
FROM=500
SLO='p99 < 5ms'
WRITE=1
while [ $# -gt 0 ]; do
  case "$1" in
    --from) FROM="$2"; shift 2 ;;
    --slo) SLO="$2"; shift 2 ;;
    --no-write) WRITE=0; shift ;;
    *) echo "usage: $0 [--from F] [--slo OBJECTIVE] [--no-write]" >&2; exit 2 ;;
  esac
done
TO=$((FROM * 100))
[ -x "$LOADMARK" ] || { echo "no $LOADMARK: cargo build --release -p loadmark" >&2; exit 2; }

WORK="$(mktemp -d /tmp/bench-find-XXXXXX)"
PORT="$(python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import benchlib; print(benchlib.free_port())' "$BENCH")"
CONF="$(python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import serverview; print(serverview.nginx_conf(sys.argv[2], int(sys.argv[3])))' "$BENCH" "$WORK" "$PORT")"
URL="http://127.0.0.1:$PORT/json"
taskset -c 0 nginx -p "$WORK" -c "$CONF" &
NGINX=$!
cleanup() {
  kill -QUIT "$NGINX" 2>/dev/null || true
  wait "$NGINX" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

served() {
  curl -s "http://127.0.0.1:$PORT/nginx_status" | awk 'NR == 3 { print $3 }'
}
for _ in $(seq 50); do served >/dev/null 2>&1 && [ -n "$(served)" ] && break; sleep 0.1; done

read_or() { cat "$1" 2>/dev/null || echo "$2"; }
HOST="$(printf '{"cpuidle_driver": "%s", "guest_halt_poll_ns": "%s", "clocksource": "%s", "kernel": "%s", "cpus": %s}' \
  "$(read_or /sys/devices/system/cpu/cpuidle/current_driver none)" \
  "$(read_or /sys/module/haltpoll/parameters/guest_halt_poll_ns absent)" \
  "$(read_or /sys/devices/system/clocksource/clocksource0/current_clocksource '?')" \
  "$(read_or /proc/sys/kernel/osrelease '?')" "$(nproc --all)")"
steal() { awk '/^cpu / { print $9 }' /proc/stat; }
TICK="$(getconf CLK_TCK)"

# wrk's closed loop: its Requests/sec, and nginx's count over the run.
WRK_CMD="taskset -c 1 timeout 30 wrk -t1 -c50 -d10s $URL"
wrk_run() {
  local before after out
  before="$(served)"
  out="$($WRK_CMD)"
  after="$(served)"
  echo "$(echo "$out" | awk '/Requests\/sec/ { print $2 }') $(( (after - before - 1) / 10 ))"
}

echo "host: $HOST" >&2
echo "nginx on 127.0.0.1:$PORT (CPU 0), pid $NGINX; clients on CPU 1" >&2
WRK1="$(wrk_run)"
echo "wrk before: $WRK1 (wrk's req/s, nginx's count / 10 s)" >&2

# shellcheck disable=SC2206 # FIND_EXTRA is words on purpose
FIND_CMD=(taskset -c 1 timeout 200 "$LOADMARK" find "$URL" --slo "$SLO" --from "$FROM" --to "$TO" ${FIND_EXTRA:-})
STARTED="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
STEAL0="$(steal)"
LOAD0="$(cut -d' ' -f1-3 /proc/loadavg)"
BEFORE="$(served)"
T0="$(date +%s.%N)"
set +e
"${FIND_CMD[@]}" -o "$WORK/capacity.json" > "$WORK/find.txt" 2> "$WORK/find.err"
CODE=$?
set -e
T1="$(date +%s.%N)"
AFTER="$(served)"
STEAL1="$(steal)"
LOAD1="$(cut -d' ' -f1-3 /proc/loadavg)"
ELAPSED="$(echo "$T1 - $T0" | bc)"
cat "$WORK/find.err" >&2
echo "find exited $CODE after ${ELAPSED}s" >&2

WRK2="$(wrk_run)"
echo "wrk after: $WRK2" >&2

CAPACITY="$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); c=r.get("capacity"); print("none" if c is None else f"{c:,.0f}")' "$WORK/capacity.json" 2>/dev/null || echo '?')"
STOLEN_MS=$(( (STEAL1 - STEAL0) * 1000 / TICK ))
read -r WRK1_RPS WRK1_NGINX <<< "$WRK1"
read -r WRK2_RPS WRK2_NGINX <<< "$WRK2"
REV="$(git -C "$ROOT" rev-parse --short HEAD)"

SECTION="$WORK/section.md"
{
  echo "## Capacity search against nginx beside wrk's closed loop (bench/find, issue 40), $(date -u +%Y-%m-%d)"
  echo
  echo "\`bench/find/run.sh --from $FROM\`, started $STARTED; loadmark $REV (\`cargo build --release -p loadmark\`)."
  echo "nginx (1 worker, bench/serverview.py's configuration, access log off) pinned to CPU 0 serves"
  echo "\`GET /json\` (100 B, keep-alive); each client pinned to CPU 1 (loadmark then runs one load"
  echo "thread). The three runs, in this order:"
  echo
  echo '```sh'
  echo "$WRK_CMD"
  echo "taskset -c 1 $(basename "$LOADMARK") find $URL --slo '$SLO' --from $FROM --to $TO ${FIND_EXTRA:-}-o capacity.json"
  echo "$WRK_CMD"
  echo '```'
  echo
  echo "Host: \`$HOST\`; the host took $STOLEN_MS ms of CPU from this guest during the search"
  echo "(\`/proc/stat\` steal, both vCPUs); load average $LOAD0 before it, $LOAD1 after (other"
  echo "agents share this 2-vCPU machine: a load above 2 means runnable threads waited for a CPU)."
  echo
  echo "| | req/s |"
  echo "|---|---:|"
  echo "| wrk closed loop, 50 connections, before the search (wrk's figure; nginx's count ÷ 10 s) | $WRK1_RPS ($WRK1_NGINX) |"
  echo "| **loadmark find: capacity under \`$SLO\`** | **$CAPACITY** |"
  echo "| wrk closed loop, after the search | $WRK2_RPS ($WRK2_NGINX) |"
  echo
  echo "The search took **${ELAPSED%.*} s** for the ${FROM}-to-${TO} range (exit code $CODE); nginx served"
  echo "$((AFTER - BEFORE - 1)) requests during it. Its output, verbatim (the verdict, then the curve):"
  echo
  echo '```text'
  cat "$WORK/find.txt"
  echo '```'
} > "$SECTION"
cat "$SECTION"
if [ "$WRITE" = 1 ]; then
  python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import benchlib; benchlib.replace_section(sys.argv[2], "## Capacity search against nginx beside", open(sys.argv[3]).read())' \
    "$BENCH" "$BENCH/RESULTS.md" "$SECTION"
  echo "written to bench/RESULTS.md" >&2
fi
