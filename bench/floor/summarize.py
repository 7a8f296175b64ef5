#!/usr/bin/env python3
"""Summarizes bench/floor passes: python3 summarize.py OUT PASS...

Each PASS is a compare.sh output directory OUT/PASS (runs.json) whose "loadmark" slot held
the client under test, measured beside wrk. Prints a Markdown table: per pass and scenario,
the median client CPU µs per request (user+sys per request nginx counted) and req/s (nginx's
count), each beside wrk's median in the same pass, and their ratios.
"""
import json, os, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from benchlib import med, ratio as _ratio  # noqa: E402

out, passes = sys.argv[1], sys.argv[2:]
print("| pass | scenario | client CPU µs/req | wrk's | ratio | req/s (nginx) | wrk's | ratio | runs ok |")
print("|---|---|---:|---:|---:|---:|---:|---:|---|")
for p in passes:
    try:
        rows = json.load(open(f"{out}/{p}/runs.json"))
    except OSError:
        print(f"| {p} | (no runs.json) | | | | | | | |"); continue
    for sc in dict.fromkeys(r["scenario"] for r in rows):
        def ok(tool):
            return [r for r in rows if r["scenario"] == sc and r["tool"] == tool and r.get("rc") == 0
                    and r.get("cpu") and r.get("srv_req") and r.get("elapsed")]
        cpu = {t: med([r["cpu"] / r["srv_req"] * 1e6 for r in ok(t)]) for t in ("loadmark", "wrk")}
        rps = {t: med([r["srv_req"] / r["elapsed"] for r in ok(t)]) for t in ("loadmark", "wrk")}
        ran = sum(1 for r in rows if r["scenario"] == sc and r["tool"] == "loadmark")
        ratio = lambda a, b: f"{_ratio(a, b):.2f}" if a and b else "—"
        num = lambda x, f: format(x, f) if x else "—"
        print(f"| {p} | {sc} | {num(cpu['loadmark'], '.2f')} | {num(cpu['wrk'], '.2f')} | "
              f"**{ratio(cpu['loadmark'], cpu['wrk'])}** | {num(rps['loadmark'], ',.0f')} | "
              f"{num(rps['wrk'], ',.0f')} | {ratio(rps['loadmark'], rps['wrk'])} | "
              f"{len(ok('loadmark'))}/{ran} |")
