#!/usr/bin/env bash
# Real series: RUNS open-loop runs (-R 2000: a stall shows in the latency, no coordinated
# omission) of loadmark against the built-in target, the same URL each time, the
# target restarted before each run; from run SLOW on it freezes STALL every EVERY (a slowdown
# injected at a known run). Then `loadmark history detect` on the series.
#   bench/history/real.sh [RUNS] [SLOW] [STALL] [EVERY]
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-30} slow=${2:-21} stall=${3:-2ms} every=${4:-100ms}
bin=target/debug/loadmark
port=18938
work=$(mktemp -d)
store=$work/real.sqlite
for i in $(seq 1 "$runs"); do
  extra=()
  if [ "$i" -ge "$slow" ]; then extra=(--stall "$stall" --every "$every"); fi
  "$bin" serve --port "$port" "${extra[@]}" >/dev/null 2>&1 &
  pid=$!
  for _ in $(seq 50); do (echo >/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
  "$bin" run "http://127.0.0.1:$port/status" -R 2000 -d 2s -q --store "$store" --tag run="$i" >/dev/null 2>&1
  kill "$pid"
  wait "$pid" 2>/dev/null || true
done
"$bin" history detect --store "$store" --metric p99 --metric mean --metric rps
"$bin" history trend --store "$store" --metric p99 --metric rps
echo "store: $store"
