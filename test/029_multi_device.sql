-- test/029_multi_device.sql
--
-- Joins spread over several devices (cuda/device/spread.c; src/device.c's
-- GpuJoinSpreadSpec): broadcast (every device builds the whole inner side
-- and probes a slice of each chunk) or partitioned by key (the rows of
-- both sides go to the device their key hashes to).
-- gpujoin.logical_devices splits the device, or the CPU twin, into 1, 2 and
-- 3 logical devices (odd on purpose), so the spreading, the row numbers
-- turned back and the groups of several devices combined run in CI.
-- Differential: every join type on int4, int8, text (hashed) and two-column
-- keys, with duplicate keys, NULL keys on both sides, a skewed key and NULL
-- payloads, plus a join filter, an empty inner side, a band join, a merge
-- join, joins in host partitions, GpuPreAgg groups and a fall back to the
-- CPU twin in the middle of a join, each way, must return PostgreSQL's rows.
-- One device that fails its count fails the query with 58000 naming the
-- device (or, out of device memory, the join goes on on the CPU twin), and
-- the next query runs.
-- EXPLAIN shows the spread and, under ANALYZE, each device's rows and
-- matches, which add up to the join's.
BEGIN;
SELECT plan(44);
CREATE EXTENSION IF NOT EXISTS gpujoin;
LOAD 'gpujoin';
\ir helpers.psql
SET LOCAL client_min_messages = warning;
SET LOCAL max_parallel_workers_per_gather = 0;
SET LOCAL gpujoin.cost_as_gpu = on;
SET LOCAL gpujoin.explain_device = on;
-- one physical device, whatever the host has: the logical ones are the test's
SET LOCAL gpujoin.devices = '0';

SELECT current_setting('gpujoin.device') = 'gpu' AS on_gpu \gset

-- r (outer, 30000 rows) and s (inner, 20000 rows), e empty (helpers.psql)
SELECT pg_temp.make_join_tables(30000, 20000);

SELECT pg_temp.make_join_queries(ARRAY['inner', 'left', 'right', 'full', 'semi', 'anti']);
INSERT INTO q VALUES
	('inner join with a join filter',
	 'SELECT r.id, s.id AS sid FROM r JOIN s ON r.k8 = s.k8 AND r.id < s.id'),
	('left join, empty inner side',
	 'SELECT r.id, e.id AS eid FROM r LEFT JOIN e ON r.k = e.k'),
	('band join',
	 'SELECT r.id, s.id AS sid FROM r JOIN s ON s.k8 BETWEEN r.k8 - 2 AND r.k8 + 2 WHERE r.id % 7 = 0'),
	('groups of a join',
	 'SELECT s.k8 % 100 AS g, count(*), sum(r.k), min(r.v), max(s.w) FROM r JOIN s ON r.k = s.k GROUP BY 1'),
	('one group of a join',
	 'SELECT count(*), sum(r.k8), avg(r.k) FROM r JOIN s ON r.k8 = s.k8'),
	('one group, every match on one device when partitioned',
	 'SELECT count(*), min(r.v), min(r.id), max(-r.id), sum(s.k8) FROM r JOIN s ON r.k = s.k WHERE r.id % 50 = 0');

-- PostgreSQL's rows
:postgres_join
CREATE TEMP TABLE ref AS SELECT name, pg_temp.rows_digest(sql) AS digest FROM q;

-- gpujoin forced, over 1, 2 and 3 logical devices, broadcast and partitioned
:gpu_join
CREATE TEMP TABLE got (devices int, spread text, name text, digest text, plan text);
CREATE FUNCTION pg_temp.run_spread(devices int, spread text) RETURNS void
LANGUAGE plpgsql AS $f$
BEGIN
	PERFORM set_config('gpujoin.logical_devices', devices::text, true);
	PERFORM set_config('gpujoin.multi_device', spread, true);
	INSERT INTO got
	SELECT devices, spread, name, pg_temp.rows_digest(sql), pg_temp.plan_analyze(sql) FROM q;
END
$f$;
SELECT pg_temp.run_spread(n, m)
FROM generate_series(1, 3) n, unnest(ARRAY['broadcast', 'partition']) m;

SELECT is((SELECT string_agg(q.name, ', ' ORDER BY q.name)
			FROM q JOIN ref USING (name)
			LEFT JOIN got ON got.name = q.name AND got.devices = d.n AND got.spread = d2.m
			WHERE got.digest IS DISTINCT FROM ref.digest), NULL,
	format('%s logical device(s), %s: every query returns PostgreSQL''s rows', d.n, d2.m))
