#!/usr/bin/env python3
"""Turn one compare.sh output directory into bench/RESULTS.md.

Reads what /work/shared/bench/compare.sh leaves in its $OUT directory:
  runs.json     one record per measured run (tool, scenario, rep, rc, GNU time figures,
                nginx's request/connection counts, core busy/steal figures, noise flag)
  meta.txt      date, kernel, CPU count and model, DUR/CONNS/REPS, nginx version
  versions.tsv  tool -> version (or NOT-INSTALLED)
  table.md      compare.sh's own median tables (copied verbatim at the end)
  problems.txt  runs that failed or could not be parsed
  raw/<scenario>/<tool>/rep<N>[.noisyK]/   each run's stdout, stderr, cmd, time, counters

Every comparison is computed the same way for every tool, from the same run:
  req/s            = requests nginx served during the run / the run's wall time (GNU time)
  client CPU µs/req = (user + sys CPU seconds of the client process) / requests nginx served
and the figure per (tool, scenario) is the median over the clean, successful repetitions.
Ratios are loadmark's median over a peer's median, measured in the same invocation.

Usage: summarize.py --out DIR --results bench/RESULTS.md --command "..." [--loadmark PATH]
"""

import argparse
import json
import os
import re
import subprocess
import sys

from benchlib import fmt, med, meta as read_meta, ratio, read, to_ms

SCENARIOS = ["ka-json", "close-json", "ka-10k", "ka-status"]
SCENARIO_DESC = {
    "ka-json": "keep-alive, GET /json (100 B body)",
    "close-json": "`Connection: close` (a new TCP connection per request), GET /json (100 B)",
    "ka-10k": "keep-alive, GET /10k (10 KiB body)",
    "ka-status": "keep-alive, GET /status (2 B body)",
}
TOOL_ORDER = ["loadmark", "wrk", "ab", "h2load", "oha", "bombardier", "hey", "vegeta", "k6"]
PEERS = ["wrk", "ab"]  # the peers the ratios are taken against


def span(fractions):
    """'95–98%' or '98%' for a set of fractions."""
    lo, hi = round(min(fractions) * 100), round(max(fractions) * 100)
    return f"{lo}%" if lo == hi else f"{lo}–{hi}%"


def first_line(cmd):
    """First non-empty output line (stdout+stderr) of a version command, or a note."""
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=10, text=True, errors="replace")
        for line in p.stdout.splitlines():
            if line.strip():
                return line.strip()
        return "(no output)"
    except FileNotFoundError:
        return "not installed"
    except Exception as ex:  # noqa: BLE001 - a version string is informative only
        return f"({type(ex).__name__})"


# ------------------------------------------------------------------ loadmark's own output
def parse_loadmark(stdout):
    """Latency percentiles, error and non-2xx counts from loadmark's text report.
    compare.sh takes loadmark's req/s from nginx and leaves these blank."""
    r = {}
    m = re.search(r"^\s+50%\s+(\S+)", stdout, re.M)
    if m:
        r["p50"] = to_ms(m.group(1))
    m = re.search(r"^\s+99%\s+(\S+)", stdout, re.M)
    if m:
        r["p99"] = to_ms(m.group(1))
    m = re.search(r"Requests\s+(\d+) completed in [\d.]+s: (\d+) responses, (\d+) errors", stdout)
    if m:
        r["n"] = int(m.group(1))
        errors = int(m.group(3))
        bad = re.search(r"Status codes\s+(.*)", stdout)
        if bad:
            for code, n in re.findall(r"(\d{3}): (\d+)", bad.group(1)):
                if not code.startswith(("2", "3")):
                    errors += int(n)
        r["errors"] = errors
    m = re.search(r"Req/s\s+([\d.]+)", stdout)
    if m:
        r["self_rps"] = float(m.group(1))
    return r


