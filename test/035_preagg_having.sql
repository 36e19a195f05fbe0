-- test/035_preagg_having.sql
--
-- A serial GpuPreAgg checks the HAVING clause's simple conditions on its
-- groups before it emits them, where the groups are whole (each folded
-- once, into one table): a count, a sum of integers or of a numeric of
-- declared scale, or the min or max of an integer, a date or such a
-- numeric, compared with a constant (planner_agg.c HavingConditions,
-- exec_agg.c HavingKeeps).  EXPLAIN says "Having: N conditions ..." and,
-- under ANALYZE, "Groups Removed by Having".  The rows must be
-- PostgreSQL's: counts against int4 and int8 constants (a cross-type
-- operator), sums of int4, int8 and numeric(8,2) against constants on
-- either side, of fewer decimals than the sum (more: left to the Finalize
-- Aggregate), max(int4), min(int8), min(date) over NULL dates,
-- max(numeric) over NULLs and a NaN, =, <, <=, >=, >, two conditions, an OR (not
-- checked), an aggregate only the HAVING clause reads, NULL sums (groups
-- of NULL arguments) and NaN in a numeric sum (left to the Finalize
-- Aggregate), a join and a scan, unsorted and sorted output, groups in
-- several sets (a small device memory limit: nothing removed, the groups
-- not whole), a parallel plan (no check: each process's groups are
-- partial), a rescan under a SubPlan, no GROUP BY (the Finalize
-- Aggregate makes a row of no input too: nothing checked), and
-- gpujoin.enable_preagg_having off.
BEGIN;
SELECT plan(16);
CREATE EXTENSION IF NOT EXISTS gpujoin;
LOAD 'gpujoin';
\ir helpers.psql
SET LOCAL client_min_messages = warning;
SET LOCAL max_parallel_workers_per_gather = 0;
SET LOCAL gpujoin.cost_as_gpu = on;

CREATE TABLE hf (k int4, g int4, v int4, b int8, n numeric(8,2), d date);
INSERT INTO hf SELECT i % 2500, i % 1500,
	CASE WHEN i % 1500 < 20 THEN NULL ELSE (i * 7) % 100 END,
	((i * 13) % 1000)::int8 * 100000000,
	CASE WHEN i % 1500 BETWEEN 20 AND 29 THEN NULL
		 WHEN i = 36 THEN 'NaN'
		 ELSE ((i * 11) % 2001 - 1000) / 4.0 END,
	CASE WHEN i % 1500 BETWEEN 40 AND 45 THEN NULL ELSE date '2020-01-01' + (i * 17) % 400 END
FROM generate_series(1, 30000) i;
CREATE TABLE hd (k int4, w int4);
INSERT INTO hd SELECT (i * i) % 3000, i FROM generate_series(1, 4000) i;
ANALYZE hf, hd;

CREATE TEMP TABLE hq (name text PRIMARY KEY, sql text, checks int);
INSERT INTO hq VALUES
	('count > int4', 'SELECT hf.g, count(*) FROM hf JOIN hd ON hf.k = hd.k GROUP BY hf.g HAVING count(*) > 127', 1),
	('count(v) <= int8', 'SELECT hf.g, count(hf.v) FROM hf JOIN hd ON hf.k = hd.k GROUP BY hf.g HAVING count(hf.v) <= 100::int8', 1),
	('sum(int4) >=, constant first', 'SELECT hf.g, sum(hf.v) FROM hf JOIN hd ON hf.k = hd.k GROUP BY hf.g HAVING 5184 <= sum(hf.v)', 1),
	('sum(int4) =', 'SELECT hf.g FROM hf JOIN hd ON hf.k = hd.k GROUP BY hf.g HAVING sum(hf.v) = 5184', 1),
	('sum(int8) > numeric', 'SELECT hf.g, sum(hf.b) FROM hf JOIN hd ON hf.k = hd.k GROUP BY hf.g HAVING sum(hf.b) > 5414400000000', 1),
	('sum(numeric) >, NULL sums and a NaN', 'SELECT hf.g, sum(hf.n) FROM hf JOIN hd ON hf.k = hd.k GROUP BY hf.g HAVING sum(hf.n) > 300', 1),
	('sum(numeric) < a constant of one decimal', 'SELECT hf.g, sum(hf.n) FROM hf JOIN hd ON hf.k = hd.k GROUP BY hf.g HAVING sum(hf.n) < -250.5', 1),
	('sum(numeric) >= a constant of three decimals: left to the Finalize', 'SELECT hf.g, sum(hf.n) FROM hf JOIN hd ON hf.k = hd.k GROUP BY hf.g HAVING sum(hf.n) >= 12.125', 0),
	('two conditions, one aggregate only in HAVING', 'SELECT hf.g, count(*) FROM hf JOIN hd ON hf.k = hd.k GROUP BY hf.g HAVING sum(hf.v) > 5000 AND count(*) < 300', 2),
	('an OR: not checked', 'SELECT hf.g, count(*) FROM hf JOIN hd ON hf.k = hd.k GROUP BY hf.g HAVING count(*) > 128 OR sum(hf.v) < 100', 0),
	('a scan, sorted output', 'SELECT hf.g, sum(hf.n) FROM hf GROUP BY hf.g HAVING sum(hf.n) > 200 ORDER BY hf.g', 1),
	('a scan, two keys', 'SELECT hf.g, hf.k % 3, count(*) FROM hf GROUP BY 1, 2 HAVING count(*) >= 7', 1),
	('max(int4) >= and min(int8) <', 'SELECT hf.g, max(hf.v) FROM hf JOIN hd ON hf.k = hd.k GROUP BY hf.g HAVING max(hf.v) >= 92 AND min(hf.b) < 2000000000', 2),
	('min(date) >=, NULL dates', 'SELECT hf.g, min(hf.d) FROM hf JOIN hd ON hf.k = hd.k GROUP BY hf.g HAVING min(hf.d) >= date ''2020-01-13''', 1),
	('max(numeric) <=, NULLs and a NaN', 'SELECT hf.g, max(hf.n) FROM hf JOIN hd ON hf.k = hd.k GROUP BY hf.g HAVING max(hf.n) <= 240.25', 1),
	('no GROUP BY: the one group reaches the Finalize Aggregate', 'SELECT count(*) FROM hf JOIN hd ON hf.k = hd.k HAVING count(*) < 5', 0);
