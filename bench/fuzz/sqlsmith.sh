#!/usr/bin/env bash
# bench/fuzz/sqlsmith.sh: random queries against gpujoin, counting crashes
#
#   bench/fuzz/sqlsmith.sh [QUERIES [SEED]]
#
# Against a running server with gpujoin installed (psql's PGHOST/PGPORT/
# PGUSER, a superuser; the role below loads gpujoin in each session): creates a database "gpujoin_fuzz" of
# varied tables (integers, numeric, floats with NaN and -0, text, dates,
# timestamps, intervals, uuid, bool, NULLs, an empty table) and a role
# "gpujoin_fuzz" that runs with gpujoin forced (core join methods off,
# gpujoin.device as GJ_DEVICE says, cpu by default, 500-row chunks) and a
# 2 s statement_timeout, then runs sqlsmith (Debian's sqlsmith package,
# apt-get installed when missing and run as root) for QUERIES queries
# (10000) from SEED (42).  Prints how many queries ran, how many of those
# sqlsmith generated plan a GPU join (EXPLAIN of its --dry-run output), and
# how many backends the server log reports as crashed (must be 0; the exit
# status is 1 otherwise).  Set SERVER_LOG to the server's log file.
set -euo pipefail

queries=${1:-10000}
seed=${2:-42}
device=${GJ_DEVICE:-cpu}
log=${SERVER_LOG:?set SERVER_LOG to the server log file}

if ! command -v sqlsmith >/dev/null; then
	[ "$(id -u)" = 0 ] || { echo "sqlsmith.sh: needs sqlsmith (apt-get install sqlsmith)" >&2; exit 1; }
	apt-get install -y -q sqlsmith >/dev/null
fi

psql -X -q -v ON_ERROR_STOP=1 -d postgres <<SQL
DROP DATABASE IF EXISTS gpujoin_fuzz;
DROP ROLE IF EXISTS gpujoin_fuzz;
CREATE ROLE gpujoin_fuzz LOGIN;
CREATE DATABASE gpujoin_fuzz OWNER gpujoin_fuzz;
ALTER ROLE gpujoin_fuzz SET statement_timeout = '2s';
-- gpujoin in every session of the role, whatever the server preloads
ALTER ROLE gpujoin_fuzz SET session_preload_libraries = 'gpujoin';
ALTER ROLE gpujoin_fuzz SET gpujoin.device = '$device';
ALTER ROLE gpujoin_fuzz SET enable_hashjoin = off;
ALTER ROLE gpujoin_fuzz SET enable_mergejoin = off;
ALTER ROLE gpujoin_fuzz SET enable_nestloop = off;
ALTER ROLE gpujoin_fuzz SET gpujoin.chunk_rows = 500;
SQL
psql -X -q -v ON_ERROR_STOP=1 -d gpujoin_fuzz -U gpujoin_fuzz <<'SQL'
SELECT setseed(0.42);
CREATE TABLE t_int (id int, a int2, b int4, c int8, d numeric(10,2), e float8, f text);
INSERT INTO t_int SELECT g, (g % 50)::int2, g % 300, (g % 77)::int8 * 1000000000, (g % 40) / 4.0, (g % 30) / 3.0, 'v' || (g % 60)
FROM generate_series(1, 3000) g;
INSERT INTO t_int VALUES (-1, NULL, NULL, NULL, NULL, 'NaN', NULL), (-2, 32767, -2147483648, 9223372036854775807, 'NaN', '-0', '');
CREATE TABLE t_time (id int, d date, ts timestamp, tz timestamptz, t time, iv interval, u uuid, bo bool);
INSERT INTO t_time SELECT g, date '2020-01-01' + g % 400, timestamp '2020-01-01' + g * interval '1 hour',
	timestamptz '2020-01-01 00:00+00' + g * interval '90 min', time '00:00' + g * interval '7 min', g * interval '1 day',
	md5((g % 100)::text)::uuid, g % 3 = 0
FROM generate_series(1, 2000) g;
INSERT INTO t_time VALUES (-1, 'infinity', '-infinity', 'infinity', '24:00', NULL, NULL, NULL);
CREATE TABLE t_str (id int, s varchar(20), c char(8), by bytea, n numeric, o oid);
INSERT INTO t_str SELECT g, 'x' || (g % 80), (g % 90)::text, decode(md5((g % 70)::text), 'hex'), (g % 55) / 5.0,
	(g::int8 * 1000000)::oid
FROM generate_series(1, 2500) g;
CREATE TABLE t_small (id int, k int, v text);
INSERT INTO t_small SELECT g, g % 10, 's' || g FROM generate_series(1, 50) g;
CREATE TABLE t_empty (id int, k int, v text);
ANALYZE t_int, t_time, t_str, t_small, t_empty;
SQL

crashes_before=$(grep -c "terminated by signal" "$log" || true)
target="host=${PGHOST:-/tmp} port=${PGPORT:-5432} dbname=gpujoin_fuzz user=gpujoin_fuzz"
sqlsmith --target="$target" --max-queries="$queries" --seed="$seed" >/dev/null 2>&1 || true
ran=$(psql -X -At -d postgres -c "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = 'gpujoin_fuzz'")

# how many of the generated queries plan a GPU join (VERBOSE: EXPLAIN then
# deparses every output list, through the GPU join's scan tuple too)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sqlsmith --target="$target" --max-queries="$queries" --seed="$seed" --dry-run >"$work/q.sql" 2>/dev/null || true
awk 'BEGIN { RS = ";\n"; print "\\set ON_ERROR_STOP off" } NF { print "EXPLAIN (VERBOSE, COSTS OFF) " $0 ";" }' "$work/q.sql" >"$work/e.sql"
psql -X -q -d gpujoin_fuzz -U gpujoin_fuzz -f "$work/e.sql" >"$work/e.out" 2>/dev/null || true
planned=$(grep -c "QUERY PLAN" "$work/e.out" || true)
gpu=$(awk '/QUERY PLAN/ { if (seen) n++; seen = 0 } /Custom Scan \(Gpu/ { seen = 1 } END { if (seen) n++; print n + 0 }' "$work/e.out")
# counted after the EXPLAIN pass too: EXPLAIN deparses the plan, and a crash
# there (an assertion in an --enable-cassert build) ends the pass, so that the
# counts above cover only the statements before it
sleep 2
crashes=$(( $(grep -c "terminated by signal" "$log" || true) - crashes_before ))

echo "sqlsmith: $queries queries (seed $seed, device $device), $ran transactions in the database"
echo "of the generated queries, $planned planned and $gpu of those with a GPU join"
echo "backends crashed: $crashes"
[ "$crashes" = 0 ]
