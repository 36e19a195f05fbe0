-- test/015_cancel_hash_join.sql
--
-- Cancel during an equi-join (test/008 does theta joins): a 200 ms
-- statement_timeout ends the query within a second of firing while the
-- inner side is being read, while a partitioned join reads its outer side
-- into partitions, and while a join of 10^10 matches is probed and its rows
-- emitted, for each variant.  After each cancel the session's next GPU join
-- returns the right rows, and on a GPU the device memory in use is back
-- where it was before (gpujoin_device_info(): the device context is freed
-- by its memory-context callback, not by EndGpuJoin, which a cancel skips).
-- Also: a partitioned join one of whose keys has more inner rows than a
-- partition can hold still returns PostgreSQL's rows (on a GPU that
-- partition runs out of device memory and is joined on the CPU, and the
-- next partitions go back to the GPU).
BEGIN;
SELECT plan(22);
CREATE EXTENSION IF NOT EXISTS gpujoin;
LOAD 'gpujoin';
\ir helpers.psql
SET LOCAL client_min_messages = warning;

SELECT current_setting('gpujoin.device') = 'gpu' AS on_gpu \gset

-- every row has key 1: 10^5 x 10^5 = 10^10 matches
CREATE TABLE ha AS SELECT g AS id, 1 AS k FROM generate_series(1, 100000) g;
CREATE TABLE hb AS SELECT g AS id, 1 AS k FROM generate_series(1, 100000) g;
CREATE TABLE small AS SELECT g AS id, g % 100 AS k FROM generate_series(1, 2000) g;
ANALYZE ha, hb, small;

-- device memory in use now (0 without a GPU)
CREATE FUNCTION pg_temp.device_used() RETURNS bigint
LANGUAGE sql AS $$
	SELECT CASE WHEN current_setting('gpujoin.device') = 'gpu'
		THEN (SELECT total_memory - free_memory FROM gpujoin_device_info()) ELSE 0 END
$$;

\set qcheck 'SELECT count(*) FROM small a JOIN small b ON a.k = b.k'
\set qhuge 'SELECT count(*) FROM ha JOIN hb ON ha.k = hb.k'
:gpu_join
-- a first GPU join, so that CUDA's own memory is in the baseline
SELECT is((:qcheck), 40000::bigint, 'a small GPU join: 2000 rows, 100 keys, 40000 matches');
SELECT pg_temp.device_used() AS baseline \gset

-- probe and emit: 10^10 matches, every variant
SELECT matches(pg_temp.plan(:'qhuge'), 'Gpu(HashJoin|PreAgg)', 'the 10^10-match join is a GPU hash join (or aggregated on the device)');
SET LOCAL statement_timeout = '200ms';
SET LOCAL gpujoin.join_variant = nphj;
SELECT cmp_ok(pg_temp.time_to_cancel(:'qhuge'), '<', interval '1200 ms',
	'NPHJ, 10^10 matches: ends within a second of a 200 ms timeout');
SET LOCAL gpujoin.join_variant = phj;
SELECT cmp_ok(pg_temp.time_to_cancel(:'qhuge'), '<', interval '1200 ms',
	'PHJ, 10^10 matches: ends within a second of a 200 ms timeout');
SET LOCAL gpujoin.join_variant = smj;
SELECT cmp_ok(pg_temp.time_to_cancel(:'qhuge'), '<', interval '1200 ms',
	'SMJ, 10^10 matches: ends within a second of a 200 ms timeout');
RESET gpujoin.join_variant;
-- a GpuMergeJoin (sorted output wanted) hands out its matches in rounds too
SET LOCAL gpujoin.enable_hashjoin = off;
\set qhuge_sorted 'SELECT count(*) FROM (SELECT ha.id FROM ha JOIN hb ON ha.k = hb.k ORDER BY ha.k) s'
SELECT cmp_ok(pg_temp.time_to_cancel(:'qhuge_sorted'), '<', interval '1200 ms',
	'GpuMergeJoin, 10^10 matches: ends within a second of a 200 ms timeout');
SET LOCAL statement_timeout = 0;
SELECT matches(pg_temp.plan(:'qhuge_sorted'), 'GpuMergeJoin', 'that join is a GpuMergeJoin');
RESET gpujoin.enable_hashjoin;
SELECT is((:qcheck), 40000::bigint, 'after the cancels: the next GPU join is right');
SELECT cmp_ok(abs(pg_temp.device_used() - :baseline), '<', 64 * 1024 * 1024::bigint,
	'after the cancels: device memory in use back to the baseline (within 64 MB)');

-- the inner side being read: a slow scan
\set qslow_inner 'SELECT count(*) FROM small JOIN (SELECT g AS k, pg_sleep(0.001) AS s FROM generate_series(1, 100000) g) slow ON small.k = slow.k'
SET LOCAL statement_timeout = '200ms';
SELECT cmp_ok(pg_temp.time_to_cancel(:'qslow_inner'), '<', interval '1200 ms',
	'a slow side being loaded: ends within a second of a 200 ms timeout');
