-- test/006_device_memory_fallback.sql
--
-- Joins that do not fit gpujoin.device_memory_limit return the same rows:
-- a hash join whose inner side does not fit runs in partitions (test/014
-- covers those in depth), one whose outer chunks do not fit takes smaller
-- chunks, and a merge join, which cannot be partitioned, continues on the
-- CPU twin with one NOTICE when the device runs out.  The CPU twin
-- partitions and shrinks chunks under the limit as the GPU does, but has no
-- device memory to run out of.
BEGIN;
SELECT plan(12);
CREATE EXTENSION IF NOT EXISTS gpujoin;
LOAD 'gpujoin';
\ir helpers.psql

-- o: k = g % 50000, so keys 0..49999, 4 rows each
-- big: keys 1..100000 once each; small: keys 1..1000 once each
CREATE TABLE o (id int, k int4);
INSERT INTO o SELECT g, g % 50000 FROM generate_series(1, 200000) g;
CREATE TABLE big (id int, k int4);
INSERT INTO big SELECT g, g FROM generate_series(1, 100000) g;
CREATE TABLE small (id int, k int4);
INSERT INTO small SELECT g, g FROM generate_series(1, 1000) g;
ANALYZE o, big, small;

SELECT current_setting('gpujoin.device') = 'gpu' AS on_gpu \gset

\set qbig 'SELECT o.id, big.id AS bid FROM o JOIN big ON o.k = big.k'
\set qsmall 'SELECT o.id, small.id AS sid FROM o JOIN small ON o.k = small.k'
:postgres_join
CREATE TEMP TABLE expected_big AS :qbig;
CREATE TEMP TABLE expected_small AS :qsmall;
SELECT is((SELECT count(*) FROM expected_big), 199996::bigint,
	'the reference: keys 1..49999 match 4 rows each');
SELECT is((SELECT count(*) FROM expected_small), 4000::bigint,
	'the reference: keys 1..1000 match 4 rows each');

:gpu_join
SET LOCAL gpujoin.device_memory_limit = '1MB';
SET LOCAL gpujoin.chunk_rows = 200000;

-- the inner table (100000 rows, about 5 MB of device structures) does not
-- fit: a hash join takes partitions
SELECT matches(pg_temp.plan_analyze(:'qbig'), 'Partitions: \d+',
	'inner over the limit: the hash join runs in partitions');
SELECT doesnt_match(pg_temp.plan_analyze(:'qbig'), 'fell back',
	'inner over the limit: partitions keep the join on the device');
SELECT bag_eq(:'qbig', 'SELECT * FROM expected_big',
	'inner over the limit, partitioned: the same rows as PostgreSQL');

-- the table of 1000 rows fits; an outer chunk of 200000 rows does not, so
-- the chunks get smaller
SELECT cmp_ok(pg_temp.plan_number(pg_temp.plan_analyze(:'qsmall'), 'Chunks'), '>', 1::bigint,
	'outer chunk over the limit: smaller chunks');
SELECT doesnt_match(pg_temp.plan_analyze(:'qsmall'), 'Partitions|fell back',
	'outer chunk over the limit: no partitions, no fallback');
SELECT bag_eq(:'qsmall', 'SELECT * FROM expected_small',
	'outer chunk over the limit: the same rows as PostgreSQL');

-- a merge join (offered where its order is of use) cannot be partitioned:
-- on a GPU it runs out and falls back
SET LOCAL gpujoin.enable_hashjoin = off;
\set qbig_sorted :qbig ' ORDER BY o.k'
SELECT matches(pg_temp.plan(:'qbig_sorted'), 'GpuMergeJoin', 'the sorted join is a GpuMergeJoin');
\if :on_gpu
SELECT matches(pg_temp.plan_analyze(:'qbig_sorted'), 'Device: CPU \(fell back from the GPU',
	'merge join over the limit: EXPLAIN ANALYZE says it fell back to the CPU');
\else
SELECT matches(pg_temp.plan_analyze(:'qbig_sorted'), 'Device: CPU',
	'CPU twin: a merge join has no device memory to run out of');
\endif
SELECT bag_eq(:'qbig_sorted', 'SELECT * FROM expected_big',
	'merge join over the limit: the same rows as PostgreSQL');
RESET gpujoin.enable_hashjoin;

-- without the limit the GPU keeps the join whole
RESET gpujoin.device_memory_limit;
SELECT doesnt_match(pg_temp.plan_analyze(:'qbig'), 'fell back|Partitions',
	'without the limit: no fallback, no partitions');

SELECT * FROM finish();
ROLLBACK;
