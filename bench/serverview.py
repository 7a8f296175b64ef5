#!/usr/bin/env python3
"""bench/serverview.py — what each client's traffic costs the server (issue 22).

Starts a private nginx (1 worker, pinned to SERVER_CPU) on 127.0.0.1, then runs the clients
pinned to CLIENT_CPU in interleaved pairs, and for every run records from the server's side:
requests nginx counted (stub_status), the worker's CPU time and context switches
(/proc/PID/stat, /proc/PID/status), rescheduling and function-call IPIs per CPU
(/proc/interrupts), and TCP segment counters (nstat). Prints one row per run and, per pair,
the ratio of nginx-counted req/s of each client to the first client's.

  bench/serverview.py [--dur 6] [--pairs 5] [--conns 50] [--path /json]
                      [--server nginx|builtin|node] [--client NAME=COMMAND ...] [--strace]

--server picks the server under test: nginx (the default; one worker, counted by stub_status),
builtin (loadmark's built-in target, `serve --threads 1`) or node (bench/servers/count-server.js,
Node's http module, one event loop). The last two are started afresh for every run and count
what they answered themselves, printed as they stop ("served N requests").

COMMAND is a shell command with {url}, {conns} and {dur} placeholders; the defaults are wrk and
target/release/loadmark. --strace adds one short run per client with `strace -c -f` on the nginx
worker (syscalls per request; strace slows the server, so only the counts mean anything).
Only loopback traffic; every run is bounded by `timeout`; nginx is stopped by its PID.
"""
import argparse
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

# ROOT: bench/lag and bench/wire use serverview.ROOT.
from benchlib import (LOADMARK, ROOT, pinned_command, read, said_port,
                      served_count, time_fields)

DEFAULT_CLIENTS = [
    "wrk=wrk -t1 -c{conns} -d{dur}s {url}",
    "loadmark=" + LOADMARK + " run {url} -c {conns} -t 1 -d {dur}s -q",
]


PERF_SYSCALLS = ["epoll_wait", "recvfrom", "read", "readv", "write", "writev", "sendfile64",
                 "sendto", "sendmsg", "recvmsg", "accept4", "close", "setsockopt", "epoll_ctl",
                 "ioctl", "futex"]


def nginx_conf(d, port, cache=False):
    # mkdtemp makes d 0700, and nginx's worker (nobody) must read the files: without this it
    # answered every request 403 (which stub_status counts like any other).
    os.chmod(d, 0o755)
    www = os.path.join(d, "www")
    os.makedirs(www, exist_ok=True)
    with open(os.path.join(www, "json"), "w") as f:
        f.write('{"id":12345,"name":"anchor-bench","ok":true,"tags":["a","b","c"],"msg":"'
                + "x" * 22 + '"}')
    with open(os.path.join(www, "10k"), "w") as f:
        f.write("a" * 10240)
    conf = os.path.join(d, "nginx.conf")
    # compare.sh's nginx keeps its files open (about 20% less server CPU per request): with
    # the server cheaper, the client's own cost matters more.
    cache_line = "\n  open_file_cache max=16 inactive=60s;" if cache else ""
    with open(conf, "w") as f:
        f.write(f"""worker_processes 1;
daemon off;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
worker_rlimit_nofile 65536;
events {{ worker_connections 8192; multi_accept on; }}
http {{
  access_log off;
  sendfile on; tcp_nopush on; tcp_nodelay on;
  keepalive_timeout 75s;
  keepalive_requests 100000000;{cache_line}
  client_body_temp_path {d}/body; proxy_temp_path {d}/proxy; fastcgi_temp_path {d}/fcgi;
  uwsgi_temp_path {d}/uwsgi; scgi_temp_path {d}/scgi;
  types {{ }}
  server {{
    listen 127.0.0.1:{port} backlog=4096;
    root {www};
    location = /json {{ default_type application/json; }}
    location = /10k {{ default_type application/octet-stream; }}
    location = /nginx_status {{ stub_status; }}
  }}
}}
""")
    return conf


def served(port):
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/nginx_status", timeout=5).read()
    return int(text.decode().split("\n")[2].split()[2])


def worker_pid(master):
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(master)], capture_output=True,
                         text=True).stdout.split()
    return int(out[0])


