#!/usr/bin/env bash
# bench/heapscan_in_place.sh: the serial GPU join of bench/heapscan.sh with
# its pages read in place in the shared buffers (gpujoin.heap_in_place on)
# and copied on the host (off), alternating in one session, so that both
# see the same machine, the same warm buffers and the same drift
#
#   bench/heapscan_in_place.sh > results.txt
#
# Against a running server with gpujoin (PGHOST/PGPORT/PGUSER/PGDATABASE as
# psql takes them) and the tables xr and xs of bench/heapscan.sh (run it
# first).  A warm-up, then PAIRS (4) pairs of EXPLAIN (ANALYZE, TIMING OFF),
# each printing its Execution Time, then 2 pairs with timing, which print
# the phases (load and its page reads, deform, emit).
set -euo pipefail

pairs=${PAIRS:-4}
dev=${GJ_DEVICE:-gpu}	# cpu: try the script where there is no GPU
q="SELECT count(*), sum(xr.v + xs.v) FROM xr JOIN xs ON xr.k = xs.k"
forced="SET jit = off; SET work_mem = '1GB'; SET gpujoin.device = $dev; SET enable_hashjoin = off;
SET enable_mergejoin = off; SET enable_nestloop = off; SET gpujoin.enable_parallel = off;
SET max_parallel_workers_per_gather = 0; SET gpujoin.explain_device = on;"
args=(-c "$forced" -c "$q")
for i in $(seq "$pairs"); do
	for ip in on off; do
		args+=(-c "SET gpujoin.heap_in_place = $ip" -c "SELECT 'in_place=$ip'"
			-c "EXPLAIN (ANALYZE, TIMING OFF) $q")
	done
done
for i in 1 2; do
	for ip in on off; do
		args+=(-c "SET gpujoin.heap_in_place = $ip" -c "SELECT 'in_place=$ip timing'"
			-c "EXPLAIN (ANALYZE) $q")
	done
done
psql -X -q -At -v ON_ERROR_STOP=1 "${args[@]}" | grep -E "in_place=|Pages:|Time: load|Execution"
