#!/usr/bin/env bash
# bench/parallel.sh: parallel GPU joins (each process joins its part of the
# outer side against the whole inner side) against the serial GPU join and
# PostgreSQL's serial and parallel hash joins
#
#   bench/parallel.sh > results.csv
#
# Against a running server with gpujoin (PGHOST/PGPORT/PGUSER/PGDATABASE as
# psql takes them).
#
# For n in SIZES (default 1000, 10^6, 10^7 rows a side; the tables and query
# of bench/crossover.sh: every xs row matches one xr row), the query
#	SELECT count(*), sum(xr.v + xs.v) FROM xr JOIN xs ON xr.k = xs.k
# runs as:
#	pg_serial		PostgreSQL, no workers
#	pg_parallel_W	PostgreSQL's parallel hash join, W workers
#	gpu_serial		gpujoin forced (core joins off), gpujoin.enable_parallel off
#	gpu_parallel_W	gpujoin forced, W workers, parallel plans made free
#					(parallel_setup_cost, parallel_tuple_cost and
#					gpujoin.worker_setup_cost 0), so the Gather is taken
#	auto			everything on, 8 workers allowed: what the planner picks
# for W in WORKERS (default 2 4 8; the tables' parallel_workers option is
# set to W, so that many are planned; auto: 8).  SETTINGS="..." runs only
# the settings named.  Each setting in one session: a
# warm-up, then the median of RUNS (3) of EXPLAIN ANALYZE's Execution Time
# (TIMING OFF).  Every gpujoin setting must return the row of PostgreSQL's
# own plan (gpujoin off, the default parallelism).  PG_RUNS (RUNS) is the
# number of runs of PostgreSQL's own settings, 0 for one run and no warm-up
# (PostgreSQL at 10^8 rows takes minutes a run).  A parallel GPU
# join's workers are new processes, each opening the GPU: at 1000 rows,
# gpu_parallel_W less gpu_serial is about what that costs (the
# gpujoin.worker_setup_cost to set is that many ms times
# gpujoin.cost_per_ms).
# LOAD=0 keeps the xr and xs already there (made by an earlier run at the
# same size) and KEEP=1 leaves them after the run, so that one load serves
# several runs (at 10^8 rows a side, the load takes minutes), and
# LOAD_JOBS=N loads each table with N sessions at once; WANT="..."
# gives PostgreSQL's own answer (psql -At output, as an earlier run at the
# same size printed it to stderr) instead of running its join once more.
# QUERY="..." runs another query over xr and xs instead (a full join, say:
# PostgreSQL 15 runs those in one process only).
# Output: CSV on stdout: rows,setting,plan,workers_launched,ms
set -euo pipefail

runs=${RUNS:-3}
pg_runs=${PG_RUNS:-$runs}
load_jobs=${LOAD_JOBS:-1}
dev=${GJ_DEVICE:-gpu}	# cpu: try the script where there is no GPU
sizes=${SIZES:-"1000 1000000 10000000"}
workers=${WORKERS:-"2 4 8"}
psql_() { psql -X -q -At -v ON_ERROR_STOP=1 -c "LOAD 'gpujoin'" "$@"; }
psql_ -c "CREATE EXTENSION IF NOT EXISTS gpujoin"

q=${QUERY:-"SELECT count(*), sum(xr.v + xs.v) FROM xr JOIN xs ON xr.k = xs.k"}
base="SET jit = off; SET work_mem = '1GB';"
forced="SET gpujoin.device = $dev; SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_nestloop = off;"

# the settings of a name, after $base
settings_of() {
	case "$1" in
	pg_serial) echo "SET gpujoin.enabled = off; SET max_parallel_workers_per_gather = 0;" ;;
	pg_parallel_*) echo "SET gpujoin.enabled = off; SET max_parallel_workers_per_gather = ${1#pg_parallel_};" ;;
	gpu_serial) echo "$forced SET gpujoin.enable_parallel = off; SET max_parallel_workers_per_gather = 0;" ;;
	gpu_parallel_*) echo "$forced SET max_parallel_workers_per_gather = ${1#gpu_parallel_}; SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; SET gpujoin.worker_setup_cost = 0;" ;;
	auto) echo "SET gpujoin.device = $dev; SET max_parallel_workers_per_gather = 8;" ;;
	esac
}