# ------------------------------------------------------------------ load and aggregate
def load(out):
    rows = json.load(open(os.path.join(out, "runs.json")))
    for r in rows:
        d = os.path.join(out, "raw", r["scenario"], r["tool"], r["rep"])
        if r["tool"] == "loadmark":
            stdout = read(os.path.join(d, "stdout.txt"))
            if stdout is not None:
                r.update(parse_loadmark(stdout))
        # one definition of req/s for every tool: nginx's count over the process's wall time
        r["nginx_rps"] = r["srv_req"] / r["elapsed"] if r.get("elapsed") else None
        r["cpu_us"] = (r["cpu"] / r["srv_req"] * 1e6
                       if r.get("cpu") is not None and r["srv_req"] > 0 else None)
        r["user_us"] = (r["user"] / r["srv_req"] * 1e6
                        if r.get("user") is not None and r["srv_req"] > 0 else None)
    noisy_retried = {}
    raw = os.path.join(out, "raw")
    for sc in (os.listdir(raw) if os.path.isdir(raw) else []):
        for tool in os.listdir(os.path.join(raw, sc)):
            for rep in os.listdir(os.path.join(raw, sc, tool)):
                if ".noisy" in rep:
                    noisy_retried.setdefault((sc, tool), []).append(rep)
    return rows, noisy_retried


def aggregate(rows, noisy_retried):
    groups = {}
    for r in rows:
        groups.setdefault((r["scenario"], r["tool"]), []).append(r)
    agg = {}
    for key, rs in groups.items():
        # same filter as compare.sh: exit code 0 and a req/s figure
        ok = [r for r in rs if r["rc"] == 0 and r.get("nginx_rps")]
        rps = [r["nginx_rps"] for r in ok]
        agg[key] = {
            "ok": len(ok), "total": len(rs),
            "failed": [f'{r["rep"]} rc={r["rc"]}' for r in rs if r not in ok],
            "still_noisy": [f'{r["rep"]}: {r["noisy"]}' for r in ok if r.get("noisy")],
            "retried": sorted(noisy_retried.get(key, [])),
            "rps": med(rps), "rps_min": min(rps) if rps else None, "rps_max": max(rps) if rps else None,
            "p50": med([r.get("p50") for r in ok]), "p99": med([r.get("p99") for r in ok]),
            "cpu_us": med([r["cpu_us"] for r in ok]), "user_us": med([r["user_us"] for r in ok]),
            "cpu_util": med([r["cpu"] / r["elapsed"] for r in ok if r.get("cpu") is not None and r.get("elapsed")]),
            "srv_util": med([r["srv_cpu_s"] / r["elapsed"] for r in ok if r.get("elapsed")]),
            "rss": med([r.get("rss_mb") for r in ok]),
            "conns": med([r["srv_conns"] for r in ok]),
            "errors": med([r.get("errors") for r in ok]),
            "self_rps": med([r.get("rps") if r["tool"] != "loadmark" else r.get("self_rps") for r in ok]),
        }
    return agg


def per_pair_ratios(rows, scenario, tool, peer):
    """[(rep, tool's nginx-counted req/s ÷ peer's)] for each repetition both ran cleanly."""
    by_rep = {}
    for r in rows:
        if r["scenario"] == scenario and r["rc"] == 0 and r.get("nginx_rps"):
            rep = r["rep"].split(".noisy")[0]
            by_rep.setdefault(rep, {})[r["tool"]] = r["nginx_rps"]
    return [(rep, got[tool] / got[peer]) for rep, got in sorted(by_rep.items())
            if tool in got and peer in got and got[peer]]


def sort_key(key):
    sc, tool = key
    return (SCENARIOS.index(sc) if sc in SCENARIOS else 99,
            TOOL_ORDER.index(tool) if tool in TOOL_ORDER else 99, sc, tool)