FROM generate_series(1, 3) d(n), unnest(ARRAY['broadcast', 'partition']) d2(m) ORDER BY d.n, d2.m;

-- the plans ran on gpujoin's nodes, and one device shows no spread
SELECT is(count(*), 0::bigint, 'every query ran a GPU join node')
FROM got WHERE plan !~ 'Custom Scan \(Gpu';
SELECT is(count(*), 0::bigint, 'one logical device: no spread')
FROM got WHERE devices = 1 AND plan ~ 'Spread:';

-- the spread each join took
SELECT is((SELECT string_agg(got.name, ', ' ORDER BY got.name) FROM got
			WHERE got.devices = d.n AND got.spread = d2.m
				AND plan !~ format('Spread: %s over %s logical devices \(%s\)',
					CASE WHEN d2.m = 'partition' AND got.name <> 'band join'
						THEN 'partitioned by key' ELSE 'broadcast' END,
					d.n, CASE WHEN :'on_gpu'::boolean THEN 'GPU 0(, GPU 0)+' ELSE 'CPU' END)),
	NULL, format('%s logical devices, %s: the joins spread so, the band join broadcast', d.n, d2.m))
FROM generate_series(2, 3) d(n), unnest(ARRAY['broadcast', 'partition']) d2(m) ORDER BY d.n, d2.m;

-- each device's rows and matches: as many devices, the matches add up to
-- the join's, and every device took rows
CREATE TEMP TABLE per AS
SELECT devices, spread, name, plan,
	(regexp_match(plan, 'Per Device: ([^\n]*)'))[1] AS per_device,
	pg_temp.plan_number(plan, 'Matches') AS matches
FROM got WHERE devices > 1;
SELECT is(count(*), 0::bigint, 'per device: one entry per device')
FROM per
WHERE array_length(regexp_split_to_array(per_device, '  '), 1) IS DISTINCT FROM devices;
SELECT is(count(*), 0::bigint, 'per device: the matches add up to the join''s')
FROM per
WHERE matches IS DISTINCT FROM (
	SELECT sum(m[1]::bigint) FROM regexp_matches(per_device, 'matches=(\d+)', 'g') m);
SELECT is(count(*), 0::bigint, 'per device: every device took rows (but for the empty inner side)')
FROM per, regexp_matches(per_device, 'rows=(\d+)', 'g') m
WHERE m[1]::bigint = 0 AND name NOT LIKE '%empty%';
SELECT is(count(*), 0::bigint, 'a spread exchanges bytes (but for the empty inner side)')
FROM per WHERE coalesce(pg_temp.plan_number(plan, 'Exchanged'), 0) <= 0 AND name NOT LIKE '%empty%';

-- broadcast, every device took the whole inner side and its slice of the
-- outer rows; partitioned, each row at most once
SELECT is(count(*), 0::bigint, 'broadcast: the whole inner side on every device, the outer rows once')
FROM per
WHERE spread = 'broadcast' AND (SELECT sum(m[1]::bigint) FROM regexp_matches(per_device, 'rows=(\d+)', 'g') m)
	IS DISTINCT FROM pg_temp.plan_number(plan, 'Outer Rows') + devices * pg_temp.plan_number(plan, 'Inner Rows');
SELECT is(count(*), 0::bigint, 'partitioned: every row on one device at most')
FROM per
WHERE spread = 'partition' AND name <> 'band join'
	AND (SELECT sum(m[1]::bigint) FROM regexp_matches(per_device, 'rows=(\d+)', 'g') m)
	> pg_temp.plan_number(plan, 'Outer Rows') + pg_temp.plan_number(plan, 'Inner Rows');

-- a merge join keeps its key order on one device
SET LOCAL gpujoin.logical_devices = 3;
SET LOCAL gpujoin.multi_device = 'partition';
SET LOCAL gpujoin.enable_hashjoin = off;
SELECT is(pg_temp.rows_digest('SELECT r.id, r.v, s.id AS sid, s.w FROM r JOIN s ON r.k = s.k ORDER BY r.k'),
	(SELECT digest FROM ref WHERE name = 'inner join on int4'),
	'a merge join over 3 logical devices: PostgreSQL''s rows');
SELECT is(substring(pg_temp.plan('SELECT r.id, s.id AS sid FROM r JOIN s ON r.k = s.k ORDER BY r.k')
		from '(GpuMergeJoin|Spread: [^\n]*)'), 'GpuMergeJoin',
	'a merge join is not spread: its matches come in key order');
RESET gpujoin.enable_hashjoin;
SET LOCAL gpujoin.enable_hashjoin = on;

