#!/usr/bin/env python3
"""Summarize a bench/rate output directory into the RESULTS.md section
"Open loop: highest constant rate held (issue 4)" (replacing that section if present,
keeping everything else).

Usage: rate_summary.py --out DIR --results FILE [--command CMD] [--print]
"""
import argparse, os, re

from benchlib import (dig, fmt as _fmt, jload, med, meta as read_meta, percentile_us, read,
                      replace_section, time_fields)


def fmt(v, spec=",.0f", none="–"):
    return _fmt(v, spec, none)


SECTION = "## Open loop: highest constant rate held (issue 4)"


def loadmark_self(dir_):
    r = jload(os.path.join(dir_, "result.json"))
    if r is None:
        return {}
    s = r.get("summary", r)
    v = percentile_us(s.get("schedule_lag"), 99.0)
    p99 = None if v is None else f"{v / 1000:.2f} ms"
    h = dig(r, "run", "health")
    if isinstance(h, dict):
        flags = [k for k in ("client_saturated", "overloaded") if h.get(k)]
        health = ",".join(flags) if flags else "ok"
        if h.get("findings"):
            health += f" ({len(h['findings'])} findings)"
    else:
        health = h
    return {"self_rps": s.get("rps"), "self_count": dig(s, "requests", "responses"),
            "dropped": s.get("dropped"), "lag_p99": p99, "health": health}


def vegeta_self(dir_):
    r = jload(os.path.join(dir_, "report.json"))
    if r is None:
        return {}
    codes = r.get("status_codes") or {}
    errs = sum(v for k, v in codes.items() if not str(k).startswith("2"))
    return {"self_rps": r.get("rate"), "self_count": r.get("requests"), "dropped": None,
            "errors": errs, "health": f"success {r.get('success', 0):.4f}" if r.get("success") is not None else None}


def k6_self(dir_):
    r = jload(os.path.join(dir_, "summary.json"))
    if r is None:
        return {}
    m = r.get("metrics", {})
    cnt = dig(m, "http_reqs", "count")
    rate = dig(m, "http_reqs", "rate")
    dropped = dig(m, "dropped_iterations", "count") or 0
    failed = dig(m, "http_req_failed", "passes")  # passes = failed requests in k6's rate metric
    return {"self_rps": rate, "self_count": cnt, "dropped": dropped, "errors": failed}


