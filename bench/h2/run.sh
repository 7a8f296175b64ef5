#!/usr/bin/env bash
# HTTP/2 and pipelining beside their peers (issue 16): loadmark --http2 vs h2load (and oha
# --http2 when installed) against nginx h2c, and loadmark --pipeline 16 vs wrk with a
# pipelining script against nginx HTTP/1.1. nginx: one worker pinned to CPU 0; each client
# pinned to CPU 1. Client CPU per request = GNU time's user+sys / requests completed; its user
# and system shares are printed too (what a client can change is mostly the user part: the
# system part is the kernel's work per segment and per syscall).
# With bench/floor built (cargo build --release --manifest-path bench/floor/Cargo.toml), the
# floor's pipelining client runs beside them (`epoll-pipeline16`: the cheapest client that
# writes 16 requests per send and reads until their 16 responses are in): what any pipelining
# client pays on this machine, to read the ratios against.
# Usage: LOADMARK=target/release/loadmark bench/h2/run.sh [REPS] [N]
# Loopback only; every run ends by itself (fixed request counts, wrk for D seconds).
set -euo pipefail
REPS=${1:-3}
N=${2:-200000}
D=${D:-5}
LOADMARK=${LOADMARK:-target/release/loadmark}
FLOOR=${FLOOR:-$(cd "$(dirname "$0")/../.." && pwd)/bench/floor/target/release/loadmark-floor}
DIR=$(mktemp -d /tmp/lmk-h2bench.XXXXXX)
chmod 755 "$DIR"
H2C=${H2C_PORT:-18461}
H1=${H1_PORT:-18462}
mkdir -p "$DIR/tmp"
cat > "$DIR/nginx.conf" <<CONF
worker_processes 1;
worker_cpu_affinity 01;
pid nginx.pid;
error_log stderr warn;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path tmp; proxy_temp_path tmp; fastcgi_temp_path tmp;
    uwsgi_temp_path tmp; scgi_temp_path tmp;
    keepalive_requests 100000000;
    server {
        listen 127.0.0.1:$H2C http2;
        listen 127.0.0.1:$H1;
        location = /plaintext { default_type text/plain; return 200 "Hello, World!"; }
    }
}
CONF
cat > "$DIR/pipeline.lua" <<'LUA'
-- wrk's pipeline script (wrk/scripts/pipeline.lua) with depth 16
init = function(args)
   local r = {}
   for i = 1, 16 do r[i] = wrk.format(nil, "/plaintext") end
   req = table.concat(r)
end
request = function() return req end
LUA
nginx -p "$DIR" -c nginx.conf -g 'daemon off;' &
NGINX=$!
trap 'kill $NGINX 2>/dev/null; rm -rf "$DIR"' EXIT
for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$H1) 2>/dev/null && break; sleep 0.05; done
cpu() { # prints "user+sys seconds" of the command, its output to $DIR/out
  /usr/bin/time -f "%U %S" -o "$DIR/time" taskset -c 1 "$@" > "$DIR/out" 2>&1
  awk '{print $1 + $2}' "$DIR/time"
}
# "us_per_request,us_user,us_system" for SECONDS and REQUESTS (user and system from $DIR/time).
per() { awk -v s="$1" -v n="$2" '{printf "%.2f,%.2f,%.2f", s*1e6/n, $1*1e6/n, $2*1e6/n}' "$DIR/time"; }
echo "tool,rep,requests,seconds_cpu,us_per_request,us_user,us_system,req_per_s"
for rep in $(seq "$REPS"); do
  s=$(cpu h2load -c 50 -m 10 -t 1 -n "$N" "http://127.0.0.1:$H2C/plaintext")
  ok=$(awk '/^requests:/ {print $8}' "$DIR/out"); rps=$(awk '/^finished in/ {print $4}' "$DIR/out")
  echo "h2load,$rep,$ok,$s,$(per "$s" "$ok"),$rps"
  s=$(cpu "$LOADMARK" run "http://127.0.0.1:$H2C/plaintext" --http2 -c 50 --streams 10 -t 1 -n "$N")
  ok=$(awk '/Requests/ {print $2; exit}' "$DIR/out"); rps=$(awk '$1 == "Req/s" {print $2; exit}' "$DIR/out")
  echo "loadmark-http2,$rep,$ok,$s,$(per "$s" "$ok"),$rps"
  if command -v oha > /dev/null; then
    s=$(cpu oha --http2 -c 50 -p 10 -n "$N" --no-tui "http://127.0.0.1:$H2C/plaintext")
    echo "oha-http2,$rep,$N,$s,$(per "$s" "$N"),"
  fi
  s=$(cpu wrk -t 1 -c 256 -d "${D}s" -s "$DIR/pipeline.lua" "http://127.0.0.1:$H1/plaintext")
  ok=$(awk '/requests in/ {print $1}' "$DIR/out"); rps=$(awk '/^Requests\/sec/ {print $2}' "$DIR/out")
  echo "wrk-pipeline16,$rep,$ok,$s,$(per "$s" "$ok"),$rps"
  if [ -x "$FLOOR" ]; then
    s=$(cpu "$FLOOR" "http://127.0.0.1:$H1/plaintext" 256 "$D" epoll-pipeline16)
    ok=$(awk '/responses in/ {print $1}' "$DIR/out"); rps=$(awk '/responses in/ {print $5}' "$DIR/out")
    echo "floor-pipeline16,$rep,$ok,$s,$(per "$s" "$ok"),$rps"
  fi
  s=$(cpu "$LOADMARK" run "http://127.0.0.1:$H1/plaintext" --pipeline 16 -c 256 -t 1 -d "${D}s")
  ok=$(awk '/Requests/ {print $2; exit}' "$DIR/out"); rps=$(awk '$1 == "Req/s" {print $2; exit}' "$DIR/out")
  echo "loadmark-pipeline16,$rep,$ok,$s,$(per "$s" "$ok"),$rps"
done
