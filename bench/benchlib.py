"""bench/benchlib.py: what every bench/ summarizer needs, written once.

Peers and processes (a peer tool's binary, a command pinned to a core, a free loopback port),
files (read text, load JSON, key=value meta files), numbers (median, format, ratio), loadmark's
result JSON (percentiles in either schema: `{"p": 99, "us": 812}` objects since schema 2,
`[99.0, 812]` pairs before), its text report (latency units), and replacing one `## ` section
of a RESULTS file while keeping the rest.

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


PEERS_BIN = "/opt/peers/bin"


def peer_tool(name):
    """A peer's binary: shared/bench/install-peers.sh's, else the one on PATH, else None."""
    path = os.path.join(PEERS_BIN, name)
    return path if os.access(path, os.X_OK) else shutil.which(name)


def pinned_command(cpu, cmd, timeout, rt=False):
    """`cmd` on CPU `cpu` (taskset), killed after `timeout` s, SCHED_FIFO when `rt`."""
    return (["chrt", "-f", "10"] if rt else []) + [
        "taskset", "-c", str(cpu), "timeout", str(timeout)] + cmd


def pinned(cpu, cmd, timeout, rt=False, **kw):
    """Runs pinned_command(...) to its end, output captured as text."""
    return subprocess.run(pinned_command(cpu, cmd, timeout, rt), capture_output=True, text=True,
                          **kw)


def free_port():
    """A TCP port free on 127.0.0.1 now (the kernel's pick), for a server started next."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