def proc_counters(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    cpu = (int(fields[11]) + int(fields[12])) / tick
    status = open(f"/proc/{pid}/status").read()
    vol = int(re.search(r"voluntary_ctxt_switches:\s+(\d+)", status).group(1))
    nonvol = int(re.search(r"nonvoluntary_ctxt_switches:\s+(\d+)", status).group(1))
    return {"cpu_s": cpu, "vcs": vol, "ivcs": nonvol}


def interrupts():
    found = {}
    for line in open("/proc/interrupts"):
        parts = line.split()
        if parts and parts[0] in ("RES:", "CAL:", "LOC:"):
            found[parts[0][:-1] + "0"] = int(parts[1])
            found[parts[0][:-1] + "1"] = int(parts[2])
    return found


def nstat():
    out = subprocess.run(["nstat", "-a", "-z", "TcpOutSegs", "TcpExtDelayedACKs",
                          "TcpExtTCPPureAcks", "TcpExtTCPHPAcks"], capture_output=True,
                         text=True).stdout
    values = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[1].isdigit():
            values[parts[0]] = int(parts[1])
    return values


def delta(after, before):
    return {k: after[k] - before.get(k, 0) for k in after}


class Nginx:
    """One nginx for the whole session; a run's requests are the stub_status delta."""

    def __init__(self, args):
        d = tempfile.mkdtemp(prefix="serverview-")
        self.dir = d
        conf = nginx_conf(d, args.port, getattr(args, "open_file_cache", False))
        self.port = args.port
        self.master = subprocess.Popen(pinned_command(args.server_cpu,
                                                      ["nginx", "-p", d, "-c", conf], None,
                                                      args.rt))
        for _ in range(50):
            try:
                served(self.port)
                break
            except OSError:
                time.sleep(0.1)
        # The master forks the worker; 'taskset' was exec'd, so the Popen's pid is the master.
        self.pid = worker_pid(self.master.pid)
        self.name = f"nginx worker {self.pid}"

    def begin(self):
        self.before = served(self.port)

    def end(self):
        return served(self.port) - self.before - 1  # the stub_status request itself

    def close(self):
        self.master.send_signal(signal.SIGQUIT)
        try:
            self.master.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.master.kill()
            self.master.wait(timeout=10)
        shutil.rmtree(self.dir, ignore_errors=True)


class CountingServer:
    """A server started for each run that says its port first and its count as it stops."""

    def __init__(self, args, name, command):
        self.args, self.name, self.command = args, name, command

    def begin(self):
        self.proc = subprocess.Popen(pinned_command(self.args.server_cpu, self.command, None,
                                                    self.args.rt),
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        line = self.proc.stdout.readline()
        self.port = said_port(line)
        if self.port is None:
            self.proc.kill()
            sys.exit(f"{self.name} did not say its port: {line!r}")
        self.pid = self.proc.pid  # chrt and taskset exec into the server

    def end(self):
        self.proc.send_signal(signal.SIGTERM)
        out, _ = self.proc.communicate(timeout=20)
        count = served_count(out)
        if count is None:
            sys.exit(f"{self.name} did not say its count: {out!r}")
        return count

    def close(self):
        pass


def make_server(args):
    if args.server == "nginx":
        return Nginx(args)
    if args.server == "builtin":
        return CountingServer(args, "the built-in target",
                              [LOADMARK, "serve", "--port", "0", "--threads", "1"])
    return CountingServer(args, "node", ["node", os.path.join(ROOT, "bench/servers/count-server.js"),
                                         "0"])


def run_client(name, command, args, server, strace=False):
    server.begin()
    port, server_pid = server.port, server.pid
    url = f"http://127.0.0.1:{port}{args.path}"
    cmd = command.format(url=url, conns=args.conns, dur=args.dur)
    tracer = None
    perf_out = tempfile.mktemp(prefix="serverview-perf-")
    perf = subprocess.Popen(["perf", "stat", "-x", ",", "-o", perf_out, "-e", ",".join(
        "syscalls:sys_enter_" + c for c in PERF_SYSCALLS) + ",context-switches,cpu-migrations",
        "-p", str(server_pid)], stderr=subprocess.DEVNULL)
    if strace:
        out = tempfile.mktemp(prefix="serverview-strace-")
        tracer = subprocess.Popen(["strace", "-c", "-f", "-o", out, "-p", str(server_pid)],
                                  stderr=subprocess.DEVNULL)
        time.sleep(0.5)
    p0, i0, s0 = proc_counters(server_pid), interrupts(), nstat()
    t0 = time.monotonic()
    times = tempfile.mktemp(prefix="serverview-time-")
    full = pinned_command(args.client_cpu, ["/usr/bin/time", "-o", times, "-f", "%U %S"]
                          + shlex.split(cmd), args.dur + 10, args.rt)
    subprocess.run(full, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.monotonic() - t0
    p1, i1, s1 = proc_counters(server_pid), interrupts(), nstat()
    perf.send_signal(signal.SIGINT)
    perf.wait(timeout=10)
    if tracer:
        tracer.send_signal(signal.SIGINT)
        tracer.wait(timeout=10)
    requests = server.end()
    row = {"client": name, "requests": requests, "wall": wall, "rps": requests / args.dur}
    try:
        user, system = time_fields(read(times))[-2:]
        row["client_cpu_s"] = user + system
        os.unlink(times)
    except (OSError, ValueError):
        row["client_cpu_s"] = float("nan")
    for k, v in delta(p1, p0).items():
        row[k] = v
    for k, v in delta(i1, i0).items():
        row[k] = v
    for k, v in delta(s1, s0).items():
        row[k] = v
    row["perf"] = {}
    for line in open(perf_out):
        parts = line.strip().split(",")
        if len(parts) > 2 and parts[0].replace(".", "").isdigit():
            row["perf"][parts[2].replace("syscalls:sys_enter_", "")] = int(float(parts[0]))
    os.unlink(perf_out)
    if tracer:
        row["strace"] = parse_strace(out, requests)
        os.unlink(out)
    return row


def parse_strace(path, requests):
    calls = {}
    for line in open(path):
        parts = line.split()
        if len(parts) >= 5 and parts[0][0].isdigit() and parts[-1] != "total":
            calls[parts[-1]] = int(parts[3])
    return {k: round(v / max(requests, 1), 3) for k, v in sorted(calls.items())}


def show(row):
    r = max(row["requests"], 1)
    print(f"{row['client']:>10} {row['rps']:>9.0f} req/s  server {row['cpu_s'] / r * 1e6:5.2f} µs/req"
          f"  client {row['client_cpu_s'] / r * 1e6:5.2f} µs/req"
          f"  vcs/req {row['vcs'] / r:.3f} ivcs/req {row['ivcs'] / r:.4f}"
          f"  RES0/req {row.get('RES0', 0) / r:.3f} RES1/req {row.get('RES1', 0) / r:.3f}"
          f"  CAL0/req {row.get('CAL0', 0) / r:.4f}"
          f"  segs/req {row.get('TcpOutSegs', 0) / r:.2f}"
          f"  delack/req {row.get('TcpExtDelayedACKs', 0) / r:.4f}"
          f"  pureack/req {row.get('TcpExtTCPPureAcks', 0) / r:.3f}", flush=True)
    if row.get("perf"):
        print("           server per request: " + ", ".join(
            f"{k} {v / r:.3f}" for k, v in row["perf"].items() if v), flush=True)
    if "strace" in row:
        print("           strace per request:", row["strace"], flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dur", type=int, default=6)
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--conns", type=int, default=50)
    ap.add_argument("--path", default="/json")
    ap.add_argument("--port", type=int, default=18090)
    ap.add_argument("--server-cpu", type=int, default=0)
    ap.add_argument("--client-cpu", type=int, default=1)
    ap.add_argument("--client", action="append", default=[])
    ap.add_argument("--strace", action="store_true")
    ap.add_argument("--open-file-cache", action="store_true",
                    help="nginx keeps its files open, as shared/bench/compare.sh's does")
    ap.add_argument("--server", choices=["nginx", "builtin", "node"], default="nginx")
    ap.add_argument("--rt", action="store_true",
                    help="run nginx and the clients SCHED_FIFO (chrt -f 10): on a machine busy "
                         "with other work, they preempt it at once")
    args = ap.parse_args()
    clients = [c.split("=", 1) for c in (args.client or DEFAULT_CLIENTS)]
    server = make_server(args)
    try:
        print(f"{server.name} on CPU {args.server_cpu}; clients on CPU {args.client_cpu};"
              f" {args.path}, {args.conns} connections, {args.dur}s runs", flush=True)
        ratios = {name: [] for name, _ in clients[1:]}
        for pair in range(args.pairs):
            rows = []
            order = clients if pair % 2 == 0 else list(reversed(clients))
            for name, command in order:
                rows.append(run_client(name, command, args, server))
                show(rows[-1])
                time.sleep(1)
            by = {r["client"]: r for r in rows}
            base = by[clients[0][0]]["rps"]
            for name in ratios:
                ratios[name].append(by[name]["rps"] / base)
            print(f"pair {pair + 1}: " + ", ".join(f"{n}/{clients[0][0]} {v[-1]:.3f}"
                                                  for n, v in ratios.items()), flush=True)
        for name, values in ratios.items():
            mean = sum(values) / len(values)
            print(f"{name} ÷ {clients[0][0]}, server-counted req/s per pair: "
                  + ", ".join(f"{v:.3f}" for v in values) + f"  (mean {mean:.3f})")
        if args.strace:
            for name, command in clients:
                show(run_client(name, command, args, server, strace=True))
    finally:
        server.close()

if __name__ == "__main__":
    sys.exit(main())
