#!/usr/bin/env python3
"""Precision and recall of change detection on the real series real.sh recorded, loadmark's
and Apache Otava's, on the same CSV: `loadmark history trend --format csv` (one row per run
and metric: the value, and `change_point` true where loadmark's detector put one).

A series' shift is the change of its mean at `at`, in sd of the runs before it; the series
with a shift of 3 sd or more are scored apart too, as the synthetic bench does.

Each run carries the tags real.sh gave it: `stall=5ms at=13` (a slowdown from run 13 on) or
`stall=none at=none`; `trend --by stall,at` keeps them in the CSV. A change is found when a change point lies within 2 runs of `at` (as the
synthetic bench scores); every other change point is a false one.

    target/otava/bin/python bench/history/real_score.py trend.csv [PVALUE] [WINDOW]
"""
import csv
import statistics
import sys
from collections import defaultdict

from otava.analysis import compute_change_points


def tags(text):
    return dict(t.split("=", 1) for t in text.split() if "=" in t)


def main():
    path = sys.argv[1]
    pvalue = float(sys.argv[2]) if len(sys.argv) > 2 else 0.001
    window = int(sys.argv[3]) if len(sys.argv) > 3 else 50
    rows = defaultdict(list)  # (metric, series) -> [(run id, value, loadmark's change point)]
    truth = {}
    with open(path) as f:
        for row in csv.DictReader(f):
            key = (row["metric"], row["series"])
            rows[key].append((int(row["run"]), float(row["value"]), row["change_point"] == "true"))
            t = tags(row["tags"])
            at = t.get("at", "none")
            truth[key] = (t.get("stall", "none"), int(at) - 1 if at.isdigit() else None)
    # metric -> detector -> [found, missed, false, series]; "null" counts series without change
    tally = defaultdict(lambda: defaultdict(lambda: [0, 0, 0, 0]))
    detail = []
    for (metric, series), runs in sorted(rows.items()):
        runs.sort()
        values = [v for _, v, _ in runs]
        stall, at = truth[(metric, series)]
        ours = [i for i, (_, _, cp) in enumerate(runs) if cp]
        cps, _ = compute_change_points(values, window_len=window, max_pvalue=pvalue)
        theirs = [int(c.index) for c in cps]
        # The shift the slowdown made, in the noise's sd (of the runs before it), as the
        # synthetic bench classes its series.
        shift = None
        if at is not None:
            before, after = values[:at], values[at:]
            shift = abs(statistics.mean(after) - statistics.mean(before)) / max(
                statistics.stdev(before), 1e-9)
        for name, idx in (("loadmark", ours), ("otava", theirs)):
            hit = at is not None and any(abs(i - at) <= 2 for i in idx)
            t = [int(hit), int(at is not None and not hit), len(idx) - int(hit), 1]
            keys = [name + ", no change"] if at is None else [name + ", all"]
            if shift is not None and shift >= 3:
                keys.append(name + ", shift >= 3 sd")
            for key in keys:
                tally[metric][key] = [a + b for a, b in zip(tally[metric][key], t)]
        detail.append(f"{metric:6} stall {stall:5} at {'-' if at is None else at:>2} "
                      f"shift {'-' if shift is None else f'{shift:5.1f}'} sd: "
                      f"loadmark {ours}, otava {theirs}")
    for line in detail:
        print(line)
    print()
    print("| metric | detector, series | recall | precision | found | missed | false change points | series |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    order = ["all", "shift >= 3 sd", "no change"]
    for metric, by in sorted(tally.items()):
        for name in sorted(by, key=lambda n: (order.index(n.split(", ")[1]), n)):
            found, missed, false, n = by[name]
            recall = f"{found / (found + missed):.2f}" if found + missed else "-"
            precision = f"{found / (found + false):.2f}" if found + false else "-"
            print(f"| {metric} | {name} | {recall} | {precision} | {found} | {missed} | {false} | {n} |")


if __name__ == "__main__":
    main()