# n + 1 EXPLAIN ANALYZE in one session (n: RUNS, PG_RUNS for PostgreSQL's
# own settings): "plan,workers,ms" of the median of the last n, or of the
# one run when n is 0
measure() {
	local n=$runs args=(-c "$base $(settings_of "$1")") out plan launched ms
	case "$1" in pg_*) n=$pg_runs ;; esac
	local total=$((n + 1))
	[ "$n" -gt 0 ] || { total=1; n=1; }
	for i in $(seq 1 "$total"); do
		args+=(-c "EXPLAIN (ANALYZE, TIMING OFF) $q")
	done
	out=$(psql_ "${args[@]}")
	plan=$(grep -oE 'Parallel Custom Scan \(Gpu[A-Za-z]+Join\)|Custom Scan \(Gpu[A-Za-z]+Join\)|Parallel Hash( [A-Z][a-z]+)? Join|Hash( [A-Z][a-z]+)? Join|Merge( [A-Z][a-z]+)? Join|Nested Loop' <<<"$out" | head -1)
	launched=$(sed -n 's/^ *Workers Launched: \([0-9]*\)$/\1/p' <<<"$out" | tail -1)
	ms=$(sed -n 's/^Execution Time: \([0-9.]*\) ms$/\1/p' <<<"$out" | tail -n "$n" |
		sort -g | sed -n "$(((n + 1) / 2))p")
	printf '%s,%s,%s\n' "$plan" "${launched:-0}" "$ms"
}

# xr and xs of n rows, each loaded by load_jobs sessions at once (ranges of
# g), then vacuumed (both at once) and analyzed
load() {
	local n=$1 pids=() lo hi
	psql_ -c "DROP TABLE IF EXISTS xr, xs" \
		-c "CREATE TABLE xr (k int, v int)" -c "CREATE TABLE xs (k int8, v int)"
	for j in $(seq 0 $((load_jobs - 1))); do
		lo=$((n / load_jobs * j + 1))
		hi=$((j == load_jobs - 1 ? n : n / load_jobs * (j + 1)))
		psql_ -c "INSERT INTO xr SELECT g, g % 1000 FROM generate_series($lo, $hi) g" &
		pids+=($!)
		psql_ -c "INSERT INTO xs SELECT (g::int8 * 7919) % $n + 1, g % 100 FROM generate_series($lo, $hi) g" &
		pids+=($!)
	done
	for p in "${pids[@]}"; do wait "$p"; done
	psql_ -c "VACUUM xr" & p=$!
	psql_ -c "VACUUM xs"
	wait "$p"
	psql_ -c "ANALYZE xr, xs"
}

echo "rows,setting,plan,workers_launched,ms"
for n in $sizes; do
	[ "${LOAD:-1}" = 0 ] || load "$n"
	psql_ -c "ALTER TABLE xr RESET (parallel_workers)" -c "ALTER TABLE xs RESET (parallel_workers)"
	want=${WANT:-$(psql_ -c "$base SET gpujoin.enabled = off;" -c "$q")}
	echo "PostgreSQL's answer at $n rows: $want" >&2
	names="pg_serial gpu_serial"
	for w in $workers; do
		names="$names pg_parallel_$w gpu_parallel_$w"
	done
	names=${SETTINGS:-"$names auto"}
	for s in $names; do
		case "$s" in
		*_parallel_*) w=${s##*_} ;;
		*) w=8 ;;
		esac
		psql_ -c "ALTER TABLE xr SET (parallel_workers = $w)" -c "ALTER TABLE xs SET (parallel_workers = $w)"
		# (PostgreSQL's own plans are the reference: not checked, which
		# saves a run of minutes at 10^8 rows)
		got=$want
		case "$s" in pg_*) ;; *) got=$(psql_ -c "$base $(settings_of "$s")" -c "$q") ;; esac
		if [ "$got" != "$want" ]; then
			echo "MISMATCH at $n rows: '$got' under $s, '$want' serial" >&2
			exit 1
		fi
		printf '%s,%s,%s\n' "$n" "$s" "$(measure "$s")"
	done
done
[ "${KEEP:-0}" = 1 ] || psql_ -c "DROP TABLE IF EXISTS xr, xs"
