#!/usr/bin/env python3
"""Summarize a bench/scale output directory into the "Scale and sharing" section of RESULTS.md.

Usage: scale_summary.py --out DIR --results FILE [--command CMD] [--print]
The section is replaced if present (up to the next "## " heading), else appended.
"""
import argparse
import json
import os

from benchlib import med, meta as read_meta, replace_section

HEADING = "## Scale and sharing (bench/scale)"

SCEN = {
    "unpinned": ("client and server unpinned, sharing both cores (nginx 2 workers, client 2 threads, 50 conns, keep-alive /json)",
                 "rps", "req/s", "≥ 1.1× wrk", lambda r: r >= 1.1),
    "c1000": ("1,000 connections, keep-alive /json, nginx on CPU 0, client on CPU 1",
              "us_per_req", "client CPU µs/req", "≤ 0.8× wrk", lambda r: r <= 0.8),
    "c10k-rss": ("10,000 concurrent keep-alive connections, /json, short run",
                 "rss_mib", "client peak RSS MiB", "≤ 64 MiB", None),
    "body-256k": ("keep-alive GET of a 256 KiB file, 50 conns, nginx on CPU 0, client on CPU 1",
                  "us_per_req", "client CPU µs/req", "none in issue 3 (recorded)", None),
    "target": ("built-in target (`loadmark serve --threads 1`) vs nginx (1 worker), each on CPU 0, GET /status, wrk -t1 -c50 on CPU 1",
               "rps", "req/s served", "≥ 0.8× nginx", lambda r: r >= 0.8),
}


def fmt(x, unit):
    if x is None:
        return "–"
    if unit in ("rps", "reqs"):
        return f"{x:,.0f}"
    return f"{x:.2f}" if unit == "us_per_req" else f"{x:.1f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--results", required=True)
    ap.add_argument("--command", default="bench/scale")
    ap.add_argument("--print", action="store_true")
    a = ap.parse_args()
    runs = [json.loads(l) for l in open(os.path.join(a.out, "runs.jsonl")) if l.strip()]
    meta = read_meta(os.path.join(a.out, "meta.txt"))
    lines = [HEADING, ""]
    lines.append("Issue 3's other scenarios, measured by `bench/scale` (see bench/README.md). Same caveat as above: "
                 "only ratios from the same run mean anything.")
    lines.append("")
    lines.append(f"- Date: {meta.get('date', '?')}; machine: {meta.get('cpu', '?')}")
    lines.append(f"- Versions: {meta.get('loadmark', '?')}; {meta.get('wrk', '?')}; {meta.get('nginx', '?')}")
    lines.append(f"- Command: `{a.command}`; raw output: `{a.out}` (per run: `raw/<scenario>/<tool>/rep<N>/`, all runs: `runs.jsonl`)")
    lines.append("")
    lines.append("| scenario | tool | req/s | client CPU µs/req | of which user | peak RSS MiB | runs (ok/all) | load avg at start (min–max) | steal s (max) |")
    lines.append("|---|---|---:|---:|---:|---:|---|---|---:|")
    med_by = {}
    for sc in SCEN:
        tools = sorted({r["tool"] for r in runs if r["scenario"] == sc}, key=lambda t: (t not in ("loadmark", "loadmark-serve"), t))
        for t in tools:
            rs = [r for r in runs if r["scenario"] == sc and r["tool"] == t]
            ok = [r for r in rs if r["rc"] == 0 and r["reqs"] > 0]
            m = {k: med([r[k] for r in ok]) for k in ("rps", "us_per_req", "rss_mib")}
            m["user_us"] = med([r["user"] * 1e6 / r["reqs"] for r in ok])
            med_by[(sc, t)] = m
            loads = [r["load"] for r in rs]
            lines.append(f"| {sc} | {'**' + t + '**' if t.startswith('loadmark') else t} | {fmt(m['rps'], 'rps')} | "
                         f"{fmt(m['us_per_req'], 'us_per_req')} | {fmt(m['user_us'], 'us_per_req')} | {fmt(m['rss_mib'], 'rss')} | "
                         f"{len(ok)}/{len(rs)} | {min(loads):.2f}–{max(loads):.2f} | {max(r['steal_s'] for r in rs):.2f} |")
    lines.append("")
    lines.append("In the `target` rows the tool is the server under test; the client is wrk in both, so the CPU "
                 "columns there are wrk's and req/s is wrk's count.")
    lines.append("")
    lines.append("Targets (medians of this run):")
    lines.append("")
    for sc, (desc, key, label, target, check) in SCEN.items():
        if sc == "target":
            a_, b_ = med_by.get((sc, "loadmark-serve")), med_by.get((sc, "nginx"))
            peer = "nginx"
        else:
            a_, b_ = med_by.get((sc, "loadmark")), med_by.get((sc, "wrk"))
            peer = "wrk"
        if not a_:
            lines.append(f"- **{sc}** ({desc}): not measured in this run")
            continue
        if sc == "c10k-rss":
            v = a_["rss_mib"]
            verdict = "met" if v is not None and v <= 64 else "**not met**"
            extra = f"; wrk {fmt(b_['rss_mib'], 'rss')} MiB" if b_ else ""
            lines.append(f"- **{sc}** ({desc}): loadmark peak RSS {fmt(v, 'rss')} MiB{extra}. Target {target}: {verdict}")
            continue
        if not b_ or not b_.get(key) or a_.get(key) is None:
            lines.append(f"- **{sc}** ({desc}): no {peer} figure in this run")
            continue
        ratio = a_[key] / b_[key]
        if check is None:
            lines.append(f"- **{sc}** ({desc}): {label} loadmark {fmt(a_[key], key)} vs {peer} {fmt(b_[key], key)} = "
                         f"**{ratio:.2f}×**. Target: {target}")
            continue
        verdict = "met" if check(ratio) else "**not met**"
        lines.append(f"- **{sc}** ({desc}): {label} loadmark {fmt(a_[key], key)} vs {peer} {fmt(b_[key], key)} = "
                     f"**{ratio:.2f}×**. Target {target}: {verdict}")
    bad = [r for r in runs if r["rc"] != 0 or r["reqs"] <= 0]
    if bad:
        lines.append("")
        lines.append("Runs excluded (non-zero exit or no requests): " +
                     ", ".join(f"{r['scenario']}/{r['tool']}/rep{r['rep']} (rc {r['rc']})" for r in bad))
    section = "\n".join(lines) + "\n"
    if a.print:
        print(section)
        return
    replace_section(a.results, HEADING, section)

if __name__ == "__main__":
    main()