SET LOCAL statement_timeout = 0;
SELECT matches(pg_temp.plan(:'qslow_inner'), 'Gpu(HashJoin|PreAgg)', 'the slow join is a GPU hash join (or aggregated on the device)');

-- a partitioned join reading its outer side into partitions
SET LOCAL gpujoin.device_memory_limit = '1MB';
\set qslow_parts 'SELECT count(*) FROM (SELECT g % 50000 AS k, pg_sleep(0.0001) AS s FROM generate_series(1, 1000000) g) slow JOIN hb_spread ON slow.k = hb_spread.k'
CREATE TABLE hb_spread AS SELECT g AS id, g AS k FROM generate_series(1, 100000) g;
ANALYZE hb_spread;
SET LOCAL statement_timeout = '200ms';
SELECT cmp_ok(pg_temp.time_to_cancel(:'qslow_parts'), '<', interval '1200 ms',
	'a partitioned join reading a slow side: ends within a second of a 200 ms timeout');
SET LOCAL statement_timeout = 0;
SELECT matches(pg_temp.plan_analyze(
	'SELECT count(*) FROM (SELECT g % 50000 AS k FROM generate_series(1, 200000) g) o JOIN hb_spread ON o.k = hb_spread.k'),
	'Partitions: \d+', 'the same shape, faster, runs in partitions');
SELECT is((:qcheck), 40000::bigint, 'after that cancel: the next GPU join is right');

-- partitioned, in the middle of its 10^10 matches
SET LOCAL statement_timeout = '200ms';
SELECT cmp_ok(pg_temp.time_to_cancel(:'qhuge'), '<', interval '1200 ms',
	'10^10 matches under a 1 MB limit: ends within a second of a 200 ms timeout');
SET LOCAL statement_timeout = 0;
SELECT is((:qcheck), 40000::bigint, 'after that cancel: the next GPU join is right');
RESET gpujoin.device_memory_limit;
SELECT cmp_ok(abs(pg_temp.device_used() - :baseline), '<', 64 * 1024 * 1024::bigint,
	'after every cancel: device memory in use back to the baseline (within 64 MB)');

-- one key in half the inner rows: partitions cannot split it, the rows stay right
CREATE TABLE skew_a AS SELECT g AS id, CASE WHEN g % 100 = 0 THEN 5 ELSE g END AS k
	FROM generate_series(1, 20000) g;
CREATE TABLE skew_b AS SELECT g AS id, CASE WHEN g % 2 = 0 THEN 5 ELSE g END AS k
	FROM generate_series(1, 40000) g;
ANALYZE skew_a, skew_b;
\set qskew 'SELECT count(*), sum(skew_a.id::int8 * skew_b.id) FROM skew_a LEFT JOIN skew_b ON skew_a.k = skew_b.k'
:postgres_join
SELECT pg_temp.rows_digest(:'qskew') AS skew_ref \gset
:gpu_join
SET LOCAL gpujoin.device_memory_limit = '1MB';
SELECT matches(pg_temp.plan_analyze(:'qskew'), 'Partitions: \d+',
	'a skewed join over the limit runs in partitions');
SELECT is(pg_temp.rows_digest(:'qskew'), :'skew_ref',
	'a skewed partitioned join (one key in half the inner rows, more than a partition holds): the same rows as PostgreSQL');

-- one key in most rows of the (smaller, so inner) side: on a GPU its
-- partition cannot fit 1 MB (125,000 keys and ids alone are 1.5 MB) and is
-- joined on the CPU, the others on the GPU
CREATE TABLE hot_in AS SELECT g AS id, CASE WHEN g <= 125000 THEN 5 ELSE g END AS k
	FROM generate_series(1, 150000) g;
CREATE TABLE hot_out AS SELECT g AS id, CASE WHEN g % 20000 = 0 THEN 5 ELSE g END AS k
	FROM generate_series(1, 300000) g;
ANALYZE hot_in, hot_out;
\set qhot 'SELECT count(*), sum(hot_in.id::int8 * hot_out.id) FROM hot_out JOIN hot_in ON hot_out.k = hot_in.k'
:postgres_join
SELECT pg_temp.rows_digest(:'qhot') AS hot_ref \gset
:gpu_join
SET LOCAL gpujoin.device_memory_limit = '1MB';
SELECT pg_temp.plan_analyze(:'qhot') AS hot_plan \gset
SELECT matches(:'hot_plan'::text, 'Partitions: \d+', 'a join with one hot key over the limit runs in partitions');
SELECT is(substring(:'hot_plan'::text from '(\d+) partitions? joined on the CPU'),
		  CASE WHEN :'on_gpu' THEN '1' END,
	'on a GPU, only the hot key''s partition is joined on the CPU; the next ones go back to the GPU');
SELECT is(pg_temp.rows_digest(:'qhot'), :'hot_ref', 'the hot-key join: the same rows as PostgreSQL');

SELECT * FROM finish();
ROLLBACK;
