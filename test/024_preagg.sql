-- test/024_preagg.sql
--
-- GpuPreAgg (src/planner_agg.c, src/exec_agg.c, cuda/agg/): the aggregates
-- over a GPU join computed on the device, one row of partial aggregates
-- per group under PostgreSQL's Finalize Aggregate.  Differential: every
-- query returns PostgreSQL's own rows; the plan has a GpuPreAgg where the
-- device computes every aggregate and key, and none where it does not
-- (DISTINCT, string_agg, a text expression as a key, a left join), which
-- still returns PostgreSQL's rows.  Over NULL arguments and NULL group
-- keys, empty inputs (one row with count 0 and NULL sums; no group),
-- int8 sums past 2^63, floats with NaN and -0 (min and max of floats where
-- -0 and 0 tie for the extreme may return either, as PostgreSQL's own
-- parallel plans do, so the data has negative values), dates and timestamps,
-- FILTER, HAVING, ORDER BY ... LIMIT above, chunks and rounds of a few
-- rows, groups past the device table's first size, a partitioned join and
-- groups spilled under a tiny gpujoin.device_memory_limit or after a
-- table's most matches, numeric sums, averages, min, max and keys of
-- declared scale (NaN, NULL, 18 digits, negative scales), sums and
-- averages of numeric arithmetic (+ - *, comparisons in FILTER, integers
-- cast to numeric; NaN and values past 64 bits folded on the host),
-- parallel plans (a GpuPreAgg per process under a Gather), columns a
-- primary key among the keys determines (grouped by too), averages of
-- floats and float keys (NaN its own group, -0 with 0), text keys (coded
-- on the host; NULL, empty, varchar, char(n), compressed values), and the errors
-- PostgreSQL raises (int4 overflow in an argument, a float sum that
-- overflows, an average of floats whose squared deviations overflow).
BEGIN;
SELECT plan(59);
CREATE EXTENSION IF NOT EXISTS gpujoin;
LOAD 'gpujoin';
\ir helpers.psql
SET LOCAL client_min_messages = warning;
SET LOCAL max_parallel_workers_per_gather = 0;
SET LOCAL gpujoin.cost_as_gpu = on;

CREATE TABLE pr (k int4, v int4, v2 int2, w int8, f float8, f4 float4, d date, t timestamp, o oid,
	n numeric(12,2), n4 numeric(10,5), n0 numeric(18,0), nneg numeric(5,-2), nu numeric);
INSERT INTO pr SELECT g % 3000,
	CASE WHEN g % 17 = 0 THEN NULL ELSE (g * 37) % 2001 - 1000 END,
	(g % 300)::int2,
	CASE WHEN g % 3 = 0 THEN 9000000000000000000 - g ELSE -g::int8 * 1000003 END,
	CASE WHEN g % 101 = 0 THEN 'NaN'::float8 WHEN g % 103 = 0 THEN -0.0::float8
		 WHEN g % 107 = 0 THEN NULL ELSE (g % 1000) / 8.0 - 20 END,
	((g % 100) / 4.0)::float4,
	date '2001-01-01' + g % 900,
	timestamp '2001-01-01' + (g % 5000) * interval '17 minutes',
	(g % 70000)::oid,
	CASE WHEN g % 300 = 7 OR g % 1000 = 999 THEN 'NaN' WHEN g % 300 = 11 THEN NULL
		 ELSE ((g * 7919) % 200001 - 100000) / 100.0 END,
	CASE WHEN g % 23 = 0 THEN NULL ELSE (g % 9999) / 7.0 - 500 END,
	CASE WHEN g % 2 = 0 THEN 999999999999999999 - g ELSE -(999999999999980000 + g) END,
	g * 3,
	g / 3.0
FROM generate_series(1, 12000) g;
CREATE TABLE ps (k int4, g int4, g2 int2, b bool, name text, big int4, nk numeric(6,1),
	tn text, vc varchar(12), ch char(6), long text);
