#!/usr/bin/env bash
# bench/partitioned.sh: a hash join whole on the device against the same
# join in partitions (a device memory limit it does not fit)
#
#   bench/partitioned.sh [ROWS [LIMIT_MB ...]]
#
# Against a running server with gpujoin (psql's PGHOST/PGPORT/PGUSER):
# count and sum of ROWS (10^7) x ROWS int4 rows, unique keys on both sides,
# gpujoin forced (on the GPU; GJ_DEVICE=cpu: the CPU twin), warm; for no limit and each LIMIT_MB (default
# 1024 256 64), the median of three EXPLAIN ANALYZE runs, the partitions and
# chunks it took, and the phase times of the first run.
set -euo pipefail

rows=${1:-10000000}
shift || true
limits=("$@")
[ ${#limits[@]} -gt 0 ] || limits=(1024 256 64)

psql -X -q -v ON_ERROR_STOP=1 <<SQL
CREATE EXTENSION IF NOT EXISTS gpujoin;
DROP TABLE IF EXISTS pt_r, pt_s;
CREATE TABLE pt_r AS SELECT g AS k, g AS v FROM generate_series(1, $rows) g ORDER BY random();
CREATE TABLE pt_s AS SELECT g AS k, g AS w FROM generate_series(1, $rows) g ORDER BY random();
ANALYZE pt_r, pt_s;
SQL
q="SELECT count(*), sum(v + w) FROM pt_r JOIN pt_s ON pt_r.k = pt_s.k"
forced="LOAD 'gpujoin'; SET jit = off; SET gpujoin.device = ${GJ_DEVICE:-gpu}; SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_nestloop = off; SET max_parallel_workers_per_gather = 0;"

echo "| device memory limit | median ms | partitions | chunks | phase times (first run) |"
echo "| --- | ---: | ---: | ---: | --- |"
for limit in 0 "${limits[@]}"; do
	out=$(psql -X -q -At -c "$forced SET gpujoin.device_memory_limit = '${limit}MB';" -c "$q" \
		-c "EXPLAIN ANALYZE $q" -c "EXPLAIN ANALYZE $q" -c "EXPLAIN ANALYZE $q")
	med=$(printf '%s\n' "$out" | sed -n 's/^Execution Time: \([0-9.]*\) ms$/\1/p' | sort -g | sed -n 2p)
	parts=$(printf '%s\n' "$out" | grep -m1 -o 'Partitions: [0-9]*' | grep -o '[0-9]*' || echo 1)
	chunks=$(printf '%s\n' "$out" | grep -m1 -o 'Chunks: [0-9]*' | grep -o '[0-9]*')
	phases=$(printf '%s\n' "$out" | grep -m1 -o 'Time: load=.*' | sed 's/^Time: //')
	fell=$(grep -q 'fell back' <<<"$out" && echo " (fell back to the CPU)" || true)
	name=$([ "$limit" = 0 ] && echo "none (whole)" || echo "$limit MB")
	echo "| $name | $med$fell | $parts | $chunks | $phases |"
done
