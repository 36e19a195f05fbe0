#!/usr/bin/env bash
# bench/chain.sh: a star join of one fact table and 1-4 dimensions, the GPU
# joins run as one chain (gpujoin.enable_chain) against the same joins as
# stacked nodes and against PostgreSQL serial and with 8 workers
#
#   bench/chain.sh > results.csv 2> plans.txt
#
# Against a running server with gpujoin (PGHOST/PGPORT/PGUSER/PGDATABASE as
# psql takes them).  Tables (made if missing): sf (ROWS rows, 10^7 by
# default: id, a foreign key per dimension, uniform over 1.25 times the
# dimension's rows so that 80 % of the probes of each find a row, a value),
# sd1 .. sd4 (DIM_ROWS rows each, 10^5 by default: a unique key and a value).
# For each number of dimensions L in LEVELS (default 2 3 4):
#	rows:	SELECT sf.id, sd1.a, .. FROM sf JOIN sd1 ON .. JOIN sdL ON ..
#			(every joined row comes out of the join, counted by an
#			Aggregate above a subquery the planner cannot flatten)
#	sum:	SELECT count(*), sum(sf.v + sd1.a + ..) FROM sf JOIN .. (the
#			aggregate the planner may compute on the device, GpuPreAgg,
#			over the lower joins' chain)
# run as:
#	pg_serial		PostgreSQL, no workers
#	pg_parallel_8	PostgreSQL, 8 workers
#	gpu_chain		gpujoin forced (GPU joins only), serial, chains on
#	gpu_stacked		the same, gpujoin.enable_chain = off
#	gpu_chain_8		gpujoin forced, 8 workers allowed (a chain is serial
#					while gpujoin.enable_parallel_chain is off, the default)
#	gpu_chain_agg_8	the same with gpujoin.enable_chain_preagg = on (a
#					GpuPreAgg the chain's top, for the sum query)
#	gpu_stacked_8	gpujoin forced, 8 workers, gpujoin.enable_chain = off
#	gpu_pchain_8	gpu_chain_8 with gpujoin.enable_parallel_chain = on: a
#					partial chain in every process, each building every
#					level's table
#	gpu_pchain_agg_8	the same with gpujoin.enable_chain_preagg = on
#	auto			gpujoin on and 8 workers allowed: the planner chooses
# (SETTINGS picks; the default is the first four).  EXPLAIN_SETTING (gpu_chain)
# is the setting whose plans go to stderr (none: no plans).
# Each setting in one session: a warm-up (none with WARMUP=0), then the
# median of RUNS (3) of EXPLAIN ANALYZE's Execution Time (TIMING OFF).
# Every setting must return PostgreSQL's rows, compared as an md5 of the
# sorted rows against the 8 workers' answer to the same aggregates over
# the joins themselves (for rows: SELECT count(*), sum(sf.id) FROM sf
# JOIN ..; gathering 10^8 joined rows through PostgreSQL's Gather would
# take minutes).  On stderr, EXPLAIN ANALYZE of EXPLAIN_SETTING for each
# query.  JOBS (1) sessions fill sf at once, each its own range of ids
# (the same rows as one session's).
# Output: CSV on stdout: rows,dim_rows,levels,query,setting,plan,ms
set -euo pipefail

runs=${RUNS:-3}
dev=${GJ_DEVICE:-gpu}
n=${ROWS:-10000000}
dim=${DIM_ROWS:-100000}
levels=${LEVELS:-"2 3 4"}
queries=${QUERIES:-"rows sum"}
settings=${SETTINGS:-pg_serial pg_parallel_8 gpu_chain gpu_stacked}
jobs=${JOBS:-1}
warmup=${WARMUP:-1}
psql_() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }
psql_ -c "CREATE EXTENSION IF NOT EXISTS gpujoin" >/dev/null

