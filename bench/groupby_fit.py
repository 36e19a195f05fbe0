#!/usr/bin/env python3
"""bench/groupby_fit.py: the group-by cost model's constants from the grid

    python3 bench/groupby_fit.py results.csv [judged.csv]

reads bench_groupby's CSV (make -C cuda bench-groupby) and fits, by least
squares on relative error, the device time of each group-by variant as
src/planner_agg.c prices it, plus a per-match time every variant shares (the
round's gather and the key's expression, which the planner charges to the
join):

    hash:   rows * (base + aggs * row_ns * (1 + contention_groups / groups))
    shared: rows * (base + aggs * shared_row_ns)
            + min(groups, cap) * aggs * flush_ns      (groups <= cap only)
    sort:   rows * (base + sort_row_ns) + runs * aggs * sort_run_ns
    sort_tr: rows * (base + (2 + aggs) * sort_word_ns) + runs * aggs * sort_run_ns

cap = the groups a block's shared memory holds (48 kB / (24 B * aggs));
runs = min(rows, rows / 16 + groups), the runs of one group that threads of
16 sorted matches each add to the table; sort_tr's words are the match's
number, its key and one per aggregate (the grid's keys are one column).
Then, with the fitted constants, the variant the model picks for each case
against the faster one measured: the cases where the pick is within 10 %
of the fastest, on the fitted grid or, where a second is given, on that
one (fitted on one run, judged on another; a variant the first lacks is
not offered).  Prints the constants as gpujoin settings and the summary.
Pure Python (no numpy): the normal equations, solved by elimination.
"""
import csv
import sys

SHARED_BYTES = 48 * 1024


def cap(aggs):
    return SHARED_BYTES // (24 * aggs)


def solve(a, b):
    """Solve the square system a x = b by Gaussian elimination."""
    n = len(b)
    m = [row[:] + [b[i]] for i, row in enumerate(a)]
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(m[r][c]))
        m[c], m[p] = m[p], m[c]
        if abs(m[c][c]) < 1e-300:
            raise SystemExit("groupby_fit: the grid does not determine the constants")
        for r in range(n):
            if r != c:
                f = m[r][c] / m[c][c]
                m[r] = [x - f * y for x, y in zip(m[r], m[c])]
    return [m[i][n] / m[i][i] for i in range(n)]


SORT_ITEMS = 16
NAMES = ["base", "row_ns", "row_c", "shared_ns", "flush_ns", "sort_row_ns", "sort_run_ns",
         "sort_word_ns"]


def runs(rows, groups):
    return min(rows, rows / SORT_ITEMS + groups)


def features(variant, rows, groups, aggs):
    # unknowns: base, row_ns, row_ns * contention_groups, shared_row_ns,
    # flush_ns, sort_row_ns, sort_run_ns, sort_word_ns
    if variant == "hash":
        return [rows, rows * aggs, rows * aggs / groups, 0.0, 0.0, 0.0, 0.0, 0.0]
    if variant == "sort":
        return [rows, 0.0, 0.0, 0.0, 0.0, rows, runs(rows, groups) * aggs, 0.0]
    if variant == "sort_tr":
        return [rows, 0.0, 0.0, 0.0, 0.0, 0.0, runs(rows, groups) * aggs, rows * (2 + aggs)]
    return [rows, 0.0, 0.0, rows * aggs, min(groups, cap(aggs)) * aggs, 0.0, 0.0, 0.0]


def read_grid(path):
    """The grid's cases (variant -> ns per case) and the rows to fit."""
    cases = {}
    fit_rows = []
    with open(path) as f:
        for r in csv.DictReader(f):
            rows, groups, aggs = int(r["rows"]), int(r["groups"]), int(r["aggs"])
            ns = float(r["ms"]) * 1e6
            key = (rows, groups, aggs, r["skew"])
            cases.setdefault(key, {})[r["variant"]] = ns
            if r["variant"] == "shared" and groups > cap(aggs):
                continue        # past the bound: a hybrid the model does not price
            fit_rows.append((features(r["variant"], rows, groups, aggs), ns))
    return cases, fit_rows


def main():
    fit_cases, fit_rows = read_grid(sys.argv[1])
    # judged on another grid (another run, another machine) where one is given
    cases = read_grid(sys.argv[2])[0] if len(sys.argv) > 2 else fit_cases
    fitted = set(v for t in fit_cases.values() for v in t)
    # least squares on relative error: each row weighted by 1 / measured
    n = len(NAMES)
    ata = [[0.0] * n for _ in range(n)]
    atb = [0.0] * n
    for x, y in fit_rows:
        w = 1.0 / y
        for i in range(n):
            atb[i] += x[i] * w * w * y
            for j in range(n):
                ata[i][j] += x[i] * x[j] * w * w
    # a variant missing from the grid: its constants stay 0
    used = [i for i in range(n) if ata[i][i] > 0]
    sub = solve([[ata[i][j] for j in used] for i in used], [atb[i] for i in used])
    consts = [0.0] * n
    for i, c in zip(used, sub):
        consts[i] = c
    base, row_ns, row_c, shared_ns, flush_ns, sort_row_ns, sort_run_ns, sort_word_ns = consts
    contention = row_c / row_ns if row_ns > 0 else 0.0
    print(f"per match, every variant (gather, key): {base:.4f} ns")
    print(f"gpujoin.preagg_row_ns = {row_ns:.4f}")
    print(f"gpujoin.preagg_contention_groups = {contention:.1f}")
    print(f"gpujoin.preagg_shared_row_ns = {shared_ns:.4f}")
    print(f"gpujoin.preagg_flush_ns = {flush_ns:.3f}")
    print(f"gpujoin.preagg_sort_row_ns = {sort_row_ns:.4f}")
    print(f"gpujoin.preagg_sort_run_ns = {sort_run_ns:.4f}")
    print(f"gpujoin.preagg_sort_word_ns = {sort_word_ns:.4f}")

    def model(variant, rows, groups, aggs):
        x = features(variant, rows, groups, aggs)
        return sum(a * b for a, b in zip(x, consts))

    within = total = 0
    misses = []
    for (rows, groups, aggs, skew), t in sorted(cases.items()):
        if "hash" not in t or "shared" not in t:
            continue
        # as src/planner_agg.c picks: shared only where the groups fit it
        # (a variant the fitted grid lacks has no constants: not offered)
        options = [v for v in ("hash", "shared", "sort", "sort_tr")
                   if v in t and v in fitted and (v != "shared" or groups <= cap(aggs))]
        pick = min(options, key=lambda v: model(v, rows, groups, aggs))
        best = min(t.values())
        total += 1
        if t[pick] <= 1.10 * best:
            within += 1
        else:
            misses.append(f"  {rows} rows, {groups} groups, {aggs} aggs, {skew}: picked {pick} "
                          f"{t[pick] / 1e6:.2f} ms, fastest {best / 1e6:.2f} ms")
    print(f"auto within 10 % of the fastest variant: {within} of {total} cases "
          f"({100.0 * within / max(total, 1):.0f} %)")
    for m in misses:
        print(m)


if __name__ == "__main__":
    main()