INSERT INTO ps SELECT g % 3500,
	CASE WHEN g % 13 = 0 THEN NULL ELSE g % 7 END,
	(g % 5000)::int2,
	g % 3 = 0,
	'n' || g % 11,
	CASE WHEN g = 4242 THEN 2147483640 ELSE g END,
	CASE WHEN g % 13 = 0 THEN NULL WHEN g % 17 = 0 THEN 'NaN' ELSE (g % 9) / 2.0 END,
	CASE WHEN g % 19 = 0 THEN NULL WHEN g % 23 = 0 THEN '' ELSE 'city ' || g % 37 END,
	'v' || g % 5,
	CASE WHEN g % 29 = 0 THEN NULL ELSE 'c' || g % 3 END,
	-- a few kB, compressed in the heap: detoasted before they are coded
	repeat('long text ', 300 + g % 4) || g % 4
FROM generate_series(1, 9000) g;
CREATE TABLE pe (k int4, v int4);
-- pk: a primary key, which lets a query read its other columns without
-- grouping by them (PostgreSQL's planner then groups by the key alone)
CREATE TABLE pk (id int4 PRIMARY KEY, label text, amount numeric(10,2), code int2, note text);
INSERT INTO pk SELECT g,
	CASE WHEN g % 11 = 0 THEN NULL ELSE 'label ' || g % 40 END,
	CASE WHEN g % 13 = 0 THEN NULL ELSE (g % 500) / 4.0 END,
	(g % 9)::int2,
	CASE WHEN g % 5 = 0 THEN repeat('note ', 400) || g ELSE 'n' || g END
FROM generate_series(0, 2600) g;
ANALYZE pr, ps, pe, pk;

-- the queries, and whether the device computes their aggregates (NULL:
-- as the costs decide)
CREATE TEMP TABLE aq (name text PRIMARY KEY, sql text, preagg bool);
INSERT INTO aq VALUES
	('count and a sum of an expression', 'SELECT count(*), sum(pr.v + ps.g) FROM pr JOIN ps ON pr.k = ps.k', true),
	('every kind, one group', 'SELECT count(*), count(pr.v), sum(pr.v), avg(pr.v), sum(pr.v2), avg(pr.v2), sum(pr.w), avg(pr.w), min(pr.w), max(pr.w), min(pr.v2), max(pr.v) FROM pr JOIN ps ON pr.k = ps.k', true),
	('floats: NaN, -0, NULL', 'SELECT min(pr.f), max(pr.f), sum(pr.f4), min(pr.f4), max(pr.f4), count(pr.f) FROM pr JOIN ps ON pr.k = ps.k', true),
	('float sums of exact values', 'SELECT ps.g, sum(pr.f) FILTER (WHERE pr.f < 100) FROM pr JOIN ps ON pr.k = ps.k WHERE pr.f IS NOT NULL GROUP BY ps.g', true),
	('dates, timestamps, oids', 'SELECT ps.g, min(pr.d), max(pr.d), min(pr.t), max(pr.t), min(pr.o), max(pr.o) FROM pr JOIN ps ON pr.k = ps.k GROUP BY ps.g', true),
	('a key with NULLs', 'SELECT ps.g, count(*), sum(pr.w), avg(pr.v), max(pr.f) FROM pr JOIN ps ON pr.k = ps.k GROUP BY ps.g', true),
	('two keys', 'SELECT ps.g, pr.v2, count(*), sum(pr.v) FROM pr JOIN ps ON pr.k = ps.k GROUP BY ps.g, pr.v2', true),
	('a key expression', 'SELECT ps.g % 3, count(*), min(pr.v) FROM pr JOIN ps ON pr.k = ps.k GROUP BY ps.g % 3', true),
	('bool and date keys', 'SELECT ps.b, pr.d, count(*) FROM pr JOIN ps ON pr.k = ps.k GROUP BY ps.b, pr.d', true),
	('thousands of groups, 200 expected', 'SELECT ps.g2 % 5000, count(*), sum(pr.v) FROM pr JOIN ps ON pr.k = ps.k GROUP BY ps.g2 % 5000', true),
	('FILTER', 'SELECT ps.g, count(*) FILTER (WHERE pr.v > 0), sum(pr.w) FILTER (WHERE ps.b), max(pr.v) FILTER (WHERE pr.v IS NULL) FROM pr JOIN ps ON pr.k = ps.k GROUP BY ps.g', true),
	('HAVING', 'SELECT ps.g, count(*) FROM pr JOIN ps ON pr.k = ps.k GROUP BY ps.g HAVING sum(pr.v) > 0', true),
	('ORDER BY and LIMIT above', 'SELECT pr.v2, sum(pr.v) FROM pr JOIN ps ON pr.k = ps.k GROUP BY pr.v2 ORDER BY 2 DESC NULLS LAST, 1 LIMIT 7', true),
	('scan quals on the device', 'SELECT ps.g, count(*), sum(pr.w) FROM pr JOIN ps ON pr.k = ps.k WHERE pr.v < 300 AND ps.g2 % 4 = 1 GROUP BY ps.g', true),
	('no match: one row', 'SELECT count(*), sum(pr.v), avg(pr.w), min(pr.f), max(pr.d), avg(pr.f), avg(pr.f4) FROM pr JOIN ps ON pr.k = ps.k WHERE pr.v > 5000', true),
	('no match: no group (the planner''s choice)', 'SELECT ps.g, count(*) FROM pr JOIN ps ON pr.k = ps.k WHERE pr.v > 5000 GROUP BY ps.g', NULL),
	('an empty side', 'SELECT count(*), sum(pr.v) FROM pr JOIN pe ON pr.k = pe.k', true),
	('group key not output', 'SELECT count(*), sum(pr.v) FROM pr JOIN ps ON pr.k = ps.k GROUP BY ps.g2', true),
	('count(DISTINCT) stays on the CPU', 'SELECT count(DISTINCT pr.v) FROM pr JOIN ps ON pr.k = ps.k', false),
	('string_agg stays on the CPU', 'SELECT ps.g, string_agg(ps.name, '','' ORDER BY ps.name) FROM pr JOIN ps ON pr.k = ps.k GROUP BY ps.g', false),
	('averages of floats', 'SELECT ps.g, avg(pr.f), avg(pr.f4), avg(pr.f) FILTER (WHERE pr.v > 0), avg(pr.f4 * 2) FROM pr JOIN ps ON pr.k = ps.k WHERE pr.f < 100 GROUP BY ps.g', true),
	('averages of floats with NaN, -0 and NULL', 'SELECT ps.g2 % 7, avg(pr.f), avg(pr.f4) FROM pr JOIN ps ON pr.k = ps.k GROUP BY 1', true),
	('a text key', 'SELECT ps.name, count(*), sum(pr.v) FROM pr JOIN ps ON pr.k = ps.k GROUP BY ps.name', true),
	('text keys: NULL, empty, varchar, char(n), with an integer key', 'SELECT ps.tn, ps.vc, ps.ch, pr.v2 % 3, count(*), max(pr.w) FROM pr JOIN ps ON pr.k = ps.k GROUP BY ps.tn, ps.vc, ps.ch, pr.v2 % 3', true),
	('a compressed text key', 'SELECT md5(ps.long), count(*), sum(pr.v) FROM pr JOIN ps ON pr.k = ps.k GROUP BY ps.long', true),
	('a text key expression stays on the CPU', 'SELECT upper(ps.name), count(*) FROM pr JOIN ps ON pr.k = ps.k GROUP BY upper(ps.name)', false),
	('a float4 key', 'SELECT pr.f4, count(*), avg(pr.f) FILTER (WHERE pr.f < 100), max(pr.v) FROM pr JOIN ps ON pr.k = ps.k GROUP BY pr.f4', true),
	('a float key expression and an integer key', 'SELECT pr.f4 * 2 - 1, ps.g, count(*) FROM pr JOIN ps ON pr.k = ps.k GROUP BY 1, 2', true),
	('a left join stays on the CPU', 'SELECT count(*), sum(ps.g) FROM pr LEFT JOIN ps ON pr.k = ps.k', false),
	('a column outside the aggregates', 'SELECT ps.g, count(*) FROM pr JOIN ps ON pr.k = ps.k GROUP BY ps.g, ps.k', true),
	('columns a primary key determines: keys on the device too', 'SELECT pk.id, pk.label, pk.amount, pk.code, count(*), sum(pr.v) FROM pr JOIN pk ON pr.k = pk.id GROUP BY pk.id', true),
	('columns a primary key determines, ordered by one, with a key of the other side', 'SELECT pk.id, pk.code, pr.v2 % 3, max(pr.w) FROM pr JOIN pk ON pr.k = pk.id GROUP BY pk.id, pr.v2 % 3 ORDER BY pk.code DESC, pk.id, 3 LIMIT 40', true),
	('a compressed column a primary key determines', 'SELECT pk.id, md5(pk.note), count(*) FROM pr JOIN pk ON pr.k = pk.id WHERE pk.id % 5 = 0 GROUP BY pk.id', true),
	('numerics of declared scale, one group', 'SELECT sum(pr.n), avg(pr.n), min(pr.n), max(pr.n), sum(pr.n4), avg(pr.n4), min(pr.n4), max(pr.n4), count(pr.n) FROM pr JOIN ps ON pr.k = ps.k', true),
	('numerics: groups all NaN, all NULL, mixed', 'SELECT pr.v2, sum(pr.n), avg(pr.n), min(pr.n), max(pr.n), count(pr.n) FROM pr JOIN ps ON pr.k = ps.k GROUP BY pr.v2', true),
	('numerics: 18 digits, sums past 2^63', 'SELECT ps.g, sum(pr.n0), avg(pr.n0), min(pr.n0), max(pr.n0) FROM pr JOIN ps ON pr.k = ps.k GROUP BY ps.g', true),
	('numerics: a negative scale, FILTER', 'SELECT ps.g, sum(pr.nneg), avg(pr.nneg), sum(pr.n) FILTER (WHERE pr.v > 0), avg(pr.n4) FILTER (WHERE ps.b), max(pr.n) FILTER (WHERE pr.v < 0) FROM pr JOIN ps ON pr.k = ps.k GROUP BY ps.g', true),
	('a numeric key with NULL and NaN', 'SELECT ps.nk, count(*), sum(pr.n4), min(pr.n) FROM pr JOIN ps ON pr.k = ps.k GROUP BY ps.nk', true),
	('numeric without a scale stays on the CPU', 'SELECT sum(pr.nu) FROM pr JOIN ps ON pr.k = ps.k', false),
	('numeric arithmetic: revenue, NaN and NULL', 'SELECT ps.g, sum(pr.n * (1 - pr.n4)), avg(pr.n - pr.n4 * 2), sum(-pr.n + 0.125), sum(pr.n * 2) FROM pr JOIN ps ON pr.k = ps.k GROUP BY ps.g', true),
	('numeric arithmetic, no NaN: the scales', 'SELECT ps.g, sum(pr.n * (1 - pr.n4)), sum(pr.n4 * pr.n4 * pr.n), avg(pr.n * pr.n4 - 0.5), sum(pr.n + pr.n4) FROM pr JOIN ps ON pr.k = ps.k WHERE pr.n <> ''NaN'' GROUP BY ps.g', true),
	('numeric arithmetic past 18 digits', 'SELECT ps.g, sum(pr.n0 * 10), avg(pr.n0 * pr.n0), sum(pr.n0 + pr.n0), sum(pr.n0 * pr.n0 * pr.n0) FROM pr JOIN ps ON pr.k = ps.k GROUP BY ps.g', true),
	('numeric comparisons and integers as numeric', 'SELECT ps.g, sum(pr.n) FILTER (WHERE pr.n4 > 1.5), count(*) FILTER (WHERE pr.n * 2 <= pr.n4), sum(pr.v::numeric * pr.n4), avg(pr.w::numeric - pr.n) FROM pr JOIN ps ON pr.k = ps.k GROUP BY ps.g', true),
	('a numeric expression as a key stays on the CPU', 'SELECT pr.n * 2, count(*) FROM pr JOIN ps ON pr.k = ps.k GROUP BY pr.n * 2', false),
	('min of a numeric expression stays on the CPU', 'SELECT min(pr.n * 2) FROM pr JOIN ps ON pr.k = ps.k', false),
	('numeric division stays on the CPU', 'SELECT sum(pr.n / 3) FROM pr JOIN ps ON pr.k = ps.k', false);

CREATE TEMP TABLE aq_expected (name text, digest text);
:postgres_join
INSERT INTO aq_expected SELECT name, pg_temp.rows_digest(sql) FROM aq;

CREATE FUNCTION pg_temp.agg_failures() RETURNS text
LANGUAGE sql AS $$
	SELECT coalesce(string_agg(q.name, '; ' ORDER BY q.name), '')
	FROM aq q JOIN aq_expected e USING (name)
	WHERE pg_temp.rows_digest(q.sql) IS DISTINCT FROM e.digest $$;
CREATE FUNCTION pg_temp.plan_failures() RETURNS text
LANGUAGE sql AS $$
	SELECT coalesce(string_agg(q.name, '; ' ORDER BY q.name), '')
	FROM aq q WHERE q.preagg IS NOT NULL AND (pg_temp.plan(q.sql) ~ 'GpuPreAgg') <> q.preagg $$;

:gpu_join
SELECT is(pg_temp.plan_failures(), '', 'a GpuPreAgg where the device computes every aggregate and key, none elsewhere');
SELECT is(pg_temp.agg_failures(), '', 'every query returns PostgreSQL''s rows');
SELECT matches(pg_temp.plan(sql), 'Finalize Aggregate\s+->  Custom Scan \(GpuPreAgg\)[\s\S]*Hash Cond[\s\S]*Device Aggregation: one group, 2 aggregates',
	'EXPLAIN: Finalize Aggregate over Custom Scan (GpuPreAgg), the join''s lines and the aggregation''s')
	FROM aq WHERE name = 'count and a sum of an expression';
-- the tables are small: where the blocks' words cost much to add up, more
-- than the contention they save, the hash group-by; where little, shared
SET LOCAL gpujoin.preagg_flush_ns = 100000;
SELECT matches(pg_temp.plan_analyze(sql), 'Device Aggregation: hash, 2 aggregates[\s\S]*Groups Returned: 4\s+Groups Removed by Having: 4',
	'EXPLAIN ANALYZE: a hash aggregation, one row per group (NULL its own) but the 4 of 8 the HAVING clause''s condition removed (test/035)')
	FROM aq WHERE name = 'HAVING';
SET LOCAL gpujoin.preagg_flush_ns = 1;
SELECT matches(pg_temp.plan(sql), 'Device Aggregation: hash, shared memory, 2 aggregates',
	'few groups, the blocks'' words cheap to add up: the shared-memory group-by')
	FROM aq WHERE name = 'HAVING';
SELECT matches(pg_temp.plan_verbose(sql), 'Output: ps.g, \(PARTIAL count\(\*\)\)[\s\S]*Group-By Variants Considered: hash \(device table of exact keys, grown as needed\) \d+\.\d+ ms, shared memory \(per-block words for up to \d+ groups\) \d+\.\d+ ms \(chosen\)',
	'EXPLAIN VERBOSE: the partial aggregates, the group-by variants priced')
	FROM aq WHERE name = 'a key with NULLs';
RESET gpujoin.preagg_flush_ns;
SELECT matches(pg_temp.plan(sql), 'Device Aggregation: hash, 2 aggregates',
	'many groups expected: the hash group-by')
	FROM aq WHERE name = 'two keys';
SELECT is(pg_temp.agg_failures(), '', 'gpujoin.groupby_variant = ' || v || ': every query')
	FROM unnest(ARRAY['hash', 'shared', 'sort', 'sort_tr']) v, LATERAL (SELECT set_config('gpujoin.groupby_variant', v, true)) c;
RESET gpujoin.groupby_variant;
-- sorting made cheap: the planner picks the sort-based group-by
SET LOCAL gpujoin.preagg_sort_row_ns = 0;
SET LOCAL gpujoin.preagg_sort_run_ns = 0.001;
SELECT matches(pg_temp.plan_verbose(sql), 'Device Aggregation: sort, 2 aggregates[\s\S]*Group-By Variants Considered: hash \(.*\) \d+\.\d+ ms, shared memory .* ms.*, sort \(runs of matches sorted by group\) \d+\.\d+ ms \(chosen\)',
	'sorting priced cheap: the sort-based group-by, priced beside the others')
	FROM aq WHERE name = 'two keys';
RESET gpujoin.preagg_sort_row_ns;
-- sorting the values along made cheap: the planner picks it
SET LOCAL gpujoin.preagg_sort_word_ns = 0;
SELECT matches(pg_temp.plan_verbose(sql), 'Device Aggregation: sort, values sorted along, 2 aggregates[\s\S]*Group-By Variants Considered: .*, sort \(runs of matches sorted by group\) \d+\.\d+ ms, sort, values sorted along \d+\.\d+ ms \(chosen\)',
	'sorting the values along priced cheap: that group-by, priced beside the others')
	FROM aq WHERE name = 'two keys';
RESET gpujoin.preagg_sort_word_ns;
RESET gpujoin.preagg_sort_run_ns;
-- the groups a GpuPreAgg expects: no more than its keys' values can make
-- (PostgreSQL's own estimate takes "k % 3" to have as many values as k)
CREATE FUNCTION pg_temp.preagg_rows(q text) RETURNS float8
LANGUAGE plpgsql AS $$
DECLARE
	j jsonb;
BEGIN
	EXECUTE 'EXPLAIN (FORMAT JSON) ' || q INTO j;
	RETURN jsonb_path_query_first(j, 'strict $.** ? (@."Custom Plan Provider" == "GpuPreAgg")."Plan Rows"')::float8;
END $$;
SELECT is(pg_temp.preagg_rows('SELECT pr.k % 3, count(*) FROM pr JOIN ps ON pr.k = ps.k GROUP BY 1'), 6::float8,
	'an integer key modulo 3: at most 6 groups expected (-2 .. 2 and NULL)');
SELECT is(pg_temp.preagg_rows('SELECT mod(pr.k, 3), pr.k > 100, count(*) FROM pr JOIN ps ON pr.k = ps.k GROUP BY 1, 2'), 18::float8,
	'mod() and a boolean key: at most 6 x 3 groups expected');
SELECT cmp_ok(pg_temp.preagg_rows('SELECT pr.k, count(*) FROM pr JOIN ps ON pr.k = ps.k GROUP BY 1'), '>', 100::float8,
	'a plain key: PostgreSQL''s estimate');
SET LOCAL gpujoin.chunk_rows = 7;
SELECT is(pg_temp.agg_failures(), '', 'chunks and rounds of 7 rows: every query');
RESET gpujoin.chunk_rows;
SELECT is(pg_temp.agg_failures(), '', 'variant ' || v || ': every query')
	FROM unnest(ARRAY['nphj', 'phj']) v, LATERAL (SELECT set_config('gpujoin.join_variant', v, true)) c;
RESET gpujoin.join_variant;
SET LOCAL gpujoin.enable_heapscan = off;
SELECT is(pg_temp.agg_failures(), '', 'Seq Scan children: every query');
RESET gpujoin.enable_heapscan;
SET LOCAL gpujoin.device_memory_limit = 64;
SELECT matches(pg_temp.plan_analyze(sql), 'Partitions: \d+', 'a partitioned join under the aggregation')
	FROM aq WHERE name = 'a key with NULLs';
SELECT is(pg_temp.agg_failures(), '', 'partitioned joins: every query');
-- limits where the join fits the device (or the CPU twin's pretend one)
-- and thousands of groups do not: the groups spill to the host; with the
-- sort-based group-by too (its sort arrays may not fit: the round goes as
-- in hash)
CREATE FUNCTION pg_temp.spill_tests(variant text) RETURNS SETOF text
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM set_config('gpujoin.groupby_variant', variant, true);
	RETURN NEXT ok((SELECT bool_or(pg_temp.plan_analyze(sql) ~
							('Device Aggregation: ' ||
							 CASE variant WHEN 'auto' THEN '' WHEN 'sort_tr' THEN 'sort, values sorted along'
							 ELSE variant END ||
							 '[\s\S]*Group Spills: [1-9]'))
					FROM aq, unnest(ARRAY[64, 128, 256, 512, 1024, 2048]) l,
						LATERAL (SELECT set_config('gpujoin.device_memory_limit', l::text, true)) c
					WHERE name = 'thousands of groups, 200 expected'),
		'group-by ' || variant || ': groups past the memory limit are spilled to the host, not an error');
	FOR l IN 0 .. 1 LOOP
		PERFORM set_config('gpujoin.device_memory_limit', (ARRAY[256, 1024])[l + 1]::text, true);
		RETURN NEXT is(pg_temp.agg_failures(), '', 'group-by ' || variant || ', device_memory_limit = ' ||
			current_setting('gpujoin.device_memory_limit') || ': every query');
	END LOOP;
END $$;
SELECT * FROM pg_temp.spill_tests('auto');
SELECT * FROM pg_temp.spill_tests('sort');
SELECT * FROM pg_temp.spill_tests('sort_tr');
RESET gpujoin.groupby_variant;
RESET gpujoin.device_memory_limit;
-- a table's integer sums are exact for 2^32 matches: past its limit (here
-- lowered, with rounds of 1024 matches) it is emptied to the host
SET LOCAL gpujoin.preagg_table_matches = 1000;
SET LOCAL gpujoin.chunk_rows = 1000;
SELECT matches(pg_temp.plan_analyze(sql), 'Group Spills: [1-9]',
	'a table that has folded its most matches is emptied to the host before the next round')
	FROM aq WHERE name = 'numerics: 18 digits, sums past 2^63';
SELECT is(pg_temp.agg_failures(), '', 'tables of at most 1000 matches: every query');
RESET gpujoin.chunk_rows;
RESET gpujoin.preagg_table_matches;
SET LOCAL gpujoin.inject_fault = 'count_oom';
SELECT is(pg_temp.agg_failures(), '', 'out of device memory in the count, the groups so far kept: every query');
SET LOCAL gpujoin.inject_fault = 'retrieve_oom';
-- chunks of 1000 rows, rounds of 1024 matches: several rounds a chunk
SET LOCAL gpujoin.chunk_rows = 1000;
SELECT is(pg_temp.agg_failures(), '', 'out of device memory in a round mid-chunk, the CPU twin goes on from it: every query');
RESET gpujoin.chunk_rows;
RESET gpujoin.inject_fault;
SET LOCAL gpujoin.enable_preagg = off;
SELECT is((SELECT count(*) FROM aq WHERE pg_temp.plan(sql) ~ 'GpuPreAgg'), 0::bigint,
	'gpujoin.enable_preagg = off: no GpuPreAgg');
RESET gpujoin.enable_preagg;

-- parallel plans: a GpuPreAgg in each process, on its share of the outer
-- side's pages, under a Gather; Finalize Aggregate combines their rows
:parallel_cheap
SELECT matches(pg_temp.plan(sql), 'Gather[\s\S]*Parallel Custom Scan \(GpuPreAgg\)[\s\S]*heap pages, parallel',
	'parallel: a GpuPreAgg in each process under a Gather')
	FROM aq WHERE name = 'a key with NULLs';
SELECT is(pg_temp.agg_failures(), '', 'parallel plans: every query');
SET LOCAL max_parallel_workers_per_gather = 0;
SET LOCAL gpujoin.cost_as_gpu = on;

-- a rescan: the groups start over
\set q 'SELECT t.x, (SELECT sum(pr.v) FROM pr JOIN ps ON pr.k = ps.k WHERE ps.g = t.x) FROM generate_series(0, 7) t(x)'
:postgres_join
CREATE TEMP TABLE rescan_expected AS :q;
:gpu_join
SELECT matches(pg_temp.plan(:'q'), 'GpuPreAgg', 'a rescanned GpuPreAgg');
SELECT bag_eq(:'q', 'SELECT * FROM rescan_expected', 'rescanned: each value its own groups');

-- PostgreSQL's errors: an argument that overflows int4 where a row needs
-- it, a float sum past the largest float8
SELECT throws_ok('SELECT sum(pr.v + ps.big) FROM pr JOIN ps ON pr.k = ps.k', '22003', 'integer out of range',
	'an int4 overflow in an argument: PostgreSQL''s error');
SELECT matches(pg_temp.plan('SELECT sum(pr.v + ps.big) FROM pr JOIN ps ON pr.k = ps.k'), 'GpuPreAgg',
	'the overflowing query runs as a GpuPreAgg');
CREATE TABLE pbig (k int4, f float8);
INSERT INTO pbig SELECT g, 1e308 FROM generate_series(1, 10) g;
ANALYZE pbig;
SELECT throws_ok('SELECT sum(pbig.f) FROM pbig JOIN ps ON pbig.k = ps.k', '22003', 'value out of range: overflow',
	'a float sum that overflows: PostgreSQL''s error');
SELECT is((SELECT max(pbig.f) FROM pbig JOIN ps ON pbig.k = ps.k), 1e308::float8,
	'max of the same values: no error');
SELECT throws_ok('SELECT avg(pbig.f) FROM pbig JOIN ps ON pbig.k = ps.k', '22003', 'value out of range: overflow',
	'an average of floats whose sum overflows: PostgreSQL''s error');
-- avg(float8) past 1.8e108: folded on the host, where Finalize Aggregate
-- raises PostgreSQL's error when the squared deviations overflow
CREATE TABLE pavg (k int4, f float8);
INSERT INTO pavg SELECT g, CASE WHEN g % 2 = 0 THEN 2::float8 ^ 665 ELSE -(2::float8 ^ 665) END
	FROM generate_series(1, 10) g;
ANALYZE pavg;
SELECT throws_ok('SELECT avg(pavg.f) FROM pavg JOIN ps ON pavg.k = ps.k', '22003', 'value out of range: overflow',
	'an average of +-2^665: the squared deviations overflow, PostgreSQL''s error');
SELECT is((SELECT avg(pavg.f) FROM pavg JOIN ps ON pavg.k = ps.k WHERE pavg.f > 0), 2::float8 ^ 665,
	'an average of equal values past 1.8e108: no error');
SELECT matches(pg_temp.plan_analyze('SELECT avg(pavg.f) FROM pavg JOIN ps ON pavg.k = ps.k WHERE pavg.f > 0'),
	'GpuPreAgg[\s\S]*Matches Folded on the Host: [1-9]', 'values past 1.8e108 are folded on the host');
SELECT is((SELECT avg(pavg.f / 2::float8 ^ 333) FROM pavg JOIN ps ON pavg.k = ps.k), 0::float8,
	'an average of +-2^332: on the device, no error');
SELECT matches(pg_temp.plan_analyze('SELECT avg(pavg.f / 2::float8 ^ 333) FROM pavg JOIN ps ON pavg.k = ps.k'),
	'GpuPreAgg', 'an average of +-2^332 runs as a GpuPreAgg');

-- a float8 key: NaN its own group, -0 and 0 one (PostgreSQL shows the
-- first it met, GpuPreAgg 0: compared by equality), NULL its own
\set q 'SELECT pr.f, count(*), sum(pr.v), avg(pr.f4) FROM pr JOIN ps ON pr.k = ps.k GROUP BY pr.f'
:postgres_join
CREATE TEMP TABLE fkey_expected AS :q;
:gpu_join
SELECT matches(pg_temp.plan(:'q'), 'GpuPreAgg', 'a float8 key: a GpuPreAgg');
SELECT bag_eq(:'q', 'SELECT * FROM fkey_expected', 'a float8 key with NaN, -0, 0 and NULL: PostgreSQL''s groups');
SELECT results_eq(:'q' || ' ORDER BY 1 DESC', 'SELECT * FROM fkey_expected ORDER BY 1 DESC',
	'a float8 key in descending order: NaN first, NULL first');
SET LOCAL gpujoin.groupby_variant = 'sort';
SELECT bag_eq(:'q', 'SELECT * FROM fkey_expected', 'a float8 key, the sort-based group-by');
SET LOCAL gpujoin.groupby_variant = 'sort_tr';
SELECT bag_eq(:'q', 'SELECT * FROM fkey_expected', 'a float8 key, the sort-based group-by, values sorted along');
RESET gpujoin.groupby_variant;

-- numeric arithmetic: the device computes within 64 bits; a NaN or a
-- value past them is folded on the host from PostgreSQL's value
SELECT matches(pg_temp.plan_analyze(sql), 'Undecided Rounds: [1-9][\s\S]*Matches Folded on the Host: [1-9]',
	'numerics past 18 digits: matches folded on the host')
	FROM aq WHERE name = 'numeric arithmetic past 18 digits';
SELECT matches(pg_temp.plan(sql), 'GpuPreAgg[\s\S]*Device Aggregation: [a-z ,]+, 4 aggregates',
	'TPC-H''s revenue, sum(price * (1 - discount)), aggregated on the device')
	FROM aq WHERE name = 'numeric arithmetic: revenue, NaN and NULL';

-- a text key: its codes follow no collation, so no ordered GpuPreAgg
SELECT matches(pg_temp.plan('SELECT ps.name, count(*) FROM pr JOIN ps ON pr.k = ps.k GROUP BY ps.name ORDER BY ps.name'),
	'Sort[\s\S]*GpuPreAgg', 'a text key in order: sorted above the GpuPreAgg');
SELECT matches(pg_temp.plan_analyze('SELECT ps.name, count(*) FROM pr JOIN ps ON pr.k = ps.k GROUP BY ps.name'),
	'Device Aggregation: [a-z ,]+, 1 aggregate[\s\S]*Groups Returned: 11', 'a text key: one group per value on the device');

SELECT * FROM finish();
ROLLBACK;
