#!/usr/bin/env bash
# Real series for the detection bench (issue 38): loadmark against the built-in target with a
# slowdown injected at a known run, then loadmark's detector and Apache Otava on the same CSV.
#
# Each of 14 series is RUNS open-loop runs (-R 2000 -d DURATION: a stall shows in the latency, no
# coordinated omission) of one URL, its own port; the target is restarted before each run and,
# from run AT on, freezes STALL every 100ms (`serve --stall STALL --every 100ms`). Three series
# have no slowdown. Every run's result file is imported into one store with the tags
# stall=STALL at=AT; `history trend --format csv` exports the series (with loadmark's change
# points), and real_score.py runs Otava on that CSV and scores both.
#
#   bench/history/real.sh [RUNS] [DURATION]          # 14 series of 30 runs of 1s: ~9 minutes
#
# RUN_BIN: the loadmark that serves and runs (default target/release/loadmark if built, else
# target/debug/loadmark); HIST_BIN: the one with `history` (target/debug/loadmark); OTAVA_PY:
# a python with apache-otava 0.8.0 (default target/otava/bin/python, made if missing); OUT: the
# directory for results, store and CSV (default target/history-real, emptied first); RECORD=0:
# import and score the results already in OUT, recording nothing.
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-30} dur=${2:-1s}
run_bin=${RUN_BIN:-target/release/loadmark}
[ -x "$run_bin" ] || run_bin=target/debug/loadmark
hist_bin=${HIST_BIN:-target/debug/loadmark}
otava_py=${OTAVA_PY:-target/otava/bin/python}
if [ ! -x "$otava_py" ]; then
  python3 -m venv target/otava && target/otava/bin/pip install -q apache-otava==0.8.0
  otava_py=target/otava/bin/python
fi
out=${OUT:-target/history-real}
if [ "${RECORD:-1}" = 1 ]; then rm -rf "$out" && mkdir -p "$out"; fi
store=$out/real.sqlite
# STALL@AT: a freeze of STALL every 100ms from run AT (1-based) on; none: no slowdown.
specs=(none 10ms@9 20ms@13 40ms@18 none 5ms@24 10ms@13 20ms@18 40ms@24 none 5ms@9 10ms@21 20ms@9 40ms@13)
start=$(date +%s)
for k in "${!specs[@]}"; do
  [ "${RECORD:-1}" = 1 ] || break
  spec=${specs[$k]} port=$((18960 + k))
  stall=${spec%@*} at=none
  [ "$spec" = none ] || at=${spec#*@}
  mkdir -p "$out/s$k"
  for i in $(seq 1 "$runs"); do
    extra=()
    if [ "$at" != none ] && [ "$i" -ge "$at" ]; then extra=(--stall "$stall" --every 100ms); fi
    "$run_bin" serve --port "$port" "${extra[@]}" >/dev/null 2>&1 &
    pid=$!
    for _ in $(seq 100); do (echo >/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.05; done
    "$run_bin" run "http://127.0.0.1:$port/status" -R 2000 -d "$dur" -q \
      -o "$out/s$k/r$(printf %03d "$i").json" >/dev/null 2>&1
    kill "$pid"
    wait "$pid" 2>/dev/null || true
  done
  echo "series $k ($spec): $runs runs, $(($(date +%s) - start))s so far" >&2
done
rm -f "$store" "$store-wal" "$store-shm"
for k in "${!specs[@]}"; do
  spec=${specs[$k]}
  at=none
  [ "$spec" = none ] || at=${spec#*@}
  "$hist_bin" history import --store "$store" --tag stall="${spec%@*}" --tag at="$at" "$out/s$k"/r*.json >/dev/null
done
for alpha in 0.05 0.01; do
  "$hist_bin" history trend --store "$store" --by stall,at --metric p90 --metric mean --metric p99 \
    --alpha "$alpha" --format csv >"$out/trend-$alpha.csv"
done
for run in "0.05 0.001" "0.01 0.001" "0.01 0.05"; do
  set -- $run
  echo "== loadmark alpha $1, Otava p $2"   # p 0.001 is Otava's default
  "$otava_py" bench/history/real_score.py "$out/trend-$1.csv" "$2"
done
echo "store: $store; CSV: $out/trend-*.csv; $(($(date +%s) - start))s in all"
