#!/bin/sh
# gRPC against the built-in target (issue 36): `loadmark serve --http2` serves
# loadmark.target.Target with server reflection, so no .proto is needed. One call shape
# each: unary echo, a server stream read whole and one cancelled by loadmark after 5
# messages, a paced client stream, a bidi echo, and a chosen failure status.
# Run with loadmark on PATH: ./examples/grpc-target.sh [PORT]   (default 18406)
set -eu
port=${1:-18406}
addr=http://127.0.0.1:$port
loadmark serve --http2 --port "$port" &
serve=$!
trap 'kill $serve' EXIT
# Ready when the reflection service answers.
for _ in 1 2 3 4 5 6 7 8 9 10; do
  loadmark grpc "$addr" --call loadmark.target.Target/Echo -n 1 -q --format json >/dev/null 2>&1 && break
  sleep 0.3
done
call() { echo "== $*"; loadmark grpc "$addr" --call "loadmark.target.Target/$@"; }
call Echo --data '{"text":"hi"}' -c 8 -n 2000
call Stream --data '{"count":20,"intervalMs":5}' -c 4 -n 40
call Stream --data '{"count":1000,"intervalMs":5}' --stream-call-count 5 -c 4 -n 40
call Collect --data '[{"text":"a"},{"text":"bc"}]' --stream-call-count 10 --stream-interval 10ms -c 4 -n 40
call Chat --data '{"text":"x"}' --stream-call-count 10 --stream-interval 5ms -c 4 -n 40
# Every call fails: the report counts them by status, and the run exits 1 (no call ended OK).
call Fail --data '{"code":14,"message":"down for maintenance"}' -n 20 \
  || echo "== exit $?: no call ended OK, as a run without a 2xx exits 1"
