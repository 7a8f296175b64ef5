#!/usr/bin/env python3
"""Apache Otava (PyPI apache-otava) on the series the synthetic example wrote, scored as the
example scores loadmark: a true change found within 2 runs, missed, or a false change point.

    python3 -m venv target/otava && target/otava/bin/pip install apache-otava==0.8.0
    cargo run -p loadmark-history --example synthetic --profile test -- 5 target/series.csv
    target/otava/bin/python bench/history/otava_compare.py target/series.csv [PVALUE] [WINDOW]
"""
import csv
import sys
from collections import defaultdict

from otava.analysis import compute_change_points


def main():
    path = sys.argv[1]
    pvalue = float(sys.argv[2]) if len(sys.argv) > 2 else 0.001
    window = int(sys.argv[3]) if len(sys.argv) > 3 else 50
    series = defaultdict(list)
    meta = {}
    with open(path) as f:
        for row in csv.DictReader(f):
            sid = int(row["series"])
            series[sid].append(float(row["value"]))
            meta[sid] = (float(row["shift"]), float(row["noise"]), int(row["length"]), int(row["at"]))
    tally = {"all": [0, 0, 0, 0], "big": [0, 0, 0, 0], "null": [0, 0, 0, 0]}
    for sid, values in series.items():
        shift, noise, _, at = meta[sid]
        cps, _ = compute_change_points(values, window_len=window, max_pvalue=pvalue)
        idx = [c.index for c in cps]
        hit = shift > 0 and any(abs(i - at) <= 2 for i in idx)
        t = [int(hit), int(shift > 0 and not hit), len(idx) - int(hit), 1]
        keys = ["null"] if shift == 0 else (["all", "big"] if shift >= 3 * noise else ["all"])
        for k in keys:
            tally[k] = [a + b for a, b in zip(tally[k], t)]
    for k, (found, missed, false, n) in tally.items():
        recall = found / max(found + missed, 1)
        precision = found / max(found + false, 1)
        print(f"{k}: recall {recall:.3f}, precision {precision:.3f}, false change points {false} ({n} series)")


if __name__ == "__main__":
    main()
