#!/usr/bin/env bash
# bench/suite/workers.sh: the suite's queries with the large tables'
# parallel_workers set to each of several counts, gpujoin against
# PostgreSQL, on data bench/suite/run has loaded
#
#   bench/suite/workers.sh [--counts "default 2 4 8"] [--runs 3] [--label L]
#                          [--tables "ssb_lineorder lineitem orders"] [QUERY ...]
#
# For each count ("default": the tables' own, the reloption reset), ALTER
# TABLE ... SET (parallel_workers = N) on --tables, then each query
# (q01 s1_1 q03 q05 q08 by default) --runs times per way: gpujoin
# (gpujoin.device = gpu) and PostgreSQL (gpujoin.enabled = off), both with
# max_parallel_workers_per_gather = 8, jit off, work_mem 1GB; the time is
# EXPLAIN (ANALYZE, TIMING OFF)'s Execution Time.  Prints CSV lines
# label,parallel_workers,query,way,run,ms (the header first) and, at the
# end, the medians; the tables' reloption is reset afterwards.  Run it
# again after changing the server (huge_pages, gpujoin.service_workers)
# with another --label to compare.  Uses psql's environment (PGHOST,
# PGDATABASE ...); GJ_DEVICE=cpu runs gpujoin's way on the CPU twin (to
# try the script where there is no GPU).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
counts="default 2 4 8"
runs=3
label=run
tables="ssb_lineorder lineitem orders"
queries=()
while [ $# -gt 0 ]; do
	case "$1" in
		--counts) counts=$2; shift 2 ;;
		--runs) runs=$2; shift 2 ;;
		--label) label=$2; shift 2 ;;
		--tables) tables=$2; shift 2 ;;
		-h | --help) sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
		-*) echo "bench/suite/workers.sh: unknown option $1" >&2; exit 2 ;;
		*) queries+=("$1"); shift ;;
	esac
done
[ ${#queries[@]} -gt 0 ] || queries=(q01 s1_1 q03 q05 q08)

reset_tables() {
	for t in $tables; do
		psql -X -q -v ON_ERROR_STOP=1 -c "ALTER TABLE $t RESET (parallel_workers)"
	done
}
trap reset_tables EXIT

csv=$(mktemp)
echo "label,parallel_workers,query,way,run,ms"
for n in $counts; do
	for t in $tables; do
		if [ "$n" = default ]; then
			psql -X -q -v ON_ERROR_STOP=1 -c "ALTER TABLE $t RESET (parallel_workers)"
		else
			psql -X -q -v ON_ERROR_STOP=1 -c "ALTER TABLE $t SET (parallel_workers = $n)"
		fi
	done
	for q in "${queries[@]}"; do
		for way in gpujoin pg; do
			if [ $way = pg ]; then set_way="SET gpujoin.enabled = off;"; else set_way="SET gpujoin.device = ${GJ_DEVICE:-gpu};"; fi
			for r in $(seq 1 "$runs"); do
				ms=$( (echo "SET jit = off; SET work_mem = '1GB'; SET max_parallel_workers_per_gather = 8; $set_way EXPLAIN (ANALYZE, TIMING OFF)"
					   cat "$here/queries/$q.sql") | psql -X -q -t 2>&1 | awk '/Execution Time/ {print $3}')
				echo "$label,$n,$q,$way,$r,$ms" | tee -a "$csv"
			done
		done
	done
done

echo "medians (ms): label parallel_workers query gpujoin pg"
python3 - "$csv" <<'PY'
import csv, statistics, sys
d = {}
for label, n, q, way, r, ms in csv.reader(open(sys.argv[1])):
    if ms:
        d.setdefault((label, n, q), {}).setdefault(way, []).append(float(ms))
for (label, n, q), ways in d.items():
    print(label, n, q, *("%.1f" % statistics.median(ways[w]) if w in ways else "-" for w in ("gpujoin", "pg")))
PY
rm -f "$csv"