# ------------------------------------------------------------------ render
def render(args, rows, agg, noisy_retried):
    out = args.out
    meta = read_meta(os.path.join(out, "meta.txt"))
    knobs = next((l.strip() for l in open(os.path.join(out, "meta.txt")) if l.startswith("DUR=")), "")
    versions = dict(l.rstrip("\n").split("\t", 1) for l in open(os.path.join(out, "versions.tsv")) if "\t" in l)
    problems = (read(os.path.join(out, "problems.txt"), "") or "").strip()
    scenarios = sorted({k[0] for k in agg}, key=lambda s: SCENARIOS.index(s) if s in SCENARIOS else 99)

    L = []
    L.append("# loadmark beside wrk and ab: benchmark results")
    L.append("")
    L.append("Generated by `bench/compare` (see `bench/README.md`). On these shared virtual machines absolute")
    L.append("figures drift from day to day: **only the ratios measured in the same run below mean anything**;")
    L.append("never compare an absolute figure here with one from another run.")
    L.append("")
    L.append("## Run")
    L.append("")
    L.append(f"- Date: {meta.get('date', '?')}")
    L.append(f"- Machine: {meta.get('cpu_model', '?')}, {meta.get('cpus', '?')} cores (nproc), "
             f"kernel {meta.get('kernel', '?')}")
    L.append(f"- Knobs: {knobs}")
    if args.git:
        L.append(f"- loadmark source: {args.git}")
    L.append("- Tool versions:")
    lm = args.loadmark or "loadmark"
    L.append(f"  - loadmark: `{first_line([lm, '--version'])}`")
    L.append(f"  - wrk: `{first_line(['wrk', '-v'])}`")
    L.append(f"  - ab: `{first_line(['ab', '-V'])}`")
    L.append(f"  - nginx (server): `{first_line(['nginx', '-v'])}`")
    missing = [t for t, v in versions.items() if v == "NOT-INSTALLED"]
    if missing:
        L.append(f"  - not installed, skipped by compare.sh: {', '.join(missing)}")
    L.append(f"- Command: `{args.command}`")
    if args.compare_cmd:
        L.append(f"- Which ran: `{args.compare_cmd}`")
    L.append(f"- Raw output: `{out}` (per run: `raw/<scenario>/<tool>/rep<N>/`; all runs: `runs.json`)")
    L.append("")
    L.append("Scenarios: " + "; ".join(f"**{s}** = {SCENARIO_DESC.get(s, s)}" for s in scenarios) + ".")
    L.append("")

    # ---- medians
    L.append("## Medians")
    L.append("")
    L.append("Median over the clean repetitions of each (tool, scenario). req/s is nginx's own count over the")
    L.append("client process's wall time, the same for every tool (the tools' self-reported req/s is shown")
    L.append("for reference). Client CPU is user+sys of the client process (GNU time) per request nginx served.")
    L.append("p50/p99 are as each tool reports them (ab: whole milliseconds).")
    L.append("")
    L.append("| scenario | tool | req/s (nginx) | min–max | self-reported req/s | p50 ms | p99 ms "
             "| client CPU µs/req | of which user | client core util | peak RSS MiB | nginx worker util "
             "| conns opened | errors | runs |")
    L.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for key in sorted(agg, key=sort_key):
        a = agg[key]
        runs = f"{a['ok']}/{a['total']}"
        if a["retried"]:
            runs += f", {len(a['retried'])} noisy re-run"
        if a["still_noisy"]:
            runs += f", {len(a['still_noisy'])} still noisy"
        L.append("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |".format(
            key[0], f"**{key[1]}**" if key[1] == "loadmark" else key[1],
            fmt(a["rps"], ",.0f"),
            f"{a['rps_min']:,.0f}–{a['rps_max']:,.0f}" if a["rps_min"] is not None else "—",
            fmt(a["self_rps"], ",.0f"), fmt(a["p50"], ".3f"), fmt(a["p99"], ".3f"),
            fmt(a["cpu_us"], ".2f"), fmt(a["user_us"], ".2f"),
            fmt(None if a["cpu_util"] is None else a["cpu_util"] * 100, ".0f") + ("%" if a["cpu_util"] is not None else ""),
            fmt(a["rss"], ".1f"),
            fmt(None if a["srv_util"] is None else a["srv_util"] * 100, ".0f") + ("%" if a["srv_util"] is not None else ""),
            fmt(a["conns"], ",.0f"), fmt(a["errors"], ",.0f"), runs))
    L.append("")

    # ---- ratios
    L.append("## Ratios (same run)")
    L.append("")
    L.append("loadmark's median divided by the peer's median. req/s: higher is better for loadmark;")
    L.append("CPU µs/req and RSS: lower is better. *best of wrk/ab* is whichever of the two used less CPU per request.")
    L.append("")
    L.append("| scenario | req/s lm/wrk | req/s lm/ab | CPU µs/req lm/wrk | CPU µs/req lm/ab "
             "| CPU µs/req lm/best of wrk,ab (best =) | peak RSS lm/wrk |")
    L.append("|---|---:|---:|---:|---:|---:|---:|")
    R = {}
    for sc in scenarios:
        lm_ = agg.get((sc, "loadmark"))
        wrk = agg.get((sc, "wrk"))
        ab = agg.get((sc, "ab"))
        g = lambda a, k: a[k] if a else None  # noqa: E731
        best_name, best_cpu = None, None
        for name, a in (("wrk", wrk), ("ab", ab)):
            if a and a["cpu_us"] is not None and (best_cpu is None or a["cpu_us"] < best_cpu):
                best_name, best_cpu = name, a["cpu_us"]
        R[sc] = {
            "rps_wrk": ratio(g(lm_, "rps"), g(wrk, "rps")), "rps_ab": ratio(g(lm_, "rps"), g(ab, "rps")),
            "cpu_wrk": ratio(g(lm_, "cpu_us"), g(wrk, "cpu_us")), "cpu_ab": ratio(g(lm_, "cpu_us"), g(ab, "cpu_us")),
            "cpu_best": ratio(g(lm_, "cpu_us"), best_cpu), "best": best_name,
            "rss_wrk": ratio(g(lm_, "rss"), g(wrk, "rss")),
        }
        r = R[sc]
        L.append("| {} | {} | {} | {} | {} | {} | {} |".format(
            sc, fmt(r["rps_wrk"], ".2f"), fmt(r["rps_ab"], ".2f"), fmt(r["cpu_wrk"], ".2f"),
            fmt(r["cpu_ab"], ".2f"),
            fmt(r["cpu_best"], ".2f") + (f" ({best_name})" if best_name and r["cpu_best"] is not None else ""),
            fmt(r["rss_wrk"], ".2f")))
    L.append("")

    # ---- per pair: a median can hide a steady deficit (issue 22)
    L.append("## nginx-counted req/s, loadmark ÷ wrk, per repetition")
    L.append("")
    L.append("compare.sh interleaves the tools within each repetition, so each repetition is a pair run")
    L.append("minutes apart at most; the ratio of nginx's own counts per pair shows a steady deficit that a")
    L.append("ratio of medians can hide.")
    L.append("")
    L.append("| scenario | per pair | mean |")
    L.append("|---|---|---:|")
    for sc in scenarios:
        pairs = per_pair_ratios(rows, sc, "loadmark", "wrk")
        if pairs:
            L.append("| {} | {} | {:.3f} |".format(
                sc, ", ".join(f"{v:.3f}" for _, v in pairs), sum(v for _, v in pairs) / len(pairs)))
    L.append("")

    # ---- where we stand
    L.append("## Where we stand")
    L.append("")
    L.append("Issue-3 targets, checked against this run's medians (req/s from nginx's count, CPU per request served):")
    L.append("")

    def verdict(val, limit, le):
        if val is None:
            return "no data"
        ok = val <= limit if le else val >= limit
        return f"{val:.2f}× ({'≤' if le else '≥'} {limit}×: **{'met' if ok else 'not met'}**)"

    for sc in scenarios:
        a = agg.get((sc, "loadmark"))
        if not a:
            L.append(f"- **{sc}**: no loadmark runs.")
            continue
        peers = []
        for p in PEERS:
            b = agg.get((sc, p))
            if b and b["rps"] is not None:
                peers.append(f"{p} {fmt(b['rps'], ',.0f')} req/s, {fmt(b['cpu_us'], '.2f')} µs/req")
            else:
                peers.append(f"{p} no data")
        L.append(f"- **{sc}**: loadmark {fmt(a['rps'], ',.0f')} req/s, {fmt(a['cpu_us'], '.2f')} µs/req; "
                 + "; ".join(peers) + ".")
        r = R[sc]
        if sc == "ka-json":
            L.append(f"  - Target: client CPU ≤ 0.75× best of wrk/ab ({r['best'] or '—'}): "
                     + verdict(r["cpu_best"], 0.75, True))
        elif sc == "close-json":
            L.append("  - Target: req/s ≥ 1.25× wrk: " + verdict(r["rps_wrk"], 1.25, False))
            L.append("  - Target: client CPU ≤ 0.8× wrk: " + verdict(r["cpu_wrk"], 0.8, True))
        elif sc == "ka-10k":
            L.append(f"  - Target: client CPU ≤ 0.8× best of wrk/ab ({r['best'] or '—'}): "
                     + verdict(r["cpu_best"], 0.8, True))
        if a["errors"]:
            L.append(f"  - loadmark reported a median of {a['errors']:,.0f} errors/non-2xx per run.")
        # which side was saturated: a bound server caps every tool's req/s at the same level
        utils = {t: agg[(sc, t)]["srv_util"] for t in ["loadmark"] + PEERS
                 if (sc, t) in agg and agg[(sc, t)]["srv_util"] is not None}
        cli = {t: agg[(sc, t)]["cpu_util"] for t in ["loadmark"] + PEERS
               if (sc, t) in agg and agg[(sc, t)]["cpu_util"] is not None}
        if utils and min(utils.values()) >= 0.9:
            L.append(f"  - The nginx worker was busy {span(utils.values())} "
                     "of its core for every tool: req/s here is bounded by the server; client CPU per request "
                     "is the comparable figure.")
        elif cli and min(cli.values()) >= 0.9:
            L.append(f"  - The client core was {span(cli.values())} busy "
                     "with the client for every tool: req/s here is bounded by the client.")
    L.append("")

    # ---- noise and problems
    L.append("## Noise and failures")
    L.append("")
    notes = []
    for key in sorted(agg, key=sort_key):
        a = agg[key]
        if a["retried"]:
            notes.append(f"- {key[0]}/{key[1]}: re-run after the noise guard fired: {', '.join(a['retried'])}")
        for s in a["still_noisy"]:
            notes.append(f"- {key[0]}/{key[1]}: still noisy after retry, kept in the medians: {s}")
        for s in a["failed"]:
            notes.append(f"- {key[0]}/{key[1]}: excluded from the medians: {s}")
        if a["errors"]:
            notes.append(f"- {key[0]}/{key[1]}: median errors per run {a['errors']:,.0f}")
    if problems:
        notes.append("- compare.sh problems.txt:")
        notes += [f"  - `{p}`" for p in problems.splitlines()]
    notes += [f"- {n}" for n in args.note]
    L += notes if notes else ["None: every run was clean (noise guard did not fire) and exited 0."]
    L.append("")

    # ---- verbatim
    L.append("## compare.sh's own tables (verbatim)")
    L.append("")
    L.append("Note: in compare.sh's first table, the `rps` column is self-reported for wrk and ab and")
    L.append("nginx-counted for loadmark; the ratios above use nginx's count for every tool.")
    L.append("")
    L.append(open(os.path.join(out, "table.md")).read().rstrip())
    L.append("")
    return "\n".join(L)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="compare.sh's output directory")
    ap.add_argument("--results", required=True, help="markdown file to write")
    ap.add_argument("--command", default="bench/compare", help="the command line to record")
    ap.add_argument("--compare-cmd", default="", help="the compare.sh invocation to record")
    ap.add_argument("--loadmark", default="", help="path of the measured loadmark binary")
    ap.add_argument("--git", default="", help="source revision note")
    ap.add_argument("--note", action="append", default=[], help="extra line for the noise section (repeatable)")
    args = ap.parse_args()
    if not os.path.exists(os.path.join(args.out, "runs.json")):
        sys.exit(f"summarize.py: {args.out}/runs.json missing: compare.sh did not finish")
    rows, noisy_retried = load(args.out)
    agg = aggregate(rows, noisy_retried)
    text = render(args, rows, agg, noisy_retried)
    open(args.results, "w").write(text + "\n")
    # echo the ratio table and the verdicts to the terminal
    show = False
    for line in text.splitlines():
        if line.startswith("## Ratios"):
            show = True
        elif line.startswith("## compare.sh"):
            break
        if show:
            print(line)


if __name__ == "__main__":
    main()