base="SET jit = off; SET work_mem = '1GB';"
forced_any="SET gpujoin.device = $dev; SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_nestloop = off; SET gpujoin.enable_mergejoin = off;"
forced="$forced_any SET gpujoin.enable_parallel = off; SET max_parallel_workers_per_gather = 0;"
forced_8="$forced_any SET max_parallel_workers_per_gather = 8;"
settings_of() {
	case "$1" in
	pg_serial) echo "SET gpujoin.enabled = off; SET max_parallel_workers_per_gather = 0;" ;;
	pg_parallel_8) echo "SET gpujoin.enabled = off; SET max_parallel_workers_per_gather = 8;" ;;
	gpu_chain) echo "$forced" ;;
	gpu_stacked) echo "$forced SET gpujoin.enable_chain = off;" ;;
	gpu_chain_8) echo "$forced_8" ;;
	gpu_chain_agg_8) echo "$forced_8 SET gpujoin.enable_chain_preagg = on;" ;;
	gpu_stacked_8) echo "$forced_8 SET gpujoin.enable_chain = off;" ;;
	gpu_pchain_8) echo "$forced_8 SET gpujoin.enable_parallel_chain = on;" ;;
	gpu_pchain_agg_8) echo "$forced_8 SET gpujoin.enable_parallel_chain = on; SET gpujoin.enable_chain_preagg = on;" ;;
	auto) echo "SET gpujoin.device = $dev; SET max_parallel_workers_per_gather = 8;" ;;
	*) echo "chain.sh: unknown setting $1" >&2; exit 1 ;;
	esac
}
explain_setting=${EXPLAIN_SETTING:-gpu_chain}
query_of() {
	local joins="" cols="" sum="sf.v"
	for l in $(seq 1 "$2"); do
		joins="$joins JOIN sd$l ON sf.k$l = sd$l.k"
		cols="$cols, sd$l.a AS a$l"
		sum="$sum + sd$l.a"
	done
	case "$1" in
	rows) echo "SELECT count(*), sum(x.id) FROM (SELECT sf.id$cols FROM sf$joins OFFSET 0) x" ;;
	rows_ref) echo "SELECT count(*), sum(sf.id) FROM sf$joins" ;;
	sum) echo "SELECT count(*), sum($sum) FROM sf$joins" ;;
	esac
}
# the query whose answer, from PostgreSQL's 8 workers, every setting's must equal
reference_of() {
	case "$1" in
	rows) query_of rows_ref "$2" ;;
	*) query_of "$1" "$2" ;;
	esac
}
digest() { psql_ -c "$base $(settings_of "$1")" -c "SELECT count(*) || ':' || md5(string_agg(t::text, ',' ORDER BY t::text)) FROM ($2) t"; }
measure() {
	local args=(-c "$base $(settings_of "$1")") out plan ms
	for i in $(seq $((1 - warmup)) "$runs"); do
		args+=(-c "EXPLAIN (ANALYZE, TIMING OFF) $2")
	done
	out=$(psql_ "${args[@]}")
	plan=$(grep -oE 'Custom Scan \(Gpu[A-Za-z]+\)|Parallel Hash Join|Hash Join|Merge Join|Nested Loop|Chain: [0-9]+ joins in one pass' <<<"$out" |
		sort -u | paste -sd' ' -)
	ms=$(sed -n 's/^Execution Time: \([0-9.]*\) ms$/\1/p' <<<"$out" | tail -n +$((1 + warmup)) |
		sort -g | sed -n "$(((runs + 1) / 2))p")
	printf '%s,%s\n' "$plan" "$ms"
}

have=
if [ "$(psql_ -c "SELECT to_regclass('sf') IS NOT NULL AND to_regclass('sd4') IS NOT NULL")" = t ]; then
	have=$(psql_ -c "SELECT (SELECT count(*) FROM sf) || ' ' || (SELECT count(*) FROM sd4)")
fi
if [ "$have" != "$n $dim" ]; then
	psql_ -c "DROP TABLE IF EXISTS sf, sd1, sd2, sd3, sd4"
	for l in 1 2 3 4; do
		psql_ -c "CREATE TABLE sd$l AS SELECT g AS k, (g * $l) % 1000 AS a FROM generate_series(1, $dim) g" \
			-c "VACUUM ANALYZE sd$l"
	done
	range=$((dim + dim / 4))
	fact_rows() {
		echo "SELECT g AS id,
			(g::int8 * 7919) % $range + 1 AS k1, (g::int8 * 104729) % $range + 1 AS k2,
			(g::int8 * 1299709) % $range + 1 AS k3, (g::int8 * 15485863) % $range + 1 AS k4,
			g % 100 AS v
			FROM generate_series($1, $2) g"
	}
	psql_ -c "CREATE TABLE sf AS $(fact_rows 1 0)"
	pids=()
	for j in $(seq 0 $((jobs - 1))); do
		psql_ -c "INSERT INTO sf $(fact_rows $((n / jobs * j + 1)) $((j == jobs - 1 ? n : n / jobs * (j + 1))))" &
		pids+=($!)
	done
	for p in "${pids[@]}"; do
		wait "$p"
	done
	psql_ -c "VACUUM ANALYZE sf"
fi
echo "rows,dim_rows,levels,query,setting,plan,ms"
for l in $levels; do
	for qn in $queries; do
		q=$(query_of "$qn" "$l")
		want=$(digest pg_parallel_8 "$(reference_of "$qn" "$l")")
		for s in $settings; do
			if [ "$s" != pg_parallel_8 ] || [ "$qn" = rows ]; then
				got=$(digest "$s" "$q")
				if [ "$got" != "$want" ]; then
					echo "chain.sh: $s returned $got, PostgreSQL $want ($q)" >&2
					exit 1
				fi
			fi
			printf '%s,%s,%s,%s,%s,%s\n' "$n" "$dim" "$l" "$qn" "$s" "$(measure "$s" "$q")"
		done
		if [ "$explain_setting" != none ]; then
			printf '\n== %s rows, %s dimensions, %s: %s EXPLAIN ANALYZE\n' "$n" "$l" "$qn" "$explain_setting" >&2
			psql_ -c "$base $(settings_of "$explain_setting") SET gpujoin.explain_device = on;" \
				-c "EXPLAIN (ANALYZE) $q" >&2
		fi
	done
done
