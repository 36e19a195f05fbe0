-- demo/setup.sql: the demo's tables, run by demo/run with psql -v rows=N -v workers=W
--
-- r(k, v) and s(k, v) have :rows rows each.  Each table's keys are 0 .. rows-1
-- in a different scrambled order (g * m mod rows, for a multiplier m prime
-- to rows, is a permutation), so r JOIN s ON r.k = s.k matches every row
-- exactly once and the probes go all over the inner table.
\set ON_ERROR_STOP on

SELECT m AS mul_r
FROM (VALUES (1000003), (999983), (1000000007), (998244353), (7919)) v(m)
WHERE gcd(m, :rows) = 1 LIMIT 1 \gset
SELECT m AS mul_s
FROM (VALUES (1000003), (999983), (1000000007), (998244353), (7919)) v(m)
WHERE gcd(m, :rows) = 1 OFFSET 1 LIMIT 1 \gset

-- CREATE TABLE AS in one transaction: with wal_level = minimal, no WAL
CREATE TABLE r WITH (parallel_workers = :workers, autovacuum_enabled = off) AS
SELECT ((g * :mul_r) % :rows)::int4 AS k, (g % 1000)::int4 AS v
FROM generate_series(0::int8, :rows - 1) g;
CREATE TABLE s WITH (parallel_workers = :workers, autovacuum_enabled = off) AS
SELECT ((g * :mul_s) % :rows)::int4 AS k, (g * 7 % 1000)::int4 AS v
FROM generate_series(0::int8, :rows - 1) g;
VACUUM (FREEZE, ANALYZE) r, s;

SELECT count(*) AS rows, count(DISTINCT k) AS distinct_keys, min(k), max(k),
	pg_size_pretty(pg_total_relation_size('r')) AS size
FROM r;
