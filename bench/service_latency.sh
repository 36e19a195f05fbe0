#!/usr/bin/env bash
# bench/service_latency.sh: where a small GPU join's time goes, in the
# session and through the gpujoin service
#
#   PGDATA=... SERVER_LOG=... bench/service_latency.sh
#
# Restarts the server (pg_ctl -D "$PGDATA"; gpujoin in
# shared_preload_libraries) with gpujoin.service = off, then on (ALTER
# SYSTEM), and in one session of each runs two joins of 100,000 x 1,000
# rows, gpujoin forced (gpujoin.device as GJ_DEVICE says, gpu by default):
# count(*) (8 times) and a filtered sum (5 times), with psql's \timing,
# then EXPLAIN ANALYZE VERBOSE of each.  With the service, also the
# requests one join makes, and the service's own account of each request
# (log_min_messages = debug1 for a moment: the time to a worker thread, in
# it, and back to the session).  Leaves gpujoin.service as it found it.
set -euo pipefail
: "${PGDATA:?set PGDATA to the data directory of the server}"
: "${SERVER_LOG:?set SERVER_LOG to the server log file}"
dev=${GJ_DEVICE:-gpu}
q="SELECT count(*) FROM sl_a JOIN sl_b ON sl_a.k = sl_b.k"
q2="SELECT sum(sl_a.id + sl_b.id) FROM sl_a JOIN sl_b ON sl_a.k = sl_b.k WHERE sl_a.id % 2 = 0"
forced="SET gpujoin.device = $dev; SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_nestloop = off; SET max_parallel_workers_per_gather = 0;"
psql_() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }

psql_ -c "CREATE EXTENSION IF NOT EXISTS gpujoin" -c "DROP TABLE IF EXISTS sl_a, sl_b" \
	-c "CREATE TABLE sl_a AS SELECT g AS id, g % 1000 AS k FROM generate_series(1, 100000) g" \
	-c "CREATE TABLE sl_b AS SELECT g AS id, g AS k FROM generate_series(1, 1000) g" \
	-c "VACUUM ANALYZE sl_a, sl_b"
for service in off on; do
	echo "######## gpujoin.service = $service"
	psql_ -c "ALTER SYSTEM SET gpujoin.service = $service"
	pg_ctl -D "$PGDATA" -l "$SERVER_LOG" -w restart >/dev/null
	sleep 2	# the service starts once the server is consistent
	psql_ <<SQL
$forced
\\timing on
$q; $q; $q; $q; $q; $q; $q; $q;
$q2; $q2; $q2; $q2; $q2;
\\timing off
SELECT coalesce(service_requests, 0) AS r0 FROM gpujoin_device_info() \\gset
$q;
SELECT coalesce(service_requests, 0) - :r0 - 1 AS requests_per_count_join FROM gpujoin_device_info();
SELECT coalesce(service_requests, 0) AS r0 FROM gpujoin_device_info() \\gset
$q2;
SELECT coalesce(service_requests, 0) - :r0 - 1 AS requests_per_sum_join FROM gpujoin_device_info();
EXPLAIN (ANALYZE, VERBOSE, COSTS OFF) $q;
EXPLAIN (ANALYZE, VERBOSE, COSTS OFF) $q2;
SQL
	if [ "$service" = on ]; then
		psql_ -c "ALTER SYSTEM SET log_min_messages = debug1" -c "SELECT pg_reload_conf()" >/dev/null
		sleep 1
		n0=$(wc -l <"$SERVER_LOG")
		psql_ -At -c "$forced" -c "$q" -c "$q" -c "$q2" -c "$q2" >/dev/null
		psql_ -c "ALTER SYSTEM RESET log_min_messages" -c "SELECT pg_reload_conf()" >/dev/null
		echo "== the service's account of each request (the last two joins of each kind)"
		tail -n +"$n0" "$SERVER_LOG" | grep "gpujoin service: " | sed 's/.*gpujoin service: //'
	fi
done
psql_ -c "ALTER SYSTEM RESET gpujoin.service"
pg_ctl -D "$PGDATA" -l "$SERVER_LOG" -w restart >/dev/null
