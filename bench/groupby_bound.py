#!/usr/bin/env python3
"""bench/groupby_bound.py: each group-by variant against the bound of
reading its input once from device memory

    bench/groupby_bound.py [CSV [BANDWIDTH_GBS [ROWS]]]

Reads the group-by grid (bench/kernels/bench_groupby.c's CSV: rows, groups,
aggs, skew, variant, ms; bench/results/groupby_h200.csv by default) and, for
the cases of ROWS matches (10^8 by default), prints a Markdown table: per
number of groups, aggregates and skew, each variant's device time and the
share of it that reading the input once would take.  The input of a match
is what the aggregation needs of it: its group key (int8, 8 bytes) and one
int4 value per aggregate (4 bytes each); the bound is those bytes over the
device's copy bandwidth (BANDWIDTH_GBS, 4295.9 GB/s by default: the H200
host's cudaMemcpy device to device, bench/results/kernels.md, counting the
bytes read and written).  The variants read more than that: the round's
gather (the values by row number), SORT a second pass over the inputs,
SORT_TR its sorts of each match's words.
"""
import csv
import sys

path = sys.argv[1] if len(sys.argv) > 1 else "bench/results/groupby_h200.csv"
bandwidth = float(sys.argv[2]) if len(sys.argv) > 2 else 4295.9
rows_wanted = int(sys.argv[3]) if len(sys.argv) > 3 else 100000000

cases = {}
for r in csv.DictReader(open(path)):
    if int(r["rows"]) != rows_wanted:
        continue
    key = (int(r["groups"]), int(r["aggs"]), r["skew"])
    cases.setdefault(key, {})[r["variant"]] = float(r["ms"])

variants = ["hash", "shared", "sort", "sort_tr"]
print("| groups | aggregates | keys | bound (ms) | " +
      " | ".join(f"{v} ms (% of bound)" for v in variants) + " | fastest |")
print("| ---: | ---: | --- | ---: | " + " | ".join("---:" for _ in variants) + " | --- |")
shares = {v: [] for v in variants}
for (groups, aggs, skew), ms in sorted(cases.items()):
    bound = rows_wanted * (8 + 4 * aggs) / (bandwidth * 1e9) * 1e3
    cells = []
    for v in variants:
        if v in ms:
            cells.append(f"{ms[v]:.1f} ({100 * bound / ms[v]:.1f} %)")
            shares[v].append(bound / ms[v])
        else:
            cells.append("")
    best = min((m, v) for v, m in ms.items())[1]
    print(f"| {groups} | {aggs} | {skew} | {bound:.3f} | " + " | ".join(cells) + f" | {best} |")
for v in variants:
    if shares[v]:
        s = sorted(shares[v])
        print(f"\n{v}: {100 * s[len(s) // 2]:.1f} % of the bound at the median, "
              f"{100 * s[0]:.1f} to {100 * s[-1]:.1f} % over {len(s)} cases", end="")
print()
