#!/usr/bin/env bash
# bench/preagg.sh: aggregates over a GPU join computed on the device
# (GpuPreAgg) against the same join feeding PostgreSQL's Aggregate, and
# against PostgreSQL serial and with 8 workers, over a range of groups
#
#   bench/preagg.sh > results.csv 2> plans.txt
#
# Against a running server with gpujoin (PGHOST/PGPORT/PGUSER/PGDATABASE as
# psql takes them), on the tables of bench/heapscan.sh (xr, xs: N rows a
# side, every xs row matching one xr row; made if missing, N = ROWS, 10^7
# by default).  For each G in GROUP_COUNTS (default 1 10 1000 100000 10000000):
#	G = 1:	SELECT count(*), sum(xr.v + xs.v) FROM xr JOIN xs ON xr.k = xs.k
#	G > 1:	SELECT xs.k % G, count(*), sum(xr.v + xs.v), min(xr.v), max(xs.v)
#			FROM xr JOIN xs ON xr.k = xs.k GROUP BY 1
# runs as:
#	pg_serial		PostgreSQL, no workers
#	pg_parallel_8	PostgreSQL, 8 workers
#	gpu_preagg		gpujoin forced, serial, the aggregation on the device
#					(the group-by variant the planner picks)
#	gpu_preagg_hash, gpu_preagg_shared, gpu_preagg_sort
#					the same with gpujoin.groupby_variant forced (not in
#					the default SETTINGS)
#	gpu_join		the same join, gpujoin.enable_preagg off (PostgreSQL's
#					Aggregate over the joined rows)
#	auto			everything on, 8 workers allowed: what the planner picks
# Each setting in one session: a warm-up, then the median of RUNS (3) of
# EXPLAIN ANALYZE's Execution Time (TIMING OFF); every setting must return
# PostgreSQL's rows (compared as an md5 of the sorted rows).  For large N:
# SERIAL_RUNS (default RUNS) runs of pg_serial, and CHECK_SERIAL=0 skips
# its md5 (its rows are PostgreSQL's, taken with 8 workers already);
# WARMUP=0 skips the warm-ups.  On stderr,
# EXPLAIN ANALYZE of gpu_preagg for each G.
# Output: CSV on stdout: rows,groups,setting,plan,ms,device_ms (device_ms:
# the GPU node's materialize time in one more run with TIMING, which in a
# GpuPreAgg is the rounds' gather and folding; empty without a GPU node)
set -euo pipefail

runs=${RUNS:-3}
serial_runs=${SERIAL_RUNS:-$runs}
warmup=${WARMUP:-1}
check_serial=${CHECK_SERIAL:-1}
dev=${GJ_DEVICE:-gpu}
n=${ROWS:-10000000}
groups=${GROUP_COUNTS:-"1 10 1000 100000 10000000"}
settings=${SETTINGS:-pg_serial pg_parallel_8 gpu_preagg gpu_join auto}
psql_() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }
psql_ -c "CREATE EXTENSION IF NOT EXISTS gpujoin" >/dev/null