-- gpujoin.multi_device = off: one device
SET LOCAL gpujoin.multi_device = 'off';
SELECT ok(pg_temp.plan('SELECT r.id, s.id AS sid FROM r JOIN s ON r.k = s.k') !~ 'Spread:',
	'gpujoin.multi_device = off: no spread');

-- auto: an inner side that fits one device stays on one; one that does not
-- is partitioned over the devices
SET LOCAL gpujoin.multi_device = 'auto';
SELECT ok(pg_temp.plan('SELECT r.id, s.id AS sid FROM r JOIN s ON r.k = s.k') !~ 'Spread:',
	'gpujoin.multi_device = auto: an inner side that fits one device is not spread');
SET LOCAL gpujoin.device_memory_limit = '512kB';
SELECT matches(pg_temp.plan('SELECT r.id, s.id AS sid FROM r JOIN s ON r.k = s.k'),
	'Spread: partitioned by key over 3 logical devices',
	'gpujoin.multi_device = auto: an inner side larger than one device is partitioned');
SELECT is(pg_temp.rows_digest('SELECT r.id, r.v, s.id AS sid, s.w FROM r LEFT JOIN s ON r.k8 = s.k8'),
	(SELECT digest FROM ref WHERE name = 'left join on int8'),
	'... and returns PostgreSQL''s rows');
SET LOCAL gpujoin.device_memory_limit = 0;

-- auto prices the three ways (EXPLAIN VERBOSE shows them) and takes the
-- cheapest: with the default charge per extra device, one device; with
-- none, the model's partitioned way (a third of both sides a device);
-- with a costly exchange, broadcast
SELECT matches(pg_temp.plan_verbose('SELECT r.id, s.id AS sid FROM r JOIN s ON r.k = s.k'),
	'Spread Considered: one device [0-9.]+ ms \(chosen\), broadcast over 3 [0-9.]+ ms, partitioned over 3 [0-9.]+ ms',
	'auto: EXPLAIN VERBOSE shows the three ways priced, one device chosen');
SET LOCAL gpujoin.spread_device_ms = 0;
SELECT matches(pg_temp.plan_verbose('SELECT r.id, s.id AS sid FROM r JOIN s ON r.k = s.k'),
	'Spread: partitioned by key over 3 logical devices.*partitioned over 3 [0-9.]+ ms \(chosen\)',
	'auto, no charge per extra device: partitioned, the cheapest by the model');
SET LOCAL gpujoin.exchange_row_ns = 1000000;
SELECT matches(pg_temp.plan_verbose('SELECT r.id, s.id AS sid FROM r JOIN s ON r.k = s.k'),
	'Spread: broadcast over 3 logical devices.*broadcast over 3 [0-9.]+ ms \(chosen\)',
	'auto, a costly exchange: broadcast');
SELECT is(pg_temp.rows_digest('SELECT r.id, r.v, s.id AS sid, s.w FROM r LEFT JOIN s ON r.k8 = s.k8'),
	(SELECT digest FROM ref WHERE name = 'left join on int8'),
	'... and returns PostgreSQL''s rows');
SELECT ok(pg_temp.plan_verbose('SELECT r.id, s.id AS sid FROM r JOIN s ON r.k < s.k + 1 AND r.k > s.k - 1') !~ 'partitioned over',
	'auto: a theta join is never priced partitioned');
RESET gpujoin.exchange_row_ns;
RESET gpujoin.spread_device_ms;

-- in host partitions (a small device memory limit), each spread again
SET LOCAL gpujoin.device_memory_limit = '1MB';
SET LOCAL gpujoin.multi_device = 'partition';
SELECT is(pg_temp.rows_digest('SELECT r.id, r.v, s.id AS sid, s.w FROM r FULL JOIN s ON r.k8 = s.k8'),
	(SELECT digest FROM ref WHERE name = 'full join on int8'),
	'host partitions, each partitioned over 3 logical devices: PostgreSQL''s rows');
SELECT ok(coalesce(pg_temp.plan_number(pg_temp.plan_analyze(
	'SELECT r.id, r.v, s.id AS sid, s.w FROM r FULL JOIN s ON r.k8 = s.k8'), 'Partitions'), 0) >= 2,
	'... and it ran in host partitions');
RESET gpujoin.device_memory_limit;
SET LOCAL gpujoin.device_memory_limit = 0;

