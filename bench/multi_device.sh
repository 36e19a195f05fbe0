#!/usr/bin/env bash
# bench/multi_device.sh: one GPU join on one GPU and spread over several
# (broadcast and partitioned by key), against PostgreSQL's parallel hash
# join with 8 and 16 workers
#
#   bench/multi_device.sh > results.csv
#
# Against a running server with gpujoin (PGHOST/PGPORT/PGUSER/PGDATABASE as
# psql takes them) on a host with two GPUs or more.  REUSE_TABLES=1 keeps
# xr and xs where they already hold n rows each (loaded by an earlier run
# with KEEP_TABLES=1, or LOAD_ONLY=1, which loads the tables and stops).
#
# For n in SIZES (default 5*10^7 rows a side; the tables and query of
# bench/parallel.sh: every xs row matches one xr row), the query
#	SELECT count(*), sum(xr.v + xs.v) FROM xr JOIN xs ON xr.k = xs.k
# runs as:
#	pg_parallel_W	PostgreSQL's parallel hash join, W workers (8, 16)
#	gpu_1			gpujoin forced, serial, gpujoin.devices = '0'
#	gpu_2_broadcast	likewise on devices 0 and 1, gpujoin.multi_device =
#					broadcast
#	gpu_2_partition	likewise, partitioned by key
#	gpu_2_auto		likewise, the way the cost model prices lowest
#	gpu_N_WAY		likewise on devices 0 .. N - 1 (gpu_4_partition, ...)
#	gpu_parallel_W	gpujoin on, the planner's choice with W workers a
#					Gather, on the first GPUS (default 1) devices
# SETTINGS="..." runs only the settings named.  Each setting in one
# session: a warm-up, then the median of RUNS (3) of EXPLAIN ANALYZE's
# Execution Time (TIMING OFF).  Every setting must return the row of
# PostgreSQL's own plan.
# Output: CSV on stdout: rows,setting,plan,spread,ms
set -euo pipefail

runs=${RUNS:-3}
sizes=${SIZES:-50000000}
psql_() { psql -X -q -At -v ON_ERROR_STOP=1 -c "LOAD 'gpujoin'" "$@"; }
psql_ -c "CREATE EXTENSION IF NOT EXISTS gpujoin"

q="SELECT count(*), sum(xr.v + xs.v) FROM xr JOIN xs ON xr.k = xs.k"
base="SET jit = off; SET work_mem = '4GB';"
forced="SET gpujoin.device = gpu; SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_nestloop = off; SET gpujoin.enable_parallel = off; SET max_parallel_workers_per_gather = 0;"

# the ordinals 0 .. n - 1
first_devices() { seq -s, 0 $(($1 - 1)); }

settings_of() {
	case "$1" in
	pg_parallel_*) echo "SET gpujoin.enabled = off; SET max_parallel_workers_per_gather = ${1#pg_parallel_}; SET max_parallel_workers = ${1#pg_parallel_};" ;;
	gpu_parallel_*) echo "SET gpujoin.devices = '$(first_devices "${GPUS:-1}")'; SET max_parallel_workers_per_gather = ${1#gpu_parallel_}; SET max_parallel_workers = ${1#gpu_parallel_};" ;;
	gpu_1) echo "$forced SET gpujoin.devices = '0';" ;;
	gpu_[0-9]*_*)
		local n=${1#gpu_}
		echo "$forced SET gpujoin.devices = '$(first_devices "${n%%_*}")'; SET gpujoin.multi_device = ${n#*_};" ;;
	esac
}

measure() {
	local args=(-c "$base $(settings_of "$1")") out plan spread ms
	for i in $(seq 0 "$runs"); do
		args+=(-c "EXPLAIN (ANALYZE, TIMING OFF) $q")
	done
	out=$(psql_ "${args[@]}")
	plan=$(grep -oE 'Custom Scan \(Gpu[A-Za-z]+\)|Parallel Hash Join|Hash Join|Merge Join|Nested Loop' <<<"$out" | head -1)
	spread=$(sed -n 's/^ *Spread: \(.*\)$/\1/p' <<<"$out" | head -1)
	ms=$(sed -n 's/^Execution Time: \([0-9.]*\) ms$/\1/p' <<<"$out" | tail -n +2 |
		sort -g | sed -n "$(((runs + 1) / 2))p")
	printf '%s,"%s",%s\n' "$plan" "${spread:-one device}" "$ms"
}

echo "rows,setting,plan,spread,ms"
for n in $sizes; do
	have=$(psql_ -c "SELECT coalesce(sum(reltuples)::int8, 0) FROM pg_class WHERE relname IN ('xr', 'xs')")
	if [ -z "${REUSE_TABLES:-}" ] || [ "$have" != "$((2 * n))" ]; then
		# the two tables at once, each in a session of its own
		psql_ -c "DROP TABLE IF EXISTS xr, xs"
		psql_ -c "CREATE UNLOGGED TABLE xr AS SELECT g AS k, g % 1000 AS v FROM generate_series(1, $n) g" \
			-c "VACUUM ANALYZE xr" -c "ALTER TABLE xr SET (parallel_workers = 16)" &
		r=$!
		psql_ -c "CREATE UNLOGGED TABLE xs AS SELECT (g::int8 * 7919) % $n + 1 AS k, g % 100 AS v FROM generate_series(1, $n) g" \
			-c "VACUUM ANALYZE xs" -c "ALTER TABLE xs SET (parallel_workers = 16)" &
		wait "$r" && wait $!
	fi
	[ -z "${LOAD_ONLY:-}" ] || exit 0
	# PostgreSQL's own answer, from its plan with 16 workers
	want=$(psql_ -c "$base $(settings_of pg_parallel_16)" -c "$q")
	for s in ${SETTINGS:-pg_parallel_8 pg_parallel_16 gpu_1 gpu_2_broadcast gpu_2_partition}; do
		got=$(psql_ -c "$base $(settings_of "$s")" -c "$q")
		if [ "$got" != "$want" ]; then
			echo "MISMATCH at $n rows: '$got' under $s, '$want' from PostgreSQL" >&2
			exit 1
		fi
		printf '%s,%s,%s\n' "$n" "$s" "$(measure "$s")"
	done
done
# KEEP_TABLES=1 leaves xr and xs (the last size) for a look afterwards
[ -n "${KEEP_TABLES:-}" ] || psql_ -c "DROP TABLE IF EXISTS xr, xs"
