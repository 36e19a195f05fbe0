#!/usr/bin/env bash
# bench/heapscan.sh: a GPU join reading its tables as heap pages
# (gpujoin.enable_heapscan) against the same join reading them through its
# Seq Scan children, and against PostgreSQL serial and with 8 workers
#
#   bench/heapscan.sh > results.csv 2> phases.txt
#
# Against a running server with gpujoin (PGHOST/PGPORT/PGUSER/PGDATABASE as
# psql takes them).  For n in SIZES (default 10^7 rows a side; the tables
# and query of bench/crossover.sh: every xs row matches one xr row),
#	SELECT count(*), sum(xr.v + xs.v) FROM xr JOIN xs ON xr.k = xs.k
# runs as:
#	pg_serial		PostgreSQL, no workers
#	pg_parallel_8	PostgreSQL's parallel hash join, 8 workers
#	gpu_preagg		gpujoin forced, serial, both sides read as heap pages, the
#					aggregates on the device (GpuPreAgg under Finalize Aggregate)
#	gpu_heap		the same join with gpujoin.enable_preagg off: the joined
#					rows formed for PostgreSQL's Aggregate
#	gpu_heap_copied	the same with gpujoin.heap_in_place off: the pages copied
#					on the host, not read by the device in the shared buffers
#	gpu_child		gpujoin forced, serial, gpujoin.enable_heapscan off
#					(the Seq Scan children, as before the heap-page path)
#	gpu_parallel_8	gpujoin forced, 8 workers (the outer side a Parallel Seq
#					Scan, the inner side read as heap pages by every process)
#	auto			everything on, 8 workers allowed: what the planner picks
# Each setting in one session: a warm-up, then the median of RUNS (3) of
# EXPLAIN ANALYZE's Execution Time (TIMING OFF).  Every setting must return
# the row of PostgreSQL's own plan.  On stderr, EXPLAIN ANALYZE (with
# timing) of gpu_heap and gpu_child: the phases (load, transfer, build,
# probe, materialize, emit), the pages read, and the scan's throughput per
# side (heap bytes read over the time reading and deforming them).
# SETTINGS and PHASES (space-separated) narrow the settings measured and
# the ones whose phases are printed; both default to all of the above.
# WHERE adds a filter to the query (for example 'xr.v < 300 AND xs.v % 4 = 1':
# the scans' quals, which the heap-page path evaluates in the deform).
# KEEP_TABLES=1 keeps xr and xs when they already have n rows each (runs
# that differ only in settings, PGOPTIONS for example, then share them).
# Output: CSV on stdout: rows,setting,plan,ms
set -euo pipefail

runs=${RUNS:-3}
dev=${GJ_DEVICE:-gpu}	# cpu: try the script where there is no GPU
sizes=${SIZES:-10000000}
settings=${SETTINGS:-pg_serial pg_parallel_8 gpu_preagg gpu_heap gpu_heap_copied gpu_child gpu_parallel_8 auto}
phases=${PHASES:-gpu_preagg gpu_heap gpu_child}
psql_() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }
psql_ -c "CREATE EXTENSION IF NOT EXISTS gpujoin" >/dev/null

where=${WHERE:-}
q="SELECT count(*), sum(xr.v + xs.v) FROM xr JOIN xs ON xr.k = xs.k${where:+ WHERE $where}"
base="SET jit = off; SET work_mem = '1GB';"
forced="SET gpujoin.device = $dev; SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_nestloop = off;"

settings_of() {
	case "$1" in
	pg_serial) echo "SET gpujoin.enabled = off; SET max_parallel_workers_per_gather = 0;" ;;
	pg_parallel_8) echo "SET gpujoin.enabled = off; SET max_parallel_workers_per_gather = 8;" ;;
	gpu_preagg) echo "$forced SET gpujoin.enable_parallel = off; SET max_parallel_workers_per_gather = 0;" ;;
	gpu_heap) echo "$forced SET gpujoin.enable_parallel = off; SET max_parallel_workers_per_gather = 0; SET gpujoin.enable_preagg = off;" ;;
	gpu_heap_copied) echo "$forced SET gpujoin.enable_parallel = off; SET max_parallel_workers_per_gather = 0; SET gpujoin.heap_in_place = off; SET gpujoin.enable_preagg = off;" ;;
	gpu_child) echo "$forced SET gpujoin.enable_parallel = off; SET max_parallel_workers_per_gather = 0; SET gpujoin.enable_heapscan = off; SET gpujoin.enable_preagg = off;" ;;
	gpu_parallel_8) echo "$forced SET max_parallel_workers_per_gather = 8; SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; SET gpujoin.worker_setup_cost = 0; SET gpujoin.enable_preagg = off;" ;;
	auto) echo "SET gpujoin.device = $dev; SET max_parallel_workers_per_gather = 8;" ;;
	esac
}

