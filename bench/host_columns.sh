#!/usr/bin/env bash
# bench/host_columns.sh: what a heap side's host columns cost a GPU join
#
#   bench/host_columns.sh > results.csv
#
# Against a running server with gpujoin (PGHOST/PGPORT/PGUSER/PGDATABASE as
# psql takes them).  A fact table of ROWS (6,000,000: TPC-H's lineitem at
# SF 1) rows with an int4 key, an int4 value, two numeric(15,2) columns and
# a text column, joined to a dimension table of DIM_ROWS (1,500,000) of
# which the filter keeps about MATCH_PERCENT (1) percent, so that few fact
# rows match, as in TPC-H's joins of lineitem.  The same join, forced onto
# the GPU (serial, the fact table the outer side read as heap pages,
# gpujoin.enable_preagg off so that the joined rows are formed), returns:
#	none		max(f.v): every column the device's
#	numeric1	max(f.n1): one numeric column, a host column of the fact side
#	numeric2	max(f.n1), max(f.n2): two
#	text		max(f.t): a text column
#	numeric2_fetch, text_fetch	numeric2 and text with gpujoin.heap_fetch = on:
#				each match's tuple fetched by tid instead (GpuJoinHeapFetch)
# each the median of RUNS (3) runs of EXPLAIN ANALYZE's Execution Time
# (TIMING OFF) after a warm-up in one session.  The difference to "none",
# over the fact rows and the host values of each, is what a host value of a
# heap side costs (gpujoin.heap_host_tuple_cost and heap_host_value_cost
# price it in HeapSideCost, planner_cost.c); for the _fetch settings, the
# difference over the matches is what fetching a match's tuple costs
# (gpujoin.heap_fetch_cost).  Every run's row is checked against
# PostgreSQL's own plan.
#
# Output: CSV on stdout: setting,rows,matches,host_values_per_row,ms,ns_per_host_value,ns_per_match
set -euo pipefail

runs=${RUNS:-3}
dev=${GJ_DEVICE:-gpu}
rows=${ROWS:-6000000}
dim_rows=${DIM_ROWS:-1500000}
pct=${MATCH_PERCENT:-1}
psql_() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }
psql_ -c "CREATE EXTENSION IF NOT EXISTS gpujoin" >/dev/null

if [ "$(psql_ -c "SELECT count(*) FROM pg_class WHERE relname = 'hc_fact'")" = 0 ] ||
	[ "$(psql_ -c "SELECT count(*) FROM hc_fact")" != "$rows" ]; then
	psql_ <<SQL
DROP TABLE IF EXISTS hc_fact, hc_dim;
CREATE TABLE hc_fact AS
SELECT (hashint4(g) & 2147483647) % $dim_rows AS k, g % 1000 AS v,
	((g % 100000) / 100.0)::numeric(15,2) AS n1, ((g % 11) / 100.0)::numeric(15,2) AS n2,
	(ARRAY['MAIL', 'SHIP', 'AIR', 'RAIL', 'TRUCK', 'FOB', 'REG AIR'])[1 + g % 7] AS t
FROM generate_series(1, $rows) g;
CREATE TABLE hc_dim AS SELECT g AS k, g % 100 AS p FROM generate_series(0, $dim_rows - 1) g;
VACUUM ANALYZE hc_fact, hc_dim;
SQL
fi

where="d.p < $pct"
base="SET jit = off; SET work_mem = '1GB'; SET max_parallel_workers_per_gather = 0;"
forced="$base SET gpujoin.device = $dev; SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_nestloop = off; SET gpujoin.enable_parallel = off; SET gpujoin.enable_preagg = off;"
matches=$(psql_ -c "$base SET gpujoin.enabled = off;" -c "SELECT count(*) FROM hc_fact f JOIN hc_dim d ON f.k = d.k WHERE $where")
echo "setting,rows,matches,host_values_per_row,ms,ns_per_host_value,ns_per_match"
none_ms=""
for s in none numeric1 numeric2 text numeric2_fetch text_fetch; do
	fetch="SET gpujoin.heap_fetch = off;"
	case $s in
	none) select="max(f.v)"; nhost=0 ;;
	numeric1) select="max(f.n1)"; nhost=1 ;;
	numeric2) select="max(f.n1), max(f.n2)"; nhost=2 ;;
	text) select="max(f.t)"; nhost=1 ;;
	numeric2_fetch) select="max(f.n1), max(f.n2)"; nhost=0; fetch="SET gpujoin.heap_fetch = on;" ;;
	text_fetch) select="max(f.t)"; nhost=0; fetch="SET gpujoin.heap_fetch = on;" ;;
	esac
	q="SELECT $select FROM hc_fact f JOIN hc_dim d ON f.k = d.k WHERE $where"
	want=$(psql_ -c "$base SET gpujoin.enabled = off;" -c "$q")
	args=(-c "$forced $fetch" -c "$q")
	for i in $(seq 1 "$runs"); do
		args+=(-c "EXPLAIN (ANALYZE, TIMING OFF) $q")
	done
	out=$(psql_ "${args[@]}")
	got=$(printf '%s\n' "$out" | sed -n 1p)
	if [ "$got" != "$want" ]; then
		echo "host_columns.sh: $s returned $got, PostgreSQL $want" >&2
		exit 1
	fi
	printf '%s\n' "$out" | grep -q 'GpuHashJoin' || { echo "host_columns.sh: $s is not a GPU join" >&2; exit 1; }
	ms=$(printf '%s\n' "$out" | sed -n 's/^Execution Time: \([0-9.]*\) ms$/\1/p' | sort -g | sed -n "$(((runs + 1) / 2))p")
	[ "$s" = none ] && none_ms=$ms
	per=$(awk -v ms="$ms" -v none="$none_ms" -v n="$rows" -v h="$nhost" \
		'BEGIN { if (h > 0) printf "%.1f", (ms - none) * 1e6 / (n * h); }')
	per_match=""
	case $s in *_fetch) per_match=$(awk -v ms="$ms" -v none="$none_ms" -v m="$matches" \
		'BEGIN { if (m > 0) printf "%.1f", (ms - none) * 1e6 / m; }') ;; esac
	echo "$s,$rows,$matches,$nhost,$ms,$per,$per_match"
done
