#!/usr/bin/env bash
# bench/cancel.sh: pg_cancel_backend from another session, during GPU joins
#
#   bench/cancel.sh [DELAY_S]
#
# Against a running server with gpujoin (psql's PGHOST/PGPORT/PGUSER, a
# superuser).  Starts a 10^10-match equi-join (10^5 x 10^5 rows of one key)
# with gpujoin forced (gpujoin.device as GJ_DEVICE says: gpu by default), whole
# and partitioned (gpujoin.device_memory_limit = 1MB), and a 10^10-pair
# theta join (NLJ), cancels each from a second session after DELAY_S (2)
# seconds, and prints how long after the cancel the query ended (psql's
# \timing of the cancelled statement less the delay), and whether the next
# GPU join in a fresh session is right.  Exit status 1 when a query was not
# cancelled or took more than a second to end.
set -euo pipefail

delay=${1:-2}
device=${GJ_DEVICE:-gpu}
psql -X -q -v ON_ERROR_STOP=1 <<'SQL'
CREATE EXTENSION IF NOT EXISTS gpujoin;
DROP TABLE IF EXISTS cn_a, cn_b;
CREATE TABLE cn_a AS SELECT g AS id, 1 AS k FROM generate_series(1, 100000) g;
CREATE TABLE cn_b AS SELECT g AS id, 1 AS k FROM generate_series(1, 100000) g;
ANALYZE cn_a, cn_b;
SQL
forced="LOAD 'gpujoin'; SET gpujoin.device = $device; SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_nestloop = off;"
status=0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
run_case() {
	local name=$1 setting=$2 query=$3
	psql -X -q -c "$forced $setting" -c '\timing on' -c "$query /* cancel me */" >"$work/out" 2>&1 &
	local client=$!
	sleep "$delay"
	psql -X -q -At -c "SELECT pg_cancel_backend(pid) FROM pg_stat_activity
		WHERE query LIKE '%cancel me%' AND pid <> pg_backend_pid()" >/dev/null
	wait "$client" || true
	local ms
	ms=$(sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' "$work/out" | tail -1)
	if grep -q 'canceling statement due to user request' "$work/out" && [ -n "$ms" ]; then
		local after
		after=$(awk -v t="$ms" -v d="$delay" 'BEGIN { printf "%.0f", t - d * 1000 }')
		echo "$name: cancelled, ended about ${after} ms after pg_cancel_backend (the statement's time less the delay; psql start-ups blur it by tens of ms)"
		[ "$after" -lt 1000 ] || status=1
	else
		echo "$name: NOT cancelled: $(tr '\n' ' ' <"$work/out")"
		status=1
	fi
}
run_case "hash join, 10^10 matches" "" "SELECT count(*) FROM cn_a JOIN cn_b ON cn_a.k = cn_b.k"
run_case "partitioned hash join (1 MB limit)" "SET gpujoin.device_memory_limit = '1MB';" \
	"SELECT count(*) FROM cn_a JOIN cn_b ON cn_a.k = cn_b.k"
run_case "theta join (NLJ), 10^10 pairs" "SET gpujoin.join_variant = nlj;" \
	"SELECT count(*) FROM cn_a JOIN cn_b ON cn_a.id > cn_b.id - 1000000"
n=$(psql -X -q -At -c "$forced" -c "SELECT count(*) FROM cn_a a JOIN cn_b b ON a.id = b.id")
echo "the next GPU join: $n rows (expected 100000)"
[ "$n" = 100000 ] || status=1
exit $status
