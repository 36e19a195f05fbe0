#!/usr/bin/env bash
# bench/crossover.sh: where the GPU starts to win an equi-join, and where the
# planner thinks it does (issue: cost model validation)
#
#   bench/crossover.sh [--calibrate] > results.csv
#
# Against a running server with gpujoin (PGHOST/PGPORT/PGUSER/PGDATABASE as
# psql takes them).
# With --calibrate it first runs gpujoin_calibrate() and applies its values
# with ALTER SYSTEM (printed to stderr), so that "auto" plans with constants
# measured on this GPU.
#
# For n in SIZES (default 10^3 .. 10^7) rows a side (r: unique keys 1..n; s: n keys over
# 1..n, so every s row matches one r row), the query
#	SELECT count(*), sum(xr.v + xs.v) FROM xr JOIN xs ON xr.k = xs.k
# runs as: PostgreSQL serial (max_parallel_workers_per_gather = 0),
# PostgreSQL parallel (8 workers), gpujoin forced (core joins off, serial),
# and "auto" (everything on, 8 workers allowed: what the planner picks).
# Each in one session: a warm-up, then the median of RUNS (3) of EXPLAIN
# ANALYZE's Execution Time (TIMING OFF).  Every setting must give the same
# row.  first_gpu_ms is the first GPU join of a new session (the 1000-row
# one), which initializes CUDA in the backend.
# SERIAL=0 leaves PostgreSQL serial out (pg_serial_ms empty; the reference
# row is then the parallel plan's), for sizes where it would take minutes.
# Output: CSV on stdout.
set -euo pipefail

runs=${RUNS:-3}
dev=${GJ_DEVICE:-gpu}	# cpu: try the script where there is no GPU
sizes=${SIZES:-"1000 10000 100000 1000000 10000000"}
# every session loads gpujoin (its planner hook) whatever the server preloads
psql_() { psql -X -q -At -v ON_ERROR_STOP=1 -c "LOAD 'gpujoin'" "$@"; }
psql_ -c "CREATE EXTENSION IF NOT EXISTS gpujoin"

if [ "${1:-}" = "--calibrate" ]; then
	psql_ -c "SET gpujoin.device = $dev" \
		-c "SELECT format('ALTER SYSTEM SET %s = %s', setting, value) FROM gpujoin_calibrate() WHERE value IS NOT NULL" |
		while read -r stmt; do
			printf '%s\n' "$stmt" >&2
			psql_ -c "$stmt"
		done
	psql_ -c "SELECT pg_reload_conf()" >/dev/null
fi

serial="SET gpujoin.enabled = off; SET max_parallel_workers_per_gather = 0;"
parallel="SET gpujoin.enabled = off; SET max_parallel_workers_per_gather = 8;"
gpu="SET gpujoin.device = $dev; SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_nestloop = off; SET max_parallel_workers_per_gather = 0;"
auto="SET gpujoin.device = $dev; SET max_parallel_workers_per_gather = 8;"
q="SELECT count(*), sum(xr.v + xs.v) FROM xr JOIN xs ON xr.k = xs.k"

# median Execution Time of q under the settings $1, all runs in one session
# after a warm-up run (the first GPU join of a session also initializes
# CUDA in the backend: that is the warm-up's, and reported apart)
time_of() {
	local args=(-c "SET jit = off; SET work_mem = '1GB'; $1")
	for i in $(seq 0 "$runs"); do
		args+=(-c "EXPLAIN (ANALYZE, TIMING OFF) $q")
	done
	psql_ "${args[@]}" | sed -n 's/^Execution Time: \([0-9.]*\) ms$/\1/p' | tail -n +2 |
		sort -g | sed -n "$(((runs + 1) / 2))p"
}
result_of() { psql_ -c "SET jit = off; SET work_mem = '1GB'; $1" -c "$q"; }
plan_of() {
	psql_ -c "$1" -c "EXPLAIN (COSTS OFF) $q" |
		grep -oE 'Gpu[A-Za-z]+Join|Parallel Hash Join|Hash Join|Merge Join|Nested Loop' | head -1
}

echo "rows,auto_plan,auto_ms,pg_serial_ms,pg_parallel_ms,gpujoin_ms,gpujoin_over_best_pg,first_gpu_ms"
for n in $sizes; do
	psql_ -c "DROP TABLE IF EXISTS xr, xs" \
		-c "CREATE TABLE xr AS SELECT g AS k, g % 1000 AS v FROM generate_series(1, $n) g" \
		-c "CREATE TABLE xs AS SELECT (g::int8 * 7919) % $n + 1 AS k, g % 100 AS v FROM generate_series(1, $n) g" \
		-c "VACUUM ANALYZE xr, xs"
	ref="$serial"
	[ "${SERIAL:-1}" = 0 ] && ref="$parallel"
	want=$(result_of "$ref")
	for s in "$parallel" "$gpu" "$auto"; do
		got=$(result_of "$s")
		if [ "$got" != "$want" ]; then
			echo "MISMATCH at $n rows: '$got' under [$s], '$want' under [$ref]" >&2
			exit 1
		fi
	done
	ts=
	[ "${SERIAL:-1}" = 0 ] || ts=$(time_of "$serial")
	tp=$(time_of "$parallel")
	tg=$(time_of "$gpu")
	ta=$(time_of "$auto")
	best=$(printf '%s\n%s\n' "$ts" "$tp" | grep . | sort -g | head -1)
	first=$(psql_ -c "$gpu" -c "EXPLAIN (ANALYZE, TIMING OFF) $q" | sed -n 's/^Execution Time: \([0-9.]*\) ms$/\1/p')
	printf '%s,%s,%s,%s,%s,%s,%s,%s\n' "$n" "$(plan_of "$auto")" "$ta" "$ts" "$tp" "$tg" \
		"$(awk -v a="$tg" -v b="$best" 'BEGIN { printf "%.2f", a / b }')" "$first"
done
psql_ -c "DROP TABLE IF EXISTS xr, xs"