base="SET jit = off; SET work_mem = '1GB';"
forced="SET gpujoin.device = $dev; SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_nestloop = off; SET gpujoin.enable_parallel = off; SET max_parallel_workers_per_gather = 0;"
settings_of() {
	case "$1" in
	pg_serial) echo "SET gpujoin.enabled = off; SET max_parallel_workers_per_gather = 0;" ;;
	pg_parallel_8) echo "SET gpujoin.enabled = off; SET max_parallel_workers_per_gather = 8;" ;;
	gpu_preagg) echo "$forced" ;;
	gpu_preagg_hash) echo "$forced SET gpujoin.groupby_variant = hash;" ;;
	gpu_preagg_shared) echo "$forced SET gpujoin.groupby_variant = shared;" ;;
	gpu_preagg_sort) echo "$forced SET gpujoin.groupby_variant = sort;" ;;
	gpu_join) echo "$forced SET gpujoin.enable_preagg = off;" ;;
	auto) echo "SET gpujoin.device = $dev; SET max_parallel_workers_per_gather = 8;" ;;
	esac
}
query_of() {
	if [ "$1" = 1 ]; then
		echo "SELECT count(*), sum(xr.v + xs.v) FROM xr JOIN xs ON xr.k = xs.k"
	else
		echo "SELECT xs.k % $1, count(*), sum(xr.v + xs.v), min(xr.v), max(xs.v) FROM xr JOIN xs ON xr.k = xs.k GROUP BY 1"
	fi
}
digest() { psql_ -c "$base $(settings_of "$1")" -c "SELECT count(*) || ':' || md5(string_agg(t::text, ',' ORDER BY t::text)) FROM ($2) t"; }
measure() {
	local args=(-c "$base $(settings_of "$1")") out plan ms n=$runs
	[ "$1" = pg_serial ] && n=$serial_runs
	for i in $(seq $((1 - warmup)) "$n"); do
		args+=(-c "EXPLAIN (ANALYZE, TIMING OFF) $2")
	done
	# and one with TIMING: the GPU node's Time line (materialize: the
	# round's gather and, in a GpuPreAgg, the folding into groups);
	# PostgreSQL's own plans have none
	case "$1" in pg_*) ;; *) args+=(-c "EXPLAIN (ANALYZE) $2") ;; esac
	out=$(psql_ "${args[@]}")
	plan=$(grep -oE 'Parallel Custom Scan \(Gpu[A-Za-z]+\)|Custom Scan \(Gpu[A-Za-z]+\)|Parallel Hash Join|Hash Join|Merge Join|Nested Loop' <<<"$out" | head -1)
	ms=$(sed -n 's/^Execution Time: \([0-9.]*\) ms$/\1/p' <<<"$out" |
		{ case "$1" in pg_*) cat ;; *) sed '$d' ;; esac; } | tail -n +$((1 + warmup)) |
		sort -g | sed -n "$(((n + 1) / 2))p")
	device=$(grep -oE 'materialize=[0-9.]+' <<<"$out" | tail -1 | cut -d= -f2)
	printf '%s,%s,%s\n' "$plan" "$ms" "$device"
}

have=
if [ "$(psql_ -c "SELECT to_regclass('xr') IS NOT NULL AND to_regclass('xs') IS NOT NULL")" = t ]; then
	have=$(psql_ -c "SELECT (SELECT count(*) FROM xr) || ' ' || (SELECT count(*) FROM xs)")
fi
if [ "$have" != "$n $n" ]; then
	# the two tables in two sessions at once
	psql_ -c "DROP TABLE IF EXISTS xr, xs"
	psql_ -c "CREATE TABLE xr AS SELECT g AS k, g % 1000 AS v FROM generate_series(1, $n) g" \
		-c "VACUUM ANALYZE xr" &
	psql_ -c "CREATE TABLE xs AS SELECT (g::int8 * 7919) % $n + 1 AS k, g % 100 AS v FROM generate_series(1, $n) g" \
		-c "VACUUM ANALYZE xs"
	wait $!
fi
echo "rows,groups,setting,plan,ms,device_ms"
for g in $groups; do
	q=$(query_of "$g")
	want=$(digest pg_parallel_8 "$q")
	for s in $settings; do
		# the reference itself, or pg_serial when told not to check it
		if [ "$s" = pg_parallel_8 ] || { [ "$s" = pg_serial ] && [ "$check_serial" = 0 ]; }; then
			printf '%s,%s,%s,%s\n' "$n" "$g" "$s" "$(measure "$s" "$q")"
			continue
		fi
		got=$(digest "$s" "$q")
		if [ "$got" != "$want" ]; then
			echo "preagg.sh: $s returned $got, PostgreSQL $want ($q)" >&2
			exit 1
		fi
		printf '%s,%s,%s,%s\n' "$n" "$g" "$s" "$(measure "$s" "$q")"
	done
	printf '\n== %s rows a side, %s groups, gpu_preagg: EXPLAIN ANALYZE\n' "$n" "$g" >&2
	psql_ -c "$base $(settings_of gpu_preagg) SET gpujoin.explain_device = on;" \
		-c "EXPLAIN (ANALYZE) $q" >&2
done
