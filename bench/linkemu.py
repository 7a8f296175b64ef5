#!/usr/bin/env python3
"""bench/linkemu.py — netem's fixed delay and random loss between two network namespaces, in
userspace, for kernels built without netem (CONFIG_NET_SCH_NETEM off, as on this project's VMs).

  linkemu.py link --side NS_A:DEV_A --side NS_B:DEV_B --delay-ms 10 --loss 1 [--cpu 0]
                  [--probe ADDR_B:ADDR_A] [--stats FILE]
  linkemu.py limits [--rates 5000,20000,...] [--delay-ms 10] [--cpu 0] [--seconds 4]

How: each namespace gets a persistent TUN device (`ip -n NS tuntap add dev DEV mode tun`, an
address, up), and nothing else joins them. `link` opens both devices (entering each namespace
with setns(2) through ctypes, since this Python has no os.setns), reads every IP packet one
side sends, drops it with probability LOSS% (each way, at arrival, as netem drops on enqueue),
and writes the rest to the other side DELAY ms after it read them. The delay is the same for
every packet, so each direction is a FIFO whose head is always the next due packet: a deque,
no heap. The loop sleeps in select(2) until the next due time (microsecond timeouts; the
thread's timer slack is set to 1 ns so the kernel does not round the wake-up up by 50 µs).

What it measures about itself (written as JSON to --stats when it gets SIGTERM or SIGINT):
packets and bytes carried and dropped each way, packets/s, its CPU per packet, and how late
each packet left against its due time (p50/p99/max µs; the added delay is DELAY plus that). A
packet also waits in the TUN device's queue before this loop reads it, which that figure does
not see, so --probe sends a UDP probe every 50 ms from a socket in B's namespace to an echo
socket in A's (both opened by this process, so their packets cross the link like any other)
and records the round trip: 2 x DELAY plus everything the link and the two kernels add.

`limits` builds its own pair of namespaces, runs `link` with no loss, and sends UDP datagrams
of 1,200 bytes from one namespace to the other at each offered rate for SECONDS: the rate the
link carries, its lateness and its CPU at each. Needs root. Python stdlib only.
"""
import argparse
import collections
import ctypes
import fcntl
import json
import os
import random
import select
import signal
import socket
import struct
import subprocess
import sys
import time

TUNSETIFF = 0x400454CA
IFF_TUN, IFF_NO_PI = 0x0001, 0x1000
CLONE_NEWNET = 0x40000000
PR_SET_TIMERSLACK = 29
PROBE_PORT = 7
LATE_BINS = 200_000  # 1 µs bins up to 200 ms; later packets go to the last bin (and max)

libc = ctypes.CDLL(None, use_errno=True)


def setns(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"setns({path}): {os.strerror(err)}")
    finally:
        os.close(fd)


class InNamespace:
    """Runs a block inside a named network namespace (sockets and TUN devices opened there stay
    there) and comes back to the namespace the process started in."""

    def __init__(self, ns):
        self.ns = ns

    def __enter__(self):
        self.home = os.open("/proc/self/ns/net", os.O_RDONLY)
        setns(f"/run/netns/{self.ns}")

    def __exit__(self, *exc):
        if libc.setns(self.home, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), "setns back to the starting namespace")
        os.close(self.home)


def open_tun(ns, dev):
    with InNamespace(ns):
        fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
        fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", dev.encode(), IFF_TUN | IFF_NO_PI))
    return fd


def make_tun_pair(sides, prefix=24):
    """sides: [(ns, dev, addr), (ns, dev, addr)]. Creates the namespaces (deleting any of the
    same names first) and a persistent TUN device with its address in each."""
    for ns, _, _ in sides:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
    for ns, dev, addr in sides:
        for cmd in (["ip", "netns", "add", ns],
                    ["ip", "-n", ns, "tuntap", "add", "dev", dev, "mode", "tun"],
                    ["ip", "-n", ns, "addr", "add", f"{addr}/{prefix}", "dev", dev],
                    ["ip", "-n", ns, "link", "set", dev, "up"],
                    ["ip", "-n", ns, "link", "set", "lo", "up"]):
            done = subprocess.run(cmd, capture_output=True, text=True)
            if done.returncode != 0:
                sys.exit(f"{' '.join(cmd)} failed: {done.stderr.strip()}")


