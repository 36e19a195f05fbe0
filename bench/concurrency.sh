#!/usr/bin/env bash
# bench/concurrency.sh: many sessions running GPU joins at once
#
#   bench/concurrency.sh [CLIENTS [SECONDS]]
#
# Against a running server with gpujoin (psql's PGHOST/PGPORT/PGUSER; set
# SERVER_LOG to its log file): CLIENTS sessions (32) run GPU joins for
# SECONDS (20) with pgbench, gpujoin forced (core join methods off,
# gpujoin.device as GJ_DEVICE says: gpu by default, cpu where there is
# none).  Each transaction joins 200,000 x 50,000 rows on a key picked at
# random and checks its count against the known answer (a wrong count is a
# division by zero, which pgbench counts as a failed client), so every join
# must be right or end in a clean error.  Prints pgbench's summary, the
# aborted clients, and the backends the server log reports as crashed (the
# exit status is 1 unless both are 0).  With a GPU, also the device memory
# in use (nvidia-smi) before the run, at its end, and 5 s later.  Then
# (PG=0 skips it) the same clients run the same transactions for as long
# with PostgreSQL's own plans (gpujoin.enabled off, every join method on),
# and the two throughputs are compared.
set -euo pipefail

clients=${1:-32}
seconds=${2:-20}
device=${GJ_DEVICE:-gpu}
log=${SERVER_LOG:?set SERVER_LOG to the server log file}
PGBENCH=${PGBENCH:-$(command -v pgbench || echo /usr/lib/postgresql/15/bin/pgbench)}

psql -X -q -v ON_ERROR_STOP=1 <<'SQL'
CREATE EXTENSION IF NOT EXISTS gpujoin;
DROP TABLE IF EXISTS cc_a, cc_b;
CREATE TABLE cc_a AS SELECT g AS id, g % 1000 AS k FROM generate_series(1, 200000) g;
CREATE TABLE cc_b AS SELECT g AS id, g % 1000 AS k FROM generate_series(1, 50000) g;
ANALYZE cc_a, cc_b;
SQL

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# keys 0..999, 200 rows each in cc_a, 50 in cc_b: any 1000 consecutive
# cc_a rows hold every key once and match 50,000 pairs; all of cc_a 10^7
cat >"$work/join.sql" <<'SQL'
\set lo random(1, 199001)
SELECT 1 / (count(*) = 50000)::int FROM cc_a JOIN cc_b ON cc_a.k = cc_b.k WHERE cc_a.id BETWEEN :lo AND :lo + 999;
SELECT 1 / (count(*) = 10000000)::int FROM cc_a JOIN cc_b ON cc_a.k = cc_b.k;
SQL

for q in "SELECT count(*) FROM cc_a JOIN cc_b ON cc_a.k = cc_b.k WHERE cc_a.id BETWEEN 1 AND 1000" \
	"SELECT count(*) FROM cc_a JOIN cc_b ON cc_a.k = cc_b.k"; do
	PGOPTIONS="-c gpujoin.device=$device -c enable_hashjoin=off -c enable_mergejoin=off -c enable_nestloop=off" \
		psql -X -At -c "LOAD 'gpujoin'" -c "EXPLAIN (COSTS OFF) $q" | grep -E 'Gpu(HashJoin|PreAgg)' >/dev/null ||
		{ echo "concurrency.sh: not a GPU join: $q" >&2; exit 1; }
done

mem() { nvidia-smi --query-gpu=memory.used --format=csv,noheader 2>/dev/null | head -1 || echo n/a; }
crashes_before=$(grep -c "terminated by signal" "$log" || true)
before=$(mem)
export PGOPTIONS="-c session_preload_libraries=gpujoin -c gpujoin.device=$device -c enable_hashjoin=off -c enable_mergejoin=off -c enable_nestloop=off -c gpujoin.chunk_rows=65536"
"$PGBENCH" -n -c "$clients" -j "$clients" -T "$seconds" -f "$work/join.sql" >"$work/out" 2>&1 || true
after=$(mem)
sleep 5
settled=$(mem)
crashes=$(( $(grep -c "terminated by signal" "$log" || true) - crashes_before ))
aborted=$(grep -c "aborted in command" "$work/out" || true)
echo "== gpujoin"
grep -E "number of clients|number of transactions actually processed|number of failed|latency average|tps" "$work/out" || cat "$work/out"
echo "clients aborted: $aborted"
echo "backends crashed: $crashes"
echo "device memory in use: before $before, at the end $after, 5 s later $settled"
tps() { sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$1" | head -1; }
if [ "${PG:-1}" != 0 ]; then
	PGOPTIONS="-c gpujoin.enabled=off" \
		"$PGBENCH" -n -c "$clients" -j "$clients" -T "$seconds" -f "$work/join.sql" >"$work/pg" 2>&1 || true
	pg_aborted=$(grep -c "aborted in command" "$work/pg" || true)
	echo "== PostgreSQL's own plans"
	grep -E "number of transactions actually processed|number of failed|latency average|tps" "$work/pg" || cat "$work/pg"
	echo "clients aborted: $pg_aborted"
	awk -v g="$(tps "$work/out")" -v p="$(tps "$work/pg")" \
		'BEGIN { if (g > 0 && p > 0) printf "throughput: gpujoin %.1f tps, PostgreSQL %.1f tps, ratio %.2f\n", g, p, g / p }'
fi
[ "$aborted" = 0 ] && [ "$crashes" = 0 ]