SELF = {"loadmark": loadmark_self, "vegeta": vegeta_self, "k6": k6_self}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--results", required=True)
    ap.add_argument("--command", default="bench/rate")
    ap.add_argument("--print", action="store_true")
    a = ap.parse_args()
    out = a.out
    meta = read_meta(os.path.join(out, "meta.txt"))
    knobs = dict(re.findall(r'(\w+)=("[^"]*"|\S+)', meta.get("knobs", "")))
    dur = float(knobs.get("DUR", "5"))
    tol = float(knobs.get("TOL", "0.01"))
    reps_wanted = int(knobs.get("REPS", "2"))
    versions = [l.split("\t", 1) for l in (read(os.path.join(out, "versions.tsv"), "") or "").splitlines() if "\t" in l]
    tools = [t for t in ("loadmark", "vegeta", "k6") if t in meta.get("tools_run", "").split()]
    hz = os.sysconf("SC_CLK_TCK")

    raw = os.path.join(out, "raw")
    rates = sorted(int(d) for d in os.listdir(raw) if d.isdigit()) if os.path.isdir(raw) else []
    runs = {}  # (rate, tool) -> [run dicts]
    noisy_reruns = []
    for rate in rates:
        for tool in tools:
            tdir = os.path.join(raw, str(rate), tool)
            if not os.path.isdir(tdir):
                continue
            for rep in sorted(os.listdir(tdir)):
                d = os.path.join(tdir, rep)
                if ".noisy" in rep:
                    noisy_reruns.append(f"{rate:,} {tool} {rep}: " + (read(os.path.join(d, "noisy.txt"), "") or "").strip())
                    continue
                srv = (read(os.path.join(d, "server.txt"), "") or "").split()
                try:
                    tm = time_fields(read(os.path.join(d, "time.txt")))  # %e %U %S %M
                except ValueError:
                    tm = []
                if len(srv) < 8:
                    continue
                run = {"rep": rep, "rc": int((read(os.path.join(d, "rc.txt"), "1") or "1").strip() or 1)}
                run["srv_req"] = int(srv[3]) - int(srv[1]) - 1
                run["achieved"] = run["srv_req"] / dur
                run["conns"] = int(srv[2]) - int(srv[0])
                run["window"] = float(srv[7]) - float(srv[6])
                run["nginx_cpu"] = (float(srv[5]) - float(srv[4])) / hz
                if len(tm) >= 4:
                    run["wall"] = tm[0]; run["cpu"] = tm[1] + tm[2]
                    run["rss_mib"] = int(tm[3]) / 1024
                    run["us_per_req"] = run["cpu"] / run["srv_req"] * 1e6 if run["srv_req"] > 0 else None
                    run["cli_util"] = run["cpu"] / run["wall"] if run["wall"] > 0 else None
                cs = (read(os.path.join(d, "cpustat.txt"), "") or "").split()
                if len(cs) == 8:
                    v = [int(x) for x in cs]
                    run["steal"] = ((v[5] - v[1]) + (v[7] - v[3])) / hz
                    run["cli_other"] = (v[6] - v[2]) / hz - run.get("cpu", 0)
                run.update(SELF[tool](d))
                nz = read(os.path.join(d, "noisy.txt"))
                run["noise"] = ("**NOISY** " + nz.strip().replace("noisy: ", "")) if nz else "clean"
                runs.setdefault((rate, tool), []).append(run)

    cell = {}
    for (rate, tool), rs in runs.items():
        ok = [r for r in rs if r["rc"] == 0] or rs
        ach = med([r["achieved"] for r in ok])
        held = ach is not None and abs(ach / rate - 1) <= tol
        cell[(rate, tool)] = {"achieved": ach, "held": held, "us": med([r.get("us_per_req") for r in ok]),
                              "n": len(rs), "nrc0": len([r for r in rs if r["rc"] == 0]),
                              "reps_held": sum(1 for r in rs if abs(r["achieved"] / rate - 1) <= tol),
                              "util": med([r.get("cli_util") for r in ok]),
                              "nginx_util": med([r["nginx_cpu"] / r["window"] for r in ok if r["window"] > 0])}
    best = {}
    for tool in tools:
        h = [rate for rate in rates if (rate, tool) in cell and cell[(rate, tool)]["held"]]
        best[tool] = max(h) if h else None

    L = []
    L.append(SECTION)
    L.append("")
    L.append("Generated by `bench/rate` (see `bench/README.md`). Same caveat as above: shared VMs, so only "
             "the figures and ratios measured in this one run compare with each other.")
    L.append("")
    L.append(f"- Date: {meta.get('date', '?')}")
    L.append(f"- Machine: {meta.get('cpu_model', '?')}, {meta.get('cpus', '?')} cores (nproc), kernel {meta.get('kernel', '?')}")
    L.append(f"- Command: `{a.command}`; knobs: {meta.get('knobs', '?')}")
    L.append(f"- loadmark source: {meta.get('loadmark_source', '?')}")
    L.append("- Versions:")
    for t, v in versions:
        L.append(f"  - {t}: `{v}`")
    L.append(f"  - nginx (server): `{meta.get('nginx', '?')}`")
    L.append(f"- Raw output: `{out}` (per run: `raw/<rate>/<tool>/rep<N>/`: command, stdout/stderr, GNU time, nginx counters)")
    se = read(os.path.join(out, "stopped_early.txt"))
    if se:
        L.append(f"- **PARTIAL: the ladder was cut short ({se.strip()}).** Rungs not listed were not measured.")
    L.append("")
    L.append(f"Method: nginx (1 worker, access log off) pinned to CPU 0 serves `GET /json` (100 B, keep-alive); each tool "
             f"runs alone pinned to CPU 1 (`taskset`, `GOMAXPROCS=1`) at a constant arrival rate R for {dur:g} s with at "
             f"most {knobs.get('MAXCONN', '200')} connections/workers/VUs: loadmark `run -R R -d {dur:g}s -t 1 --max-connections "
             f"{knobs.get('MAXCONN', '200')}`, vegeta `attack -rate=R/1s -max-workers={knobs.get('MAXCONN', '200')}`, "
             f"k6 `constant-arrival-rate` (preAllocatedVUs = maxVUs = {knobs.get('MAXCONN', '200')}). "
             f"**Achieved rate = requests nginx served during the run (stub_status, before/after) ÷ {dur:g} s** "
             f"(the scheduled duration, so a tool's start-up time does not count against it; a tool that sends all "
             f"R×{dur:g} requests achieves R). **Held** = the median over {reps_wanted} repetitions is within ±{tol*100:g}% of R. "
             f"Client CPU = user+sys of the client process (GNU time) ÷ requests nginx served. "
             f"Repetitions are interleaved across tools; a tool that misses {knobs.get('STOP_AFTER', '2')} consecutive rungs "
             f"is not run higher (–). wrk2 (`wrk -R`) is not available on this machine (not packaged in Debian, not on "
             f"the Go module proxy), so it is not in the comparison.")
    L.append("")
    hdr = "| target req/s | " + " | ".join(f"{t} achieved | {t} held | {t} CPU µs/req" for t in tools) + " |"
    L.append(hdr)
    L.append("|---:|" + "---:|:---:|---:|" * len(tools))
    for rate in rates:
        row = [f"{rate:,}"]
        for t in tools:
            c = cell.get((rate, t))
            if c is None:
                row += ["–", "–", "–"]
            else:
                ach = fmt(c["achieved"]) + f" ({c['achieved'] / rate * 100:.1f}%)"
                held = ("**yes**" if c["held"] else "no") + (f" ({c['reps_held']}/{c['n']})" if c["n"] else "")
                row += [ach, held, fmt(c["us"], ".2f")]
        L.append("| " + " | ".join(row) + " |")
    L.append("")
    L.append("(x/y) after held = repetitions individually within ±1% / repetitions run; the percentage is achieved ÷ target.")
    L.append("")
    L.append("### Highest constant rate held")
    L.append("")
    L.append("| tool | highest rung held (req/s) | next rung (not held or not run) | client CPU µs/req at that rung |")
    L.append("|---|---:|---:|---:|")
    for t in tools:
        b = best[t]
        nxt = next((r for r in rates if b is not None and r > b), None)
        L.append(f"| {t} | {fmt(b) if b else 'none held'} | {fmt(nxt) if nxt else '–'} | "
                 f"{fmt(cell[(b, t)]['us'], '.2f') if b else '–'} |")
    for t, v in versions:
        if t in ("vegeta", "k6") and v.startswith("NOT-INSTALLED"):
            L.append(f"| {t} | not measured ({v}) | | |")
    L.append("| wrk2 | not available here | | |")
    L.append("")
    L.append("Ratios (same run; the true maxima lie between the highest rung held and the next rung, so these "
             "ratios are as coarse as the ladder):")
    L.append("")
    for peer in ("vegeta", "k6"):
        if peer in tools and best.get("loadmark") and best.get(peer):
            L.append(f"- highest held rate loadmark/{peer}: {best['loadmark']:,} / {best[peer]:,} = **{best['loadmark'] / best[peer]:.2f}×**")
        elif peer in tools and best.get("loadmark"):
            L.append(f"- highest held rate loadmark/{peer}: {peer} held no rung (loadmark {best['loadmark']:,})")
        else:
            L.append(f"- loadmark/{peer}: not measured")
        if peer in tools:
            common = [r for r in rates if cell.get((r, "loadmark"), {}).get("held") and cell.get((r, peer), {}).get("held")]
            if common:
                parts = [f"{r:,}: {cell[(r, 'loadmark')]['us'] / cell[(r, peer)]['us']:.2f}" for r in common
                         if cell[(r, 'loadmark')]['us'] and cell[(r, peer)]['us']]
                L.append(f"  - client CPU µs/req loadmark/{peer} at the rates both held: " + ", ".join(parts))
    L.append("")
    L.append("### Per run")
    L.append("")
    L.append("Self-reported figures are each tool's own (loadmark JSON `summary`, `vegeta report -type=json`, k6 "
             "`--summary-export`); dropped = loadmark `summary.dropped` / k6 `dropped_iterations` (vegeta has none: it "
             "sends late instead). Client util = CPU ÷ wall time of the client process (includes its start-up); "
             "nginx util = worker CPU ÷ measured window; steal = hypervisor steal on both cores during the run; other on client core = user+system time of "
             "CPU 1 not charged to the tool (another process; can be slightly negative from accounting granularity).")
    L.append("")
    L.append("| R | tool | rep | rc | nginx reqs | achieved | wall s | client CPU s | µs/req | client util | nginx util | conns | self count | self rps | dropped | loadmark schedule-lag p99 / health | steal s | other on client core s | noise guard |")
    L.append("|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---|")
    for rate in rates:
        for t in tools:
            for r in runs.get((rate, t), []):
                extra = ""
                if t == "loadmark":
                    extra = f"{r.get('lag_p99', '–')} / {r.get('health', '–')}"
                elif r.get("health"):
                    extra = r["health"]
                L.append(f"| {rate:,} | {t} | {r['rep']} | {r['rc']} | {r['srv_req']:,} | {r['achieved']:,.0f} | "
                         f"{fmt(r.get('wall'), '.2f')} | {fmt(r.get('cpu'), '.2f')} | {fmt(r.get('us_per_req'), '.2f')} | "
                         f"{fmt(r.get('cli_util') and r['cli_util'] * 100, '.0f')}% | "
                         f"{(r['nginx_cpu'] / r['window'] * 100) if r['window'] else 0:.0f}% | {r['conns']} | "
                         f"{fmt(r.get('self_count'), ',.0f') if isinstance(r.get('self_count'), (int, float)) else '–'} | "
                         f"{fmt(r.get('self_rps'), ',.0f') if isinstance(r.get('self_rps'), (int, float)) else '–'} | "
                         f"{fmt(r.get('dropped'), ',.0f') if isinstance(r.get('dropped'), (int, float)) else '–'} | {extra} | "
                         f"{fmt(r.get('steal'), '.2f')} | {fmt(r.get('cli_other'), '.2f')} | {r['noise']} |")
    L.append("")
    L.append("Noise guard: before each run the script waits until both cores are quiet (other sessions' "
             "fuzzers/compilers); a run during which either core did more than 10% of wall time of user+system work (irq/softirq, "
             "i.e. loopback packet processing, excluded) not charged to the tool (client core) or to nginx (server core), or steal exceeded 25%, is re-run once. "
             + ("Re-runs (the noisy first attempts, kept in the raw output, not used): " + "; ".join(noisy_reruns)
                if noisy_reruns else "No run needed a re-run.")
             + " Runs still noisy after the re-run are flagged **NOISY** above and still counted. Caveat: the tools' own "
             "CPU time (GNU time) includes softirq work that /proc/stat books as softirq, so \"other\" comes out negative at "
             "high rates (down to about -2 s per 5 s run) and the guard is blind to foreign load smaller than that.")
    L.append("")
    section = "\n".join(L) + "\n"

    if a.print:
        print(section)
        return
    replace_section(a.results, SECTION, section)

if __name__ == "__main__":
    main()
