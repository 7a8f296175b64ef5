#!/usr/bin/env python3
"""bench/ws/summarize.py: turn a bench/ws/run output directory into bench/RESULTS-ws.md.

    python3 bench/ws/summarize.py --out /tmp/loadmark-ws-bench-... --results bench/RESULTS-ws.md
    python3 bench/ws/summarize.py --out DIR --print        # to stdout

Reads OUT/meta.txt and OUT/raw/<I>ms/<tool>/rep<N>/ (rc.txt, time.txt, samples.tsv,
server.txt, server_cpu.txt, cpustat.txt, and loadmark's result.json or k6's summary.json).
A section of the existing results file headed "## Observations" is kept as is (hand-written).
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from benchlib import (jload, med, meta, percentile_us, read,  # noqa: E402
                      served_count, time_fields)

HELD = 0.99      # same threshold as loadmark's own finding (report::websocket::HELD_RATE)
TARGET = 0.25    # issue 7: loadmark client CPU per message <= 0.25x k6's
SERVER_BUSY = 0.90


def parse_run(d, tool, m):
    r = {"dir": d, "ok": False}
    rc = (read(os.path.join(d, "rc.txt"), "") or "").strip()
    r["rc"] = int(rc) if rc.lstrip("-").isdigit() else None
    try:
        e, u, s, mx = time_fields(read(os.path.join(d, "time.txt")))
        r.update(wall=e, user=u, sys=s, rss_mb=int(mx) / 1024)
        r["cpu"] = r["user"] + r["sys"]
    except ValueError:
        pass
    dur = float(m.get("DUR", "20"))
    sessions = int(m.get("SESSIONS", "400"))
    if tool == "loadmark":
        j = jload(os.path.join(d, "result.json"))
        if j:
            ws = j["summary"]["websocket"]
            r.update(sent=ws["messages_sent"], recv=ws["messages_received"],
                     sessions_client=ws["sessions_opened"],
                     self_sent_per_s=ws["messages_sent_per_s"],
                     requested=ws.get("requested_send_rate"),
                     p50_ms=percentile_us(j["summary"]["latency"], 50.0) / 1000,
                     p99_ms=percentile_us(j["summary"]["latency"], 99.0) / 1000,
                     lag_p99_ms=percentile_us(j["summary"]["schedule_lag"], 99.0) / 1000,
                     connect_p50_ms=percentile_us(j["summary"]["connect"], 50.0) / 1000,
                     findings=j["run"]["health"]["findings"],
                     saturated=j["run"]["health"]["client_saturated"],
                     self_cpu_us=j["run"]["client_cpu"]["per_request_us"])
    else:
        j = jload(os.path.join(d, "summary.json"))
        if j:
            mt = j["metrics"]
            c = lambda k: (mt.get(k) or {}).get("count")
            r.update(sent=c("ws_msgs_sent"), recv=c("ws_msgs_received"),
                     sessions_client=c("ws_sessions"), script_echoes=c("echoes_received"),
                     connect_p50_ms=(mt.get("ws_connecting") or {}).get("med"))
    # the server: sessions it answered (101s; `served N requests` counts the handshakes) and CPU
    served = served_count(read(os.path.join(d, "server.txt")))
    if served is not None:
        r["server_sessions"] = served - 1   # minus the /status readiness probe
    sc = (read(os.path.join(d, "server_cpu.txt"), "") or "").split()
    if len(sc) == 5 and sc[0] and sc[1]:
        hz = float(sc[4])
        r["server_cpu"] = (int(sc[1]) - int(sc[0])) / hz
        r["server_busy"] = min(1.0, r["server_cpu"] / dur)
    # load phase from the 5 Hz sampler: the client holds >= SESSIONS/2 descriptors (its sessions'
    # sockets; either tool holds fewer than 30 others)
    samples = []
    for line in (read(os.path.join(d, "samples.tsv"), "") or "").splitlines():
        p = line.split("\t")
        if len(p) == 3 and p[1] and p[2]:
            samples.append((float(p[0]), int(p[1]), int(p[2])))
    if samples:
        win = [s for s in samples if s[2] >= max(sessions / 2, 1)]
        if len(win) >= 2 and win[-1][0] > win[0][0]:
            hz = 100.0
            wsec = win[-1][0] - win[0][0]
            wcpu = (win[-1][1] - win[0][1]) / hz
            r.update(window_s=wsec, window_cpu=wcpu, client_busy=wcpu / wsec)
            r["init_s"] = win[0][0] - samples[0][0]
    # noise: hypervisor steal on both cores, foreign busy time on the client core
    cs = (read(os.path.join(d, "cpustat.txt"), "") or "").split()
    if len(cs) == 8 and "cpu" in r:
        v = list(map(int, cs))
        hz = 100.0
        steal = ((v[5] - v[1]) + (v[7] - v[3])) / hz
        other = (v[6] - v[2]) / hz - r["cpu"]
        r.update(steal=steal, other=other)
        why = []
        if steal > float(m.get("STEAL_MAX", 0.25)) * r["wall"]:
            why.append(f"steal {steal:.2f}s")
        if other > float(m.get("OTHER_MAX", 0.10)) * r["wall"]:
            why.append(f"other load on the client core {other:.2f}s")
        r["noisy"] = ", ".join(why)
    if r.get("sent") is not None and r.get("recv") is not None and "cpu" in r and r["rc"] == 0:
        r["ok"] = True
        r["sent_s"] = r["sent"] / dur
        r["recv_s"] = r["recv"] / dur
        r["us_recv"] = r["cpu"] / r["recv"] * 1e6 if r["recv"] else None
        r["us_sent"] = r["cpu"] / r["sent"] * 1e6 if r["sent"] else None
        if "client_busy" in r and r["recv"]:
            r["us_recv_load"] = r["client_busy"] * dur / r["recv"] * 1e6
    return r


def f(x, nd=1, unit=""):
    if x is None:
        return "–"
    if isinstance(x, float) and abs(x) >= 1000:
        return f"{x:,.0f}{unit}"
    return f"{x:,.{nd}f}{unit}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--results")
    ap.add_argument("--command", default="bench/ws/run")
    ap.add_argument("--print", action="store_true")
    a = ap.parse_args()
    m = meta(os.path.join(a.out, "meta.txt"))
    dur = float(m.get("DUR", "20"))
    sessions = int(m.get("SESSIONS", "400"))
    intervals = m.get("INTERVALS", "1 5 100").split()
    tools = m.get("TOOLS", "loadmark k6").split()
    reps = int(m.get("REPS", "3"))

    runs = {}
    for iv in intervals:
        for tool in tools:
            lst = []
            for rep in range(1, reps + 1):
                d = os.path.join(a.out, "raw", f"{iv}ms", tool, f"rep{rep}")
                if os.path.isdir(d):
                    r = parse_run(d, tool, m)
                    r["rep"] = rep
                    lst.append(r)
            runs[(iv, tool)] = lst

    L = []
    w = L.append
    w("# WebSocket echo: loadmark ws beside k6 (issue 7)")
    w("")
    w(f"Generated by `bench/ws/run` (see [`bench/ws/README.md`](ws/README.md)); raw output `{a.out}`.")
    w("")
    w(f"- **Date** {m.get('date', '?')}; load average before {m.get('load_before', '?')}, after {m.get('load_after', '?')}")
    w(f"- **Machine** {m.get('cpu', '?')}, {m.get('cores', '?')} cores (shared VM), kernel {m.get('kernel', '?')}, {m.get('os', '?')}")
    w(f"- **Versions** loadmark {m.get('loadmark', '?')}; {m.get('k6', 'k6 not measured')}")
    w(f"- **Command** `{a.command}`")
    w(f"- **Workload** {sessions} sessions of {m.get('SESSION_DUR')} s (each replaced when it ends), each sending a random "
      f"{m.get('PAYLOAD')} B text message every I ms, for {m.get('DUR')} s, against `loadmark serve --threads 1` `/ws/echo` "
      f"pinned to CPU {m.get('SERVER_CPU')}; the client pinned to CPU {m.get('CLIENT_CPU')} (`GOMAXPROCS=1`, loadmark `-t 1`). "
      f"Requested send rate = sessions / I. {reps} repetitions per tool and interval, interleaved (A/B/A/B); medians below.")
    w("")
    w("Columns: **sent/s, recv/s** = the tool's own message counts ÷ the scheduled duration (k6: `ws_msgs_sent`, "
      "`ws_msgs_received`; loadmark: `summary.websocket`). **held** = sent/s ÷ requested rate (held when ≥ 99%, "
      "loadmark's own threshold). **srv sess** = sessions the server answered with 101 (its own count). "
      "**srv busy** = server CPU ÷ duration. **CPU s** = client user+sys (GNU time, whole process). "
      "**µs/echo** = client CPU ÷ echoes received (whole process, including k6's start-up); **µs/echo load** = the "
      "same over the load phase only (CPU rate while the client held its sessions × duration ÷ echoes), which leaves "
      "out k6's VU initialisation; **µs/sent** = CPU ÷ messages sent. **busy** = client core share during the load "
      "phase. **RSS** = peak resident set. **RTT p50/p99** = loadmark's round trip from each message's intended send "
      "time (k6 reports no per-message round trip).")
    w("")
    w("## Medians per tool and interval")
    w("")
    w("| interval | requested/s | tool | sent/s | recv/s | held | srv sess | srv busy | CPU s | µs/echo | µs/echo load | µs/sent | busy | RSS MB | RTT p50 / p99 ms | ok runs |")
    w("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    medians = {}
    for iv in intervals:
        req = sessions * 1000.0 / float(iv)
        for tool in tools:
            ok = [r for r in runs[(iv, tool)] if r["ok"]]
            md = {k: med(r.get(k) for r in ok) for k in ("sent_s", "recv_s", "server_sessions", "server_busy", "cpu", "us_recv",
                                           "us_recv_load", "us_sent", "client_busy", "rss_mb", "p50_ms", "p99_ms",
                                           "lag_p99_ms", "init_s", "sessions_client")}
            medians[(iv, tool)] = md
            held = md["sent_s"] / req if md["sent_s"] is not None else None
            md["held"] = held
            rtt = f"{f(md['p50_ms'], 2)} / {f(md['p99_ms'], 2)}" if tool == "loadmark" else "–"
            w(f"| {iv} ms | {req:,.0f} | {tool} | {f(md['sent_s'], 0)} | {f(md['recv_s'], 0)} | "
              f"{f(held * 100 if held is not None else None, 1, '%')}{'' if held is None else (' ✓' if held >= HELD else ' ✗')} | "
              f"{f(md['server_sessions'], 0)} | {f(md['server_busy'] * 100 if md['server_busy'] is not None else None, 0, '%')} | "
              f"{f(md['cpu'], 2)} | {f(md['us_recv'], 2)} | {f(md['us_recv_load'], 2)} | {f(md['us_sent'], 2)} | "
              f"{f(md['client_busy'] * 100 if md['client_busy'] is not None else None, 0, '%')} | {f(md['rss_mb'], 0)} | {rtt} | "
              f"{len(ok)}/{len(runs[(iv, tool)])} |")
    w("")

    if "loadmark" in tools and "k6" in tools:
        w("## Ratios loadmark / k6 (same run)")
        w("")
        w(f"Ratio of the medians above; in brackets the range of the per-repetition ratios (rep N of loadmark ÷ rep N of k6, "
          f"measured back to back). Target (issue 7): loadmark's client CPU per message ≤ {TARGET}× k6's.")
        w("")
        w("| interval | µs/echo (whole process) | µs/echo (load phase) | µs/sent | recv/s | peak RSS | target ≤ 0.25× |")
        w("|---|---|---|---|---|---|---|")
        for iv in intervals:
            a_, b_ = medians[(iv, "loadmark")], medians[(iv, "k6")]
            la = {r["rep"]: r for r in runs[(iv, "loadmark")] if r["ok"]}
            kb = {r["rep"]: r for r in runs[(iv, "k6")] if r["ok"]}
            cells = []
            verdict = []
            for k in ("us_recv", "us_recv_load", "us_sent", "recv_s", "rss_mb"):
                if a_.get(k) is None or not b_.get(k):
                    cells.append("–")
                    continue
                ratio = a_[k] / b_[k]
                pr = [la[i][k] / kb[i][k] for i in la if i in kb and la[i].get(k) is not None and kb[i].get(k)]
                rr = f" [{min(pr):.3f}–{max(pr):.3f}]" if pr else ""
                cells.append(f"{ratio:.3f}×{rr}")
                if k in ("us_recv", "us_recv_load", "us_sent"):
                    verdict.append(ratio <= TARGET)
            v = "–" if not verdict else ("**met**" if all(verdict) else ("met on some measures" if any(verdict) else "**not met**"))
            w(f"| {iv} ms | " + " | ".join(cells) + f" | {v} |")
        w("")

    w("## Send rate held, and who was the limit")
    w("")
    for iv in intervals:
        req = sessions * 1000.0 / float(iv)
        for tool in tools:
            md = medians[(iv, tool)]
            if md["sent_s"] is None:
                continue
            held = md["held"]
            srv = md["server_busy"] or 0
            cli = md["client_busy"] or 0
            limit = []
            if srv >= SERVER_BUSY:
                limit.append(f"the server's core was busy {srv*100:.0f}% (server-bound)")
            if cli >= SERVER_BUSY:
                limit.append(f"the client's core was busy {cli*100:.0f}% (client-bound)")
            s = (f"- **{iv} ms, {tool}**: sent {md['sent_s']:,.0f}/s of {req:,.0f}/s requested ({held*100:.1f}%, "
                 f"{'held' if held >= HELD else 'NOT held'}); received {md['recv_s']:,.0f}/s. "
                 + ("; ".join(limit) + "." if limit else f"Neither core was saturated (server {srv*100:.0f}%, client {cli*100:.0f}%)."))
            if tool == "loadmark":
                fnd = [r.get("findings") or [] for r in runs[(iv, tool)] if r["ok"]]
                said = sum(1 for x in fnd if any("send rate was not held" in y for y in x))
                sat = sum(1 for r in runs[(iv, tool)] if r["ok"] and r.get("saturated"))
                s += (f" loadmark's report said \"send rate was not held\" in {said} of {len(fnd)} runs"
                      f" and \"client saturated\" in {sat}; schedule lag p99 {f(md['lag_p99_ms'], 2)} ms.")
            if tool == "k6" and md.get("init_s") is not None:
                s += f" k6 spent {md['init_s']:.1f} s starting ({m.get('SESSIONS')} VUs) before its first sessions opened."
            w(s)
    w("")

    w("## Every run")
    w("")
    w("| interval | tool | rep | rc | wall s | CPU s | sent | recv | srv sess | client sess | srv busy | load-phase s | µs/echo | RSS MB | steal s | other s | noisy | loadmark findings / k6 script echoes |")
    w("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    noisy = []
    for iv in intervals:
        for tool in tools:
            for r in runs[(iv, tool)]:
                extra = ""
                if tool == "loadmark":
                    extra = "; ".join(x.split(":")[0] for x in (r.get("findings") or [])) or "none"
                elif r.get("script_echoes") is not None:
                    extra = f"{r['script_echoes']:,} (sessions that ended on their own timer)"
                if r.get("noisy"):
                    noisy.append(f"{iv} ms {tool} rep {r['rep']}: {r['noisy']}")
                w(f"| {iv} ms | {tool} | {r['rep']} | {r.get('rc')} | {f(r.get('wall'), 2)} | {f(r.get('cpu'), 2)} | "
                  f"{f(r.get('sent'), 0)} | {f(r.get('recv'), 0)} | {f(r.get('server_sessions'), 0)} | {f(r.get('sessions_client'), 0)} | "
                  f"{f(r['server_busy'] * 100 if r.get('server_busy') is not None else None, 0, '%')} | {f(r.get('window_s'), 1)} | "
                  f"{f(r.get('us_recv'), 2)} | {f(r.get('rss_mb'), 0)} | {f(r.get('steal'), 2)} | {f(r.get('other'), 2)} | "
                  f"{r.get('noisy') or ''} | {extra} |")
    w("")
    w("## Noise and failures")
    w("")
    bad = [f"{iv} ms {t} rep {r['rep']} (rc {r.get('rc')}, {r['dir']})" for (iv, t), lst in runs.items() for r in lst if not r["ok"]]
    w("- Failed or unparsed runs (left out of the medians): " + (", ".join(bad) if bad else "none."))
    w("- Runs flagged noisy (hypervisor steal > STEAL_MAX of wall time, or other work on the client core > OTHER_MAX; kept in the medians): "
      + ("; ".join(noisy) if noisy else "none."))
    w("")

    text = "\n".join(L) + "\n"
    if a.results and os.path.exists(a.results):
        old = read(a.results, "")
        i = old.find("\n## Observations")
        if i >= 0:
            text += old[i:] if old[i:].endswith("\n") else old[i:] + "\n"
    if a.print or not a.results:
        sys.stdout.write(text)
    if a.results:
        with open(a.results + ".tmp", "w") as fh:
            fh.write(text)
        os.replace(a.results + ".tmp", a.results)


if __name__ == "__main__":
    main()