:postgres_join
CREATE TEMP TABLE href AS SELECT name, pg_temp.rows_digest(sql) AS digest,
	(SELECT count(*) FROM hf) AS n FROM hq;

-- every query: PostgreSQL's rows; its plan's check; groups removed where checked
CREATE FUNCTION pg_temp.having_failures() RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	q record;
	p text;
	bad text := '';
BEGIN
	FOR q IN SELECT hq.*, href.digest FROM hq JOIN href USING (name) ORDER BY name LOOP
		IF pg_temp.rows_digest(q.sql) IS DISTINCT FROM q.digest THEN
			bad := bad || q.name || ' (rows); ';
			CONTINUE;
		END IF;
		p := pg_temp.plan_analyze(q.sql);
		IF p !~ 'GpuPreAgg' THEN
			bad := bad || q.name || ' (no GpuPreAgg); ';
		ELSIF q.checks = 0 AND p ~ 'Having:' THEN
			bad := bad || q.name || ' (checked); ';
		ELSIF q.checks > 0 AND (p !~ ('Having: ' || q.checks || ' condition') OR
								p !~ 'Groups Removed by Having: [1-9]') THEN
			bad := bad || q.name || ' (not checked: ' || substring(p from 'Having[^\n]*') || '); ';
		END IF;
	END LOOP;
	RETURN bad;
END $$;

:gpu_join
-- the GpuPreAgg made cheap (its fixed and per-row costs 0), so that the
-- planner takes it over one relation too, whatever the device's prices
SET LOCAL gpujoin.setup_cost = 0;
SET LOCAL gpujoin.cost_per_ms = 0;
SET LOCAL gpujoin.emit_cost = 0;
SET LOCAL gpujoin.extract_cost = 0;
SET LOCAL gpujoin.heap_page_cost = 0;
SET LOCAL gpujoin.heap_tuple_cost = 0;
SELECT is(pg_temp.having_failures(), '', 'serial: PostgreSQL''s rows, the simple conditions checked on whole groups');
SELECT matches(pg_temp.plan_analyze((SELECT sql FROM hq WHERE name = 'sum(numeric) >, NULL sums and a NaN')),
	'Finalize GroupAggregate[\s\S]*Filter: \(sum\(hf\.n\) > ''300''::numeric\)[\s\S]*Custom Scan \(GpuPreAgg\)[\s\S]*Having: 1 condition of the HAVING clause, on whole groups[\s\S]*Groups Removed by Having: \d+',
	'EXPLAIN: the Finalize Aggregate keeps the HAVING clause, the GpuPreAgg says what it checked');
SELECT is((SELECT count(*) FROM (SELECT hf.g FROM hf JOIN hd ON hf.k = hd.k GROUP BY hf.g HAVING sum(hf.n) > 300) s
		   WHERE g = 36), 1::bigint, 'the group with a NaN in its sum is kept (NaN is above 300)');
SELECT is((SELECT count(*) FROM (SELECT hf.g FROM hf JOIN hd ON hf.k = hd.k GROUP BY hf.g HAVING sum(hf.v) >= 0) s
		   WHERE g < 20), 0::bigint, 'groups of NULL arguments only: their NULL sums do not pass');