# RUNS + 1 EXPLAIN ANALYZE in one session: "plan,ms" of the median
measure() {
	local args=(-c "$base $(settings_of "$1")") out plan ms
	for i in $(seq 0 "$runs"); do
		args+=(-c "EXPLAIN (ANALYZE, TIMING OFF) $q")
	done
	out=$(psql_ "${args[@]}")
	plan=$(grep -oE 'Parallel Custom Scan \(Gpu[A-Za-z]+Join\)|Custom Scan \(Gpu[A-Za-z]+\)|Parallel Hash Join|Hash Join|Merge Join|Nested Loop' <<<"$out" | head -1)
	grep -q 'heap pages' <<<"$out" && plan="$plan (heap pages)"
	ms=$(sed -n 's/^Execution Time: \([0-9.]*\) ms$/\1/p' <<<"$out" | tail -n +2 |
		sort -g | sed -n "$(((runs + 1) / 2))p")
	printf '%s,%s\n' "$plan" "$ms"
}

block_size=$(psql_ -c "SHOW block_size")
echo "rows,setting,plan,ms"
for n in $sizes; do
	have=
	if [ "$(psql_ -c "SELECT to_regclass('xr') IS NOT NULL AND to_regclass('xs') IS NOT NULL")" = t ]; then
		have=$(psql_ -c "SELECT (SELECT count(*) FROM xr) || ' ' || (SELECT count(*) FROM xs)")
	fi
	if [ "${KEEP_TABLES:-0}" != 1 ] || [ "$have" != "$n $n" ]; then
		psql_ -c "DROP TABLE IF EXISTS xr, xs" \
			-c "CREATE TABLE xr AS SELECT g AS k, g % 1000 AS v FROM generate_series(1, $n) g" \
			-c "CREATE TABLE xs AS SELECT (g::int8 * 7919) % $n + 1 AS k, g % 100 AS v FROM generate_series(1, $n) g" \
			-c "VACUUM ANALYZE xr, xs"
	fi
	want=$(psql_ -c "$base SET gpujoin.enabled = off;" -c "$q")
	for s in $settings; do
		got=$(psql_ -c "$base $(settings_of "$s")" -c "$q")
		if [ "$got" != "$want" ]; then
			echo "heapscan.sh: $s returned $got, PostgreSQL $want" >&2
			exit 1
		fi
		printf '%s,%s,%s\n' "$n" "$s" "$(measure "$s")"
	done
	for s in $phases; do
		printf '\n== %s rows a side, %s: EXPLAIN ANALYZE (with per-node timing)\n' "$n" "$s" >&2
		out=$(psql_ -c "$base $(settings_of "$s") SET gpujoin.explain_device = on;" \
			-c "$q" -c "EXPLAIN (ANALYZE) $q" | tail -n +2)
		printf '%s\n' "$out" >&2
		# the scan's throughput: heap bytes read per ms of page reads and deform
		awk -v bs="$block_size" '
			/(Outer|Inner) Pages: read=/ {
				side = $1; pages = $3; sub(/read=/, "", pages)
				t = $0; sub(/.*time=/, "", t); sub(/ .*/, "", t)
				d = $0; sub(/.*deform=/, "", d); sub(/ .*/, "", d)
				if (t + d > 0)
					printf "scan throughput, %s side: %.0f MB in %.1f + %.1f ms: %.2f GB/s\n",
						tolower(side), pages * bs / 1e6, t, d, pages * bs / ((t + d) * 1e6)
			}' <<<"$out" >&2
	done
done