-- out of device memory in the middle of a spread join: the CPU twin, spread
-- alike, numbers its matches the same way and goes on
SET LOCAL gpujoin.inject_fault = 'retrieve_oom';
SET LOCAL gpujoin.chunk_rows = 7000;
SELECT is(pg_temp.rows_digest('SELECT r.id, r.v, s.id AS sid, s.w FROM r LEFT JOIN s ON r.k = s.k'),
	(SELECT digest FROM ref WHERE name = 'left join on int4'),
	'partitioned, out of device memory while retrieving: PostgreSQL''s rows');
SET LOCAL gpujoin.multi_device = 'broadcast';
SELECT is(pg_temp.rows_digest('SELECT r.id, r.v, s.id AS sid, s.w FROM r LEFT JOIN s ON r.k = s.k'),
	(SELECT digest FROM ref WHERE name = 'left join on int4'),
	'broadcast, out of device memory while retrieving: PostgreSQL''s rows');
SELECT ok(pg_temp.plan_analyze('SELECT r.id, s.id AS sid FROM r JOIN s ON r.k = s.k') ~ 'fell back',
	'... and the join fell back');
SET LOCAL gpujoin.inject_fault = 'none';
RESET gpujoin.chunk_rows;

-- one device of the spread fails its count: the query fails with 58000,
-- naming the device, after every device is done (nothing waits on the one
-- that failed), and the next query runs; out of device memory there, the
-- join goes on on the CPU twin
CREATE FUNCTION pg_temp.error_of(q text) RETURNS text
LANGUAGE plpgsql AS $f$
DECLARE
	state text;
	detail text;
BEGIN
	EXECUTE q;
	RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, detail = PG_EXCEPTION_DETAIL;
	RETURN state || ': ' || detail;
END $f$;
SET LOCAL gpujoin.logical_devices = 3;
SET LOCAL gpujoin.multi_device = 'partition';
SET LOCAL gpujoin.inject_fault = 'one_device_count';
SELECT matches(pg_temp.error_of('SELECT count(*) FROM r JOIN s ON r.k = s.k'),
	'^58000: .*Device 2 of 3 \(ordinal 0\): A failure injected',
	'partitioned over 3, the last device fails its count: ERROR 58000 naming it');
SET LOCAL gpujoin.multi_device = 'broadcast';
SELECT matches(pg_temp.error_of('SELECT count(*) FROM r JOIN s ON r.k = s.k'),
	'^58000: .*Device 2 of 3', 'broadcast over 3: likewise');
SET LOCAL gpujoin.inject_fault = 'one_device_count_oom';
SELECT is(pg_temp.rows_digest('SELECT r.id, r.v, s.id AS sid, s.w FROM r LEFT JOIN s ON r.k = s.k'),
	(SELECT digest FROM ref WHERE name = 'left join on int4'),
	'broadcast, one device out of memory in its count: the CPU twin goes on, PostgreSQL''s rows');
SET LOCAL gpujoin.multi_device = 'partition';
SELECT is(pg_temp.rows_digest('SELECT r.id, r.v, s.id AS sid, s.w FROM r LEFT JOIN s ON r.k = s.k'),
	(SELECT digest FROM ref WHERE name = 'left join on int4'),
	'partitioned, likewise');
SELECT ok(pg_temp.plan_analyze('SELECT r.id, s.id AS sid FROM r JOIN s ON r.k = s.k') ~ 'fell back',
	'... and the join fell back');
SET LOCAL gpujoin.inject_fault = 'none';
SELECT is(pg_temp.rows_digest('SELECT r.id, r.v, s.id AS sid, s.w FROM r LEFT JOIN s ON r.k = s.k'),
	(SELECT digest FROM ref WHERE name = 'left join on int4'),
	'after the failures, the spread join runs again: PostgreSQL''s rows');

-- gpujoin.devices: all, or distinct ordinals
SELECT lives_ok($$SET LOCAL gpujoin.devices = '0'$$, 'gpujoin.devices takes an ordinal');
SELECT throws_ok($$SET LOCAL gpujoin.devices = '0,0'$$, '22023', NULL,
	'gpujoin.devices refuses an ordinal named twice');
SELECT throws_ok($$SET LOCAL gpujoin.devices = 'gpu0'$$, '22023', NULL,
	'gpujoin.devices refuses what is not an ordinal');
SELECT CASE WHEN :'on_gpu'::boolean THEN
	throws_ok($$SET LOCAL gpujoin.devices = '15'; SELECT count(*) FROM r JOIN s ON r.k = s.k$$,
		'22023', NULL, 'a device that is not there: an error')
	ELSE lives_ok($$SET LOCAL gpujoin.devices = '15'; SELECT count(*) FROM r JOIN s ON r.k = s.k$$,
		'on the CPU twin, gpujoin.devices names no device') END;

SELECT * FROM finish();
ROLLBACK;