-- gpujoin.enable_preagg_having off: nothing checked, the same rows
SET LOCAL gpujoin.enable_preagg_having = off;
SELECT ok(pg_temp.rows_digest(sql) = href.digest AND pg_temp.plan(sql) ~ 'GpuPreAgg' AND
		  pg_temp.plan(sql) !~ 'Having:',
	'gpujoin.enable_preagg_having off: no HAVING checked, the same rows')
FROM hq JOIN href USING (name) WHERE name = 'sum(numeric) >, NULL sums and a NaN';
RESET gpujoin.enable_preagg_having;

-- hash and sorted group-by variants, chunks
SET LOCAL gpujoin.groupby_variant = 'sort';
SELECT is(pg_temp.having_failures(), '', 'group-by sort: the same');
RESET gpujoin.groupby_variant;
SET LOCAL gpujoin.chunk_rows = 3000;
SELECT is(pg_temp.having_failures(), '', 'chunks of 3000 outer rows: the same');
RESET gpujoin.chunk_rows;

-- groups in several sets: not whole, nothing removed, the same rows
SET LOCAL gpujoin.device_memory_limit = '256kB';
SET LOCAL gpujoin.preagg_table_matches = 700;
SELECT is(pg_temp.rows_digest(sql), href.digest, name || ', groups in several sets: the same rows')
FROM hq JOIN href USING (name) WHERE name IN ('count > int4', 'sum(numeric) >, NULL sums and a NaN') ORDER BY name;
SELECT matches(pg_temp.plan_analyze((SELECT sql FROM hq WHERE name = 'count > int4')),
	'Group Spills: [1-9][\s\S]*Groups Removed by Having: 0',
	'groups in several sets: none removed');
-- one table that spilled (its keys come back once per spill): not whole
RESET gpujoin.preagg_table_matches;
SELECT is(pg_temp.rows_digest($$SELECT hf.g, hf.k % 7, count(*) FROM hf GROUP BY 1, 2 HAVING count(*) >= 2$$),
	(SELECT pg_temp.rows_digest($$SELECT hf.g, hf.k % 7, count(*) FROM hf GROUP BY 1, 2 HAVING count(*) >= 2$$)
	 FROM (SELECT set_config('gpujoin.enabled', 'off', true)) o),
	'a table of 30,000 groups that spilled: PostgreSQL''s rows');
SET LOCAL gpujoin.enabled = on;
SELECT matches(pg_temp.plan_analyze($$SELECT hf.g, hf.k % 7, count(*) FROM hf GROUP BY 1, 2 HAVING count(*) >= 2$$),
	'Group Spills: [1-9][\s\S]*Groups Removed by Having: 0',
	'a table that spilled: none removed');
RESET gpujoin.device_memory_limit;

-- a parallel plan: each process's groups are partial, nothing checked
RESET gpujoin.setup_cost; RESET gpujoin.cost_per_ms; RESET gpujoin.emit_cost;
RESET gpujoin.extract_cost; RESET gpujoin.heap_page_cost; RESET gpujoin.heap_tuple_cost;
:parallel_cheap
SELECT is(pg_temp.rows_digest(sql), href.digest, name || ', in parallel: the same rows')
FROM hq JOIN href USING (name) WHERE name IN ('count > int4', 'sum(numeric) >, NULL sums and a NaN') ORDER BY name;
SELECT ok(pg_temp.plan((SELECT sql FROM hq WHERE name = 'count > int4')) ~ 'Gather[\s\S]*GpuPreAgg' AND
		  pg_temp.plan((SELECT sql FROM hq WHERE name = 'count > int4')) !~ 'Having:',
	'in parallel: a partial GpuPreAgg under a Gather, no HAVING checked');
SET LOCAL max_parallel_workers_per_gather = 0;

-- a rescan: the GpuPreAgg under a SubPlan, once per outer row
SELECT is(pg_temp.rows_digest($$SELECT x, (SELECT count(*) FROM (SELECT hf.g FROM hf JOIN hd ON hf.k = hd.k WHERE hf.v > x GROUP BY hf.g HAVING count(*) > 20) s) FROM generate_series(60, 62) x$$),
	(SELECT pg_temp.rows_digest($$SELECT x, (SELECT count(*) FROM (SELECT hf.g FROM hf JOIN hd ON hf.k = hd.k WHERE hf.v > x GROUP BY hf.g HAVING count(*) > 20) s) FROM generate_series(60, 62) x$$)
	 FROM (SELECT set_config('gpujoin.enabled', 'off', true)) o),
	'rescanned under a SubPlan: PostgreSQL''s rows');

SELECT * FROM finish();
ROLLBACK;