def tun_drops(ns, dev):
    """Packets the kernel dropped because the TUN device's queue was full (this loop read too
    slowly): its tx_dropped counter."""
    out = subprocess.run(["ip", "-n", ns, "-s", "-j", "link", "show", dev],
                         capture_output=True, text=True).stdout
    try:
        return json.loads(out)[0]["stats64"]["tx"]["dropped"]
    except (ValueError, LookupError):
        return None


def percentile(bins, q, overflow_max):
    """The q-th percentile of a 1 µs histogram (list of counts)."""
    total = sum(bins)
    if total == 0:
        return None
    rank, seen = q / 100 * total, 0
    for us, n in enumerate(bins):
        seen += n
        if seen >= rank and n:
            return us if us < len(bins) - 1 else overflow_max
    return overflow_max


class Stop(Exception):
    pass


def on_signal(*_):
    raise Stop()


def run_link(args):
    (ns_a, dev_a), (ns_b, dev_b) = [s.split(":") for s in args.side]
    if args.cpu is not None:
        os.sched_setaffinity(0, {args.cpu})
    if args.rt:
        # Real-time priority: on a shared CPU the link wakes when a packet is due, not when the
        # scheduler next gets round to it. It sleeps in select(2) between packets, and the
        # kernel's RT throttling (sched_rt_runtime_us) still bounds it if it ever spun.
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(args.rt))
    libc.prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0)
    a, b = open_tun(ns_a, dev_a), open_tun(ns_b, dev_b)
    other = {a: b, b: a}
    names = {a: f"{ns_a}->{ns_b}", b: f"{ns_b}->{ns_a}"}
    queue = {a: collections.deque(), b: collections.deque()}
    carried = {a: 0, b: 0}
    dropped = {a: 0, b: 0}
    carried_bytes = {a: 0, b: 0}
    write_errors = 0
    late = [0] * LATE_BINS
    late_max = 0
    delay, loss = args.delay_ms / 1000, args.loss / 100
    rand = random.random
    now = time.monotonic

    probe_tx = probe_echo = None
    rtts, probe_sent, next_probe = [], 0, float("inf")
    if args.probe:
        addr_b, addr_a = args.probe.split(":")
        with InNamespace(ns_a):
            probe_echo = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            probe_echo.bind((addr_a, PROBE_PORT))
        with InNamespace(ns_b):
            probe_tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            probe_tx.bind((addr_b, 0))
        probe_tx.setblocking(False)
        probe_echo.setblocking(False)
        next_probe = now() + 0.05
    readers = [a, b] + ([probe_tx, probe_echo] if probe_tx else [])

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    # The devices' drop counters run for their whole life (packets sent while no link was
    # attached count too): this run's share is the difference.
    qdrops0 = {(ns_a, dev_a): tun_drops(ns_a, dev_a), (ns_b, dev_b): tun_drops(ns_b, dev_b)}
    cpu0, t0 = os.times(), now()
    print("ready", flush=True)
    try:
        while True:
            t = now()
            for src in (a, b):
                q, dst = queue[src], other[src]
                while q and q[0][0] <= t:
                    due, pkt = q.popleft()
                    try:
                        os.write(dst, pkt)
                    except OSError:
                        write_errors += 1
                        continue
                    t = now()
                    us = int((t - due) * 1e6)
                    late[min(us, LATE_BINS - 1)] += 1
                    late_max = max(late_max, us)
            if t >= next_probe:
                probe_tx.sendto(struct.pack("!Id", probe_sent, t), (addr_a, PROBE_PORT))
                probe_sent += 1
                next_probe += 0.05
            heads = [queue[s][0][0] for s in (a, b) if queue[s]] + [next_probe]
            timeout = max(0.0, min(heads) - now()) if heads else 1.0
            ready, _, _ = select.select(readers, [], [], min(timeout, 1.0))
            for fd in ready:
                if fd is probe_echo:
                    data, peer = probe_echo.recvfrom(64)
                    probe_echo.sendto(data, peer)
                    continue
                if fd is probe_tx:
                    data = probe_tx.recv(64)
                    rtts.append(now() - struct.unpack("!Id", data)[1])
                    continue
                q = queue[fd]
                # A bounded batch per wake-up, so one busy direction cannot starve the other.
                for _ in range(64):
                    try:
                        pkt = os.read(fd, 65536)
                    except BlockingIOError:
                        break
                    if loss and rand() < loss:
                        dropped[fd] += 1
                        continue
                    q.append((now() + delay, pkt))
                    carried[fd] += 1
                    carried_bytes[fd] += len(pkt)
    except Stop:
        pass
    wall = now() - t0
    cpu1 = os.times()
    cpu = (cpu1.user - cpu0.user) + (cpu1.system - cpu0.system)
    packets = sum(carried.values())
    rtts.sort()
    stats = {
        "delay_ms": args.delay_ms, "loss_pct": args.loss, "cpu": args.cpu, "rt": args.rt,
        "seconds": round(wall, 3),
        "carried": {names[s]: carried[s] for s in (a, b)},
        "carried_bytes": {names[s]: carried_bytes[s] for s in (a, b)},
        "dropped_at_random": {names[s]: dropped[s] for s in (a, b)},
        "write_errors": write_errors,
        "packets_per_s": round(packets / wall, 1) if wall else 0,
        "cpu_s": round(cpu, 3), "cpu_share": round(cpu / wall, 3) if wall else 0,
        "cpu_us_per_packet": round(cpu * 1e6 / packets, 2) if packets else None,
        "late_us": {"p50": percentile(late, 50, late_max), "p99": percentile(late, 99, late_max),
                    "p999": percentile(late, 99.9, late_max), "max": late_max},
        "tun_queue_drops": {f"{ns}:{dev}": (tun_drops(ns, dev) or 0) - (before or 0)
                            for (ns, dev), before in qdrops0.items()},
        "probe": {"sent": probe_sent, "answered": len(rtts),
                  "rtt_ms_p50": round(rtts[len(rtts) // 2] * 1e3, 3) if rtts else None,
                  "rtt_ms_p99": round(rtts[min(len(rtts) - 1, int(len(rtts) * 0.99))] * 1e3, 3)
                  if rtts else None,
                  "rtt_ms_max": round(rtts[-1] * 1e3, 3) if rtts else None},
    }
    text = json.dumps(stats, indent=1)
    if args.stats:
        with open(args.stats, "w") as f:
            f.write(text + "\n")
    else:
        print(text)


def start_link(sides, delay_ms, loss, cpu, stats, probe=None, rt=0):
    """Starts `link` between sides [(ns, dev), (ns, dev)] and waits until both devices are
    open; stop it with stop_link."""
    cmd = [sys.executable, os.path.abspath(__file__), "link", "--delay-ms", str(delay_ms),
           "--loss", str(loss), "--stats", stats]
    for ns, dev in sides:
        cmd += ["--side", f"{ns}:{dev}"]
    if cpu is not None:
        cmd += ["--cpu", str(cpu)]
    if probe:
        cmd += ["--probe", probe]
    if rt:
        cmd += ["--rt", str(rt)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if line.strip() != "ready":
        proc.kill()
        sys.exit(f"the link emulator did not start: {' '.join(cmd)}")
    return proc


def stop_link(proc, stats):
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=10)
    with open(stats) as f:
        return json.load(f)


def run_blast(args):
    """Sends SIZE-byte UDP datagrams to TO at RATE per second for SECONDS (paced per ms)."""
    host, port = args.to.split(":")
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    payload = b"x" * args.size
    t0 = time.monotonic()
    sent = 0
    while True:
        el = time.monotonic() - t0
        if el >= args.seconds:
            break
        want = int(el * args.rate)
        while sent < want:
            try:
                s.sendto(payload, (host, int(port)))
            except OSError:
                pass
            sent += 1
        time.sleep(0.0005)
    print(json.dumps({"sent": sent, "seconds": time.monotonic() - t0}))


def run_sink(args):
    host, port = args.bind.split(":")
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    s.bind((host, int(port)))
    s.settimeout(1.0)
    print("ready", flush=True)
    got, first, last = 0, None, None
    deadline = time.monotonic() + args.seconds
    while time.monotonic() < deadline:
        try:
            s.recv(65536)
        except socket.timeout:
            if got:
                break
            continue
        last = time.monotonic()
        first = first or last
        got += 1
    print(json.dumps({"received": got, "span": (last - first) if got > 1 else 0}))


def run_limits(args):
    """The link's own limits: datagrams/s it carries at each offered rate, how late they
    leave, its CPU. One direction (B to A), no loss."""
    if os.geteuid() != 0:
        sys.exit("limits needs root (network namespaces, TUN devices)")
    ns_a, ns_b = "lmemu-a", "lmemu-b"
    make_tun_pair([(ns_a, "lmemua", "10.214.0.1"), (ns_b, "lmemub", "10.214.0.2")])
    me = [sys.executable, os.path.abspath(__file__)]
    other_cpu = str(1 - args.cpu) if args.cpu in (0, 1) else "0"
    print(f"link on CPU {args.cpu} ({f'SCHED_FIFO {args.rt}' if args.rt else 'SCHED_OTHER'}), sender and receiver on CPU {other_cpu}; delay "
          f"{args.delay_ms} ms, no loss, {args.size}-byte UDP datagrams, {args.seconds} s each")
    print()
    print("| offered /s | sent /s | received /s | carried | lost in the TUN queue | "
          "late p50 µs | late p99 µs | late max µs | link CPU share | CPU µs/packet |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    link = None
    try:
        for rate in [int(r) for r in args.rates.split(",")]:
            stats_file = f"/tmp/linkemu-limits-{os.getpid()}.json"
            link = start_link([(ns_a, "lmemua"), (ns_b, "lmemub")], args.delay_ms, 0,
                              args.cpu, stats_file, rt=args.rt)
            sink = subprocess.Popen(["ip", "netns", "exec", ns_a, "taskset", "-c", other_cpu]
                                    + me + ["sink", "--bind", "10.214.0.1:9000", "--seconds",
                                            str(args.seconds + 5)],
                                    stdout=subprocess.PIPE, text=True)
            sink.stdout.readline()
            blast = subprocess.run(["ip", "netns", "exec", ns_b, "timeout", "60", "taskset",
                                    "-c", other_cpu] + me
                                   + ["blast", "--to", "10.214.0.1:9000", "--rate", str(rate),
                                      "--seconds", str(args.seconds), "--size", str(args.size)],
                                   capture_output=True, text=True)
            sent = json.loads(blast.stdout)
            got = json.loads(sink.communicate(timeout=30)[0])
            st = stop_link(link, stats_file)
            link = None
            carried = sum(st["carried"].values())
            qdrops = sum(v or 0 for v in st["tun_queue_drops"].values())
            # Each rate over its own span: a sender that falls behind runs past SECONDS.
            print(f"| {rate:,} | {sent['sent'] / sent['seconds']:,.0f} | "
                  f"{got['received'] / max(got['span'], 1e-9):,.0f} | {carried:,} | "
                  f"{qdrops:,} | {st['late_us']['p50']} | {st['late_us']['p99']} | "
                  f"{st['late_us']['max']:,} | {st['cpu_share']:.2f} | "
                  f"{st['cpu_us_per_packet']} |", flush=True)
    finally:
        if link is not None:
            link.kill()
            link.wait(timeout=10)
        for ns in (ns_a, ns_b):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    link = sub.add_parser("link")
    link.add_argument("--side", action="append", required=True, help="NS:DEV, twice")
    link.add_argument("--delay-ms", type=float, default=10)
    link.add_argument("--loss", type=float, default=0, help="percent, each way")
    link.add_argument("--cpu", type=int)
    link.add_argument("--probe", help="ADDR_B:ADDR_A, a UDP echo every 50 ms from B to A")
    link.add_argument("--stats")
    link.add_argument("--rt", type=int, default=0,
                      help="SCHED_FIFO priority (1-99; 0: the normal scheduler)")
    lim = sub.add_parser("limits")
    lim.add_argument("--rates", default="5000,20000,40000,60000,80000")
    lim.add_argument("--delay-ms", type=float, default=10)
    lim.add_argument("--cpu", type=int, default=0)
    lim.add_argument("--seconds", type=int, default=4)
    lim.add_argument("--size", type=int, default=1200)
    lim.add_argument("--rt", type=int, default=0)
    blast = sub.add_parser("blast")
    blast.add_argument("--to", required=True)
    blast.add_argument("--rate", type=int, required=True)
    blast.add_argument("--seconds", type=float, required=True)
    blast.add_argument("--size", type=int, default=1200)
    sink = sub.add_parser("sink")
    sink.add_argument("--bind", required=True)
    sink.add_argument("--seconds", type=float, required=True)
    args = ap.parse_args()
    if args.cmd == "link":
        if len(args.side) != 2:
            sys.exit("link needs --side NS:DEV twice")
        run_link(args)
    else:
        {"limits": run_limits, "blast": run_blast, "sink": run_sink}[args.cmd](args)


if __name__ == "__main__":
    main()
