"""bench/benchlib.py: what every bench/ summarizer needs, written once.

Peers and processes (a peer tool's binary, a command pinned to a core, a free loopback port,
loadmark's built-in target and one fixed-count run of it under GNU time, the port a server says
and the count it says as it stops), files (read text, load JSON, key=value meta files, GNU time's
line), numbers (median, format, ratio), loadmark's result JSON (its summary; percentiles in
either schema: `{"p": 99, "us": 812}` objects since schema 2, `[99.0, 812]` pairs before), its
text report (latency units), and replacing one `## ` section of a RESULTS file while keeping
the rest.

Import from a script in bench/:     from benchlib import med, fmt
or one directory down (bench/ws/):  sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
"""
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import time


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The build the scripts measure: cargo build --release -p loadmark.
# LOADMARK_BIN measures another build (e.g. one made with a faster profile) in its place.
LOADMARK = os.environ.get("LOADMARK_BIN") or os.path.join(ROOT, "target/release/loadmark")
PEERS_BIN = "/opt/peers/bin"


def peer_tool(name):
    """A peer's binary: shared/bench/install-peers.sh's, else the one on PATH, else None."""
    path = os.path.join(PEERS_BIN, name)
    return path if os.access(path, os.X_OK) else shutil.which(name)


def pinned_command(cpu, cmd, timeout, rt=False):
    """`cmd` on CPU `cpu` (taskset), killed after `timeout` s (None: not bounded, for a server
    stopped by its PID), SCHED_FIFO when `rt`."""
    return (["chrt", "-f", "10"] if rt else []) + ["taskset", "-c", str(cpu)] + (
        [] if timeout is None else ["timeout", str(timeout)]) + cmd


def pinned(cpu, cmd, timeout, rt=False, **kw):
    """Runs pinned_command(...) to its end, output captured as text."""
    return subprocess.run(pinned_command(cpu, cmd, timeout, rt), capture_output=True, text=True,
                          **kw)


def free_port():
    """A TCP port free on 127.0.0.1 now (the kernel's pick), for a server started next."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def said_port(line):
    """The port in a server's `... 127.0.0.1:PORT ...` line (loadmark serve's first line,
    bench/servers/count-server.js's), or None."""
    m = re.search(r"127\.0\.0\.1:(\d+)", line or "")
    return int(m.group(1)) if m else None


def served_count(text):
    """N of the `served N requests` a counting server (loadmark serve, count-server.js) says as
    it stops, or None."""
    m = re.search(r"served (\d+) requests", text or "")
    return int(m.group(1)) if m else None


def start_target(binary, cpu, wait=20, extra=()):
    """Starts loadmark's built-in target (`binary serve --port 0 --threads 1 EXTRA...`) pinned
    to CPU `cpu`; returns (process, port) once it has said its port and accepted a connection.
    Exits the script when it says none within `wait` s. Stop it by its PID: terminate(),
    wait()."""
    proc = subprocess.Popen(
        pinned_command(cpu, [binary, "serve", "--port", "0", "--threads", "1"] + list(extra),
                       None),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + wait
    while time.time() < deadline:
        port = said_port(proc.stdout.readline())
        if port is not None:
            with socket.create_connection(("127.0.0.1", port), timeout=5):
                pass
            return proc, port
    proc.kill()
    sys.exit("the built-in target did not say its port")


def counted_run(binary, url, cpu, conns, requests, out, extra=(), rss=True, command="run"):
    """One `binary run URL -c CONNS -t 1 -n REQUESTS -q -o OUT EXTRA...` (or `ws`: sessions
    and messages) pinned to CPU `cpu` under GNU time, bounded to 120 s; exits the script when
    it fails. Returns its req/s, client CPU (user + system, the whole process) µs per
    response, responses and, when `rss`, peak RSS MiB."""
    cmd = ["timeout", "120", "/usr/bin/time", "-f", "%U %S %M" if rss else "%U %S", "taskset",
           "-c", str(cpu), binary, command, url, "-c", str(conns), "-t", "1", "-n",
           str(requests), "-q", "-o", out] + list(extra)
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed: {done.stderr}")
    times = time_fields(done.stderr)
    summary = result_summary(out)
    responses = summary["requests"]["responses"]
    row = {"rps": summary["rps"], "cpu_us": (times[0] + times[1]) * 1e6 / responses,
           "responses": responses}
    if rss:
        row["rss_mib"] = int(times[2]) / 1024
    return row


def read(path, default=None):
    """The text of `path`, or `default` when it cannot be read."""
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return default


def jload(path):
    """The JSON in `path`, or None when it is missing or not JSON."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def time_fields(text):
    """The numbers of GNU time's `-f` line (`%U %S %M`, `%e %U %S %M`, ...): the last line of
    `text`, after the command's own stderr (or alone, in time's `-o` file). ValueError when
    there is no line or it is not all numbers."""
    lines = (text or "").strip().splitlines()
    if not lines:
        raise ValueError("no GNU time line")
    return [float(x) for x in lines[-1].split()]


def meta(path):
    """`KEY=value` lines of a meta.txt as a dict (other lines ignored)."""
    out = {}
    for line in (read(path, "") or "").splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            out[k] = v
    return out


def dig(d, *keys):
    """d[k1][k2]..., or None where a key is missing."""
    for k in keys:
        if not isinstance(d, dict) or k not in d:
            return None
        d = d[k]
    return d


def med(xs):
    """Median of the values that are not None, or None."""
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(x, spec=",.0f", dash="—"):
    """`format(x, spec)`, or `dash` for a missing value."""
    return dash if x is None else format(x, spec)


def ratio(a, b):
    """a / b, or None when either is missing or b is 0."""
    return None if a is None or b is None or b == 0 else a / b


def result_summary(path):
    """`summary` of the loadmark JSON result (`run -o PATH`) in `path`. Raises (OSError,
    ValueError, KeyError) when there is none: a run that wrote no result fails loudly."""
    with open(path) as f:
        return json.load(f)["summary"]


def percentile_us(dist, p):
    """Percentile `p` (0..100) in µs of a loadmark Distribution (summary.latency, ...), or None.
    Reads both schemas: objects {"p", "us"} (2) and [p, us] pairs (1)."""
    if not isinstance(dist, dict):
        return None
    for entry in dist.get("percentiles_us") or []:
        q, v = (entry.get("p"), entry.get("us")) if isinstance(entry, dict) else entry
        if q is not None and abs(q - p) < 1e-9:
            return v
    return None


UNIT_MS = {"µs": 1e-3, "us": 1e-3, "ms": 1.0, "s": 1e3}


def to_ms(s):
    """`812µs`, `1.23ms`, `4.5s` (loadmark's text units) in ms; None otherwise (e.g. `n/a`)."""
    m = re.fullmatch(r"([\d.]+)(µs|us|ms|s)", s)
    return float(m.group(1)) * UNIT_MS[m.group(2)] if m else None


def replace_section(path, heading, section):
    """Writes `section` (starting with `heading`) into the Markdown file `path` in place of the
    section under that heading (up to the next `## `), or appends it; the rest is kept."""
    old = read(path, "") or ""
    i = old.find(heading)
    if i >= 0:
        j = old.find("\n## ", i + len(heading))
        new = old[:i] + section.rstrip("\n") + "\n" + ("\n" + old[j + 1:] if j >= 0 else "")
    else:
        new = (old.rstrip("\n") + "\n\n" if old.strip() else "") + section
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(new)
    os.replace(tmp, path)
