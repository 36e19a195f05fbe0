-- test/023_device_filter.sql
--
-- Scan quals on the device (src/planner_expr.c, cuda/expr/expr.h): a side
-- read as heap pages whose Seq Scan has quals the device evaluates keeps
-- no Seq Scan; the deform drops the tuples that fail them.  Differential:
-- every query returns PostgreSQL's rows, over every type the evaluator
-- takes, NULLs, NaN, -0 and infinities, integer and float arithmetic at
-- its limits, numerics of declared scale (an added column's default
-- undecided), text and varchar equality and IN lists (long, compressed,
-- out-of-line values and an added column's default undecided), text
-- ranges under the C collation (the cluster's; bytes above 127, the empty
-- string, prefixes), not under another (the host's),
-- AND/OR/NOT, IN and NOT IN lists with NULLs, casts, query
-- parameters; every join type; pages staged one at a time and small
-- chunks; a partitioned join (whose outer side the executor filters); a
-- parallel join; a rescan.  Where the device cannot decide a row (a step
-- that raises an error in PostgreSQL), PostgreSQL's own evaluation decides
-- it: the error where PostgreSQL raises it, none where its order of
-- evaluation avoids it.  Quals outside the evaluator are the host's: it
-- evaluates every qual on the tuples the device's pass (EXPLAIN's Host
-- Filter), with PostgreSQL's errors (quals over one column: a result per
-- value, reused); a qual with a query parameter, a
-- subquery or a volatile function, or a table under row-level security
-- whose policy the device does not evaluate, keeps the Seq Scan.
-- An operator's function replaced in the transaction: the new one runs.
BEGIN;
SELECT plan(49);
CREATE EXTENSION IF NOT EXISTS gpujoin;
LOAD 'gpujoin';
\ir helpers.psql
SET LOCAL client_min_messages = warning;
SET LOCAL max_parallel_workers_per_gather = 0;

-- a: every type the evaluator takes, with NULLs, NaN, -0, infinities and
-- values at the types' limits; a text column before them; a dropped and an
-- added column
CREATE TABLE a (t text, k int4, i2 int2, i8 int8, junk int, f4 float4, f8 float8, b bool, o oid,
				d date, ts timestamp, tz timestamptz, tm time, z int4);
INSERT INTO a SELECT
	CASE WHEN g % 9 = 0 THEN NULL ELSE 'x' || g END,
	CASE WHEN g % 37 = 0 THEN NULL ELSE g % 400 END,
	CASE WHEN g % 11 = 0 THEN NULL WHEN g % 101 = 0 THEN 32767 ELSE (g % 300 - 150)::int2 END,
	CASE WHEN g % 13 = 0 THEN NULL WHEN g % 103 = 0 THEN 9223372036854775807 ELSE g::int8 * 1000003 - 2000000000 END,
	g,
	CASE WHEN g % 17 = 0 THEN NULL WHEN g % 19 = 0 THEN 'NaN' WHEN g % 23 = 0 THEN '-0' ELSE (g % 500) / 8.0 END,
	CASE WHEN g % 29 = 0 THEN NULL WHEN g % 31 = 0 THEN 'NaN' WHEN g % 41 = 0 THEN 'Infinity'
		 WHEN g % 43 = 0 THEN '-0' WHEN g % 47 = 0 THEN 1e300 ELSE (g % 700) / 3.0 - 50 END,
	CASE WHEN g % 7 = 0 THEN NULL ELSE g % 3 = 0 END,
	(g * 7919 % 4000000000)::oid,
	date '2020-01-01' + g % 400,
	timestamp '2020-01-01' + g * interval '37 minutes',
	timestamptz '2020-01-01 00:00+00' + g * interval '41 minutes',
	time '00:00' + g * interval '13 seconds',
	CASE WHEN g % 53 = 0 THEN NULL ELSE g END
FROM generate_series(1, 5000) g;
ALTER TABLE a DROP COLUMN junk;
ALTER TABLE a ADD COLUMN added int4 DEFAULT 7;
INSERT INTO a (k, i2, i8, f8, z, added) SELECT g % 400, g, g, g, g, g % 11 FROM generate_series(1, 500) g;
-- c: the other side
CREATE TABLE c (k int4, w int4, f8 float8);
INSERT INTO c SELECT g % 450, CASE WHEN g % 19 = 0 THEN NULL ELSE g END, g / 7.0 FROM generate_series(1, 3000) g;
-- n: numerics of declared scale (read by the deform as integers of that
-- scale), with NULLs, NaN and negatives; one of more than 18 digits and
-- one without a declared scale (the host's); an added column, whose
-- default the deform leaves to the host
CREATE TABLE n (k int4, n2 numeric(12, 2), n4 numeric(18, 4), nb numeric(30, 2), nu numeric);
INSERT INTO n SELECT g % 400,
	CASE WHEN g % 17 = 0 THEN NULL ELSE (g % 1000 - 300) / 4.0 END,
	CASE WHEN g % 19 = 0 THEN NULL WHEN g % 23 = 0 THEN 'NaN' ELSE (g * 7 % 3001) / 13.0 END,
	CASE WHEN g % 5 = 0 THEN g::numeric * 1e20 + 0.5 ELSE g * 1000 END,
	g / 3.0
FROM generate_series(1, 4000) g;
ALTER TABLE n ADD COLUMN na numeric(8, 2) DEFAULT 1.25;
INSERT INTO n SELECT g % 400, g - 250, g / 8.0, g, g, g % 5 FROM generate_series(1, 500) g;
-- tx: text and varchar, short (1-byte headers) and of 200 bytes (4-byte
-- headers), compressed in line and stored out of line (TOAST pointers),
-- which the deform leaves to the host; an added column's default
CREATE TABLE tx (k int4, t text, v varchar(300));
INSERT INTO tx SELECT g % 400,
	CASE WHEN g % 11 = 0 THEN NULL
		 WHEN g % 7 = 0 THEN repeat('ab', 100) || (g % 3)
		 WHEN g % 13 = 0 THEN repeat('ab', 2000)
		 WHEN g % 17 = 0 THEN (SELECT string_agg(md5((g * 1000 + i)::text), '') FROM generate_series(1, 200) i)
		 ELSE 'w' || (g % 50) END,
	CASE WHEN g % 5 = 0 THEN NULL ELSE 'v' || (g % 20) END
FROM generate_series(1, 3000) g;
ALTER TABLE tx ADD COLUMN d text DEFAULT 'dflt';
INSERT INTO tx SELECT g % 400, 'w' || g, 'v' || g, CASE WHEN g % 2 = 0 THEN 'dflt' ELSE 'e' || g END
FROM generate_series(1, 300) g;
-- for the ranges: the empty string, prefixes of the constants, bytes above 127
INSERT INTO tx SELECT g % 400, (ARRAY['', 'w', 'w1', 'W1', 'w1' || chr(233), 'w' || chr(233), 'x', 'w3', 'w30', 'v'])[g % 10 + 1],
	(ARRAY['', 'v', 'v1' || chr(233), 'V', 'v19'])[g % 5 + 1], 'f'
FROM generate_series(1, 200) g;
-- a deterministic collation other than C: text ranges stay the host's
CREATE COLLATION pg_temp.en (provider = icu, locale = 'en-US');
ANALYZE a, c, n, tx;

-- the queries: how many sides each reads as pages, and how many of them
-- with a device filter
CREATE TEMP TABLE fq (name text PRIMARY KEY, sql text, heap_sides int, filters int);
INSERT INTO fq VALUES
	('int4 comparison', 'SELECT a.k, a.z, c.w FROM a JOIN c ON a.k = c.k WHERE a.z > 1000', 2, 1),
	('int2 arithmetic', 'SELECT a.k, a.i2, c.w FROM a JOIN c ON a.k = c.k WHERE a.i2 + 1 > 100 OR -a.i2 > 140', 2, 1),
	('int8 arithmetic, mixed widths', 'SELECT a.k, a.i8 FROM a JOIN c ON a.k = c.k WHERE a.i8 / 3 - a.k < 4000000000 AND a.i8 % 7 <> 2', 2, 1),
	('BETWEEN', 'SELECT a.k, a.z FROM a JOIN c ON a.k = c.k WHERE a.z BETWEEN 100 AND 2000', 2, 1),
	('IN with a NULL', 'SELECT a.k, a.z FROM a JOIN c ON a.k = c.k WHERE a.z IN (1, 5, 77, 300, 4000, NULL)', 2, 1),
	('NOT IN', 'SELECT a.k, a.z FROM a JOIN c ON a.k = c.k WHERE a.z NOT IN (1, 5, 77, 300)', 2, 1),
	('NOT IN with a NULL: no row', 'SELECT a.k FROM a JOIN c ON a.k = c.k WHERE a.z NOT IN (1, NULL)', 2, 1),
	('float8: NaN above everything', 'SELECT a.k, a.f8 FROM a JOIN c ON a.k = c.k WHERE a.f8 > 1e299', 2, 1),
	('float8: NaN = NaN, -0 = 0', 'SELECT a.k, a.f8 FROM a JOIN c ON a.k = c.k WHERE a.f8 = ''NaN'' OR a.f8 = 0', 2, 1),
	('float8 arithmetic', 'SELECT a.k, a.f8 FROM a JOIN c ON a.k = c.k WHERE a.f8 / 3 + 1 >= 20 AND a.f8 * 2 < 1e301', 2, 1),
	('float4 arithmetic and float4 = float8', 'SELECT a.k, a.f4 FROM a JOIN c ON a.k = c.k WHERE a.f4 * 3 > 100 OR a.f4 + a.f8 = 0', 2, 1),
	('bool', 'SELECT a.k, a.b FROM a JOIN c ON a.k = c.k WHERE a.b', 2, 1),
	('NOT bool, IS NOT TRUE, IS UNKNOWN', 'SELECT a.k, a.b FROM a JOIN c ON a.k = c.k WHERE NOT a.b OR (a.b IS NOT TRUE AND a.z < 100) OR (a.b IS UNKNOWN AND a.k < 5)', 2, 1),
	('IS NULL and IS NOT NULL', 'SELECT a.k, a.z FROM a JOIN c ON a.k = c.k WHERE a.z IS NULL OR (a.f4 IS NOT NULL AND a.f8 IS NULL)', 2, 1),
	('oid', 'SELECT a.k, a.o FROM a JOIN c ON a.k = c.k WHERE a.o > 20000000::oid', 2, 1),
	('date, timestamp, timestamptz, time', 'SELECT a.k, a.d FROM a JOIN c ON a.k = c.k WHERE a.d >= date ''2020-03-01'' AND a.ts < timestamp ''2020-03-15'' AND a.tz > timestamptz ''2020-01-10 00:00+00'' AND a.tm <> time ''00:13''', 2, 1),
	('casts', 'SELECT a.k, a.z FROM a JOIN c ON a.k = c.k WHERE a.z::int8 * 1000000000 > 5 AND a.k::float8 / 3 > 10 AND a.f8 < 1e6 AND a.f8::int4 % 2 = 0 AND a.i2::float4 > -100', 2, 1),
	('an added column', 'SELECT a.k, a.added FROM a JOIN c ON a.k = c.k WHERE a.added > 5', 2, 1),
	('undecided rows: a guarded division', 'SELECT a.k, a.z FROM a JOIN c ON a.k = c.k WHERE a.k <> 5 AND a.z / (a.k - 5) > 2', 2, 1),
	('undecided rows: a guarded overflow', 'SELECT a.k, a.i8 FROM a JOIN c ON a.k = c.k WHERE a.i8 < 1000000000000 AND a.i8 * 1000 > 7', 2, 1),
	('quals on both sides', 'SELECT a.k, a.z, c.w FROM a JOIN c ON a.k = c.k WHERE a.z < 3000 AND c.w % 3 = 1', 2, 2),
	('a text column', 'SELECT a.t, a.k, c.w FROM a JOIN c ON a.k = c.k WHERE a.z % 4 = 1', 2, 1),
	('left join, the inner side filtered', 'SELECT a.k, a.z, c2.w FROM a LEFT JOIN (SELECT * FROM c WHERE c.w > 1500) c2 ON a.k = c2.k', 2, 1),
	('right join', 'SELECT a.k, c.w FROM a RIGHT JOIN c ON a.k = c.k WHERE c.f8 < 300', 2, 1),
	('full join', 'SELECT a.k, c2.w FROM (SELECT * FROM a WHERE a.z < 2500) a FULL JOIN (SELECT * FROM c WHERE c.w > 100) c2 ON a.k = c2.k', 2, 2),
	('semi join', 'SELECT a.k, a.z FROM a WHERE a.z > 4000 AND EXISTS (SELECT 1 FROM c WHERE c.k = a.k AND c.w < 1000)', 2, 2),
	('anti join', 'SELECT a.k, a.z FROM a WHERE a.f8 < 100 AND NOT EXISTS (SELECT 1 FROM c WHERE c.k = a.k AND c.w < 1000)', 2, 2),
	('numeric comparison', 'SELECT n.k, n.n2 FROM n JOIN c ON n.k = c.k WHERE n.n2 > 10.5', 2, 1),
	('numeric BETWEEN, constants of other scales', 'SELECT n.k, n.n4, c.w FROM n JOIN c ON n.k = c.k WHERE n.n4 BETWEEN 0.055 AND 150 AND n.n2 <> 7', 2, 1),
	('numeric: NaN above everything, NULLs', 'SELECT n.k, n.n4 FROM n JOIN c ON n.k = c.k WHERE n.n4 >= 230.5 OR n.n4 IS NULL', 2, 1),
	('numeric of more than 18 digits: the host''s filter', 'SELECT n.k, n.nb FROM n JOIN c ON n.k = c.k WHERE n.nb > 3000000', 2, 0),
	('numeric arithmetic', 'SELECT n.k, n.n2, n.n4 FROM n JOIN c ON n.k = c.k WHERE n.n2 * 2 + n.n4 > 100 AND -n.n2 < 50', 2, 1),
	('an added numeric column: its default undecided', 'SELECT n.k, n.na, n.n2 FROM n JOIN c ON n.k = c.k WHERE n.na > 1', 2, 1),
	('numeric without a declared scale: the host''s filter', 'SELECT n.k, n.nu FROM n JOIN c ON n.k = c.k WHERE n.nu > 5', 2, 0),
	('text equality', 'SELECT tx.k, tx.t FROM tx JOIN c ON tx.k = c.k WHERE tx.t = ''w7''', 2, 1),
	('text IN with a NULL, <>, 200 bytes', 'SELECT tx.k, tx.t, c.w FROM tx JOIN c ON tx.k = c.k WHERE tx.t IN (''w1'', ''w22'', ' || quote_literal(repeat('ab', 100) || '2') || ', NULL) OR (tx.t <> ''w3'' AND tx.k < 40)', 2, 1),
	('text NOT IN: compressed and out-of-line values undecided', 'SELECT tx.k, tx.v, length(tx.t) FROM tx JOIN c ON tx.k = c.k WHERE tx.t NOT IN (''w1'', ''w2'', ''w3'') AND tx.k < 200', 2, 1),
	('varchar, and text under COLLATE "C"', 'SELECT tx.k, tx.v FROM tx JOIN c ON tx.k = c.k WHERE tx.v = ''v7'' OR tx.t = ''w9'' COLLATE "C"', 2, 1),
	('text range', 'SELECT tx.k, tx.t, c.w FROM tx JOIN c ON tx.k = c.k WHERE tx.t BETWEEN ''w1'' AND ''w3''', 2, 1),
	('text and varchar orders, constants first, with = and IN', 'SELECT tx.k, tx.t, tx.v FROM tx JOIN c ON tx.k = c.k WHERE (''w1'' < tx.t AND tx.v >= ''v1'') OR tx.t IN (''w'', ''x'') OR tx.t <= '''' OR tx.v > ''v1'' || chr(200) OR ''w30'' = tx.t', 2, 1),
	('text orders under POSIX, bytes above 127', 'SELECT tx.k, tx.t FROM tx JOIN c ON tx.k = c.k WHERE tx.t COLLATE "POSIX" > ''w1'' AND tx.t < ''w'' || chr(233) || ''z''', 2, 1),
	('a text range under another collation: the host''s filter', 'SELECT tx.k, tx.t FROM tx JOIN c ON tx.k = c.k WHERE tx.t COLLATE pg_temp.en BETWEEN ''W1'' AND ''w3''', 2, 0),
	('an added text column: its default undecided', 'SELECT tx.k, tx.d FROM tx JOIN c ON tx.k = c.k WHERE tx.d IN (''dflt'', ''e7'')', 2, 1),
	('LIKE: the host''s filter', 'SELECT a.k, c.w FROM a JOIN c ON a.k = c.k WHERE a.t LIKE ''x1%''', 2, 0),
	('CASE: the host''s filter', 'SELECT a.k, c.w FROM a JOIN c ON a.k = c.k WHERE CASE WHEN a.z > 5 THEN a.k ELSE 0 END > 3', 2, 0),
	('a long IN list: the host''s filter', 'SELECT a.k FROM a JOIN c ON a.k = c.k WHERE a.z IN (' || (SELECT string_agg(g::text, ',') FROM generate_series(1, 300) g) || ')', 2, 0),
	('the device''s quals, then the host''s', 'SELECT a.k, a.t, c.w FROM a JOIN c ON a.k = c.k WHERE a.z > 1200 AND a.t LIKE ''x1%'' AND a.f8 < 200', 2, 1),
	('the host''s quals on both sides, a text range', 'SELECT tx.k, tx.t, c.w FROM tx JOIN c ON tx.k = c.k WHERE tx.t COLLATE pg_temp.en BETWEEN ''w1'' AND ''w3'' AND c.f8::text LIKE ''1%''', 2, 0),
	('the host''s quals, a left join''s inner side', 'SELECT a.k, a.z, c2.w FROM a LEFT JOIN (SELECT * FROM c WHERE c.w::text LIKE ''%7'') c2 ON a.k = c2.k', 2, 0),
	('the host''s quals, an anti join', 'SELECT a.k FROM a WHERE a.t LIKE ''%3'' AND NOT EXISTS (SELECT 1 FROM c WHERE c.k = a.k AND c.w::text LIKE ''1%'')', 2, 0),
	('a volatile qual keeps the Seq Scan', 'SELECT a.k, c.w FROM a JOIN c ON a.k = c.k WHERE a.z > 100 AND a.z + (random() * 0)::int4 >= 0', 1, 0),
	('a qual with a subquery keeps the Seq Scan', 'SELECT a.k, c.w FROM a JOIN c ON a.k = c.k WHERE a.z > (SELECT max(w) - 2000 FROM c c3 WHERE c3.k = a.k)', 1, 0);

CREATE TEMP TABLE fq_expected (name text, digest text);
:postgres_join
INSERT INTO fq_expected SELECT name, pg_temp.rows_digest(sql) FROM fq;
SELECT is((SELECT string_agg(name, ', ' ORDER BY name) FROM fq_expected e
		   WHERE (SELECT count(*) FROM fq_expected f WHERE f.digest = e.digest) > 1
			 OR digest LIKE '0:%'), 'NOT IN with a NULL: no row',
	'the reference: each query has rows of its own (one has none)');

:gpu_join
SELECT is(pg_temp.heap_failures('fq', 'fq_expected'), '', 'device filters: every query, default settings');
SELECT matches(pg_temp.plan(sql), 'Outer Relation: a \(heap pages\)\n\s+Outer Device Filter: \(a\.z > 1000\)', 'EXPLAIN shows the device filter under its relation')
	FROM fq WHERE name = 'int4 comparison';
SELECT doesnt_match(pg_temp.plan(sql), 'Seq Scan', 'no Seq Scan node: both filtered sides read as pages')
	FROM fq WHERE name = 'quals on both sides';
SELECT is(pg_temp.plan_number(pg_temp.plan_analyze(sql), 'Rows Removed by Outer Device Filter'),
		  (SELECT count(*) FROM a WHERE NOT coalesce(a.z > 1000, false)),
		  'EXPLAIN ANALYZE counts the rows the filter removed')
	FROM fq WHERE name = 'int4 comparison';
SELECT is(pg_temp.plan_number(pg_temp.plan_analyze(sql), 'Rows Removed by Outer Device Filter'),
		  (SELECT count(*) FROM n WHERE NOT coalesce(n.n2 > 10.5, false)),
		  'a numeric qual: the filter removed the rows it fails')
	FROM fq WHERE name = 'numeric comparison';
SELECT is(pg_temp.plan_number(pg_temp.plan_analyze(sql), 'Rows Removed by Outer Device Filter'),
		  (SELECT count(*) FROM n WHERE NOT coalesce(n.na > 1, false)),
		  'an added numeric column: the rows of its default (1.25, left to the host) kept')
	FROM fq WHERE name = 'an added numeric column: its default undecided';
SELECT is(pg_temp.plan_number(pg_temp.plan_analyze(sql), 'Rows Removed by (?:Outer|Inner) Device Filter'),
		  (SELECT count(*) FROM tx WHERE NOT coalesce(tx.t = 'w7', false)),
		  'a text qual: the filter removed the rows it fails')
	FROM fq WHERE name = 'text equality';
SELECT matches(pg_temp.plan(sql), '(?:Outer|Inner) Device Filter: [^\n]*\(tx\.t <> ALL \(''\{w1,w2,w3\}''::text\[\]\)\)',
			   'EXPLAIN shows the text qual as the device''s filter')
	FROM fq WHERE name = 'text NOT IN: compressed and out-of-line values undecided';
SELECT matches(pg_temp.plan(sql), '(?:Outer|Inner) Device Filter: \(\(tx\.t >= ''w1''::text\) AND \(tx\.t <= ''w3''::text\)\)',
			   'EXPLAIN shows a text range under the C collation as the device''s filter')
	FROM fq WHERE name = 'text range';
SELECT is(pg_temp.plan_number(pg_temp.plan_analyze(sql), 'Rows Removed by (?:Outer|Inner) Device Filter'),
		  (SELECT count(*) FROM tx WHERE NOT coalesce(tx.t BETWEEN 'w1' AND 'w3', false)),
		  'a text range: the filter removed the rows it fails')
	FROM fq WHERE name = 'text range';
-- the host's quals over one column: each value's result reused for the
-- tuples after it (not for compressed and out-of-line values); over two
-- columns, none
SELECT matches(pg_temp.plan_analyze(sql), 'Pages: [^\n]* filter-reused=[1-9]',
			   'a host filter over one column: its results reused per value')
	FROM fq WHERE name = 'a text range under another collation: the host''s filter';
SELECT doesnt_match(pg_temp.plan_analyze(sql), 'filter-reused=',
					'a host filter over two columns: evaluated for every tuple')
	FROM fq WHERE name = 'CASE: the host''s filter';
SET LOCAL gpujoin.heap_stage_pages = 1;
SET LOCAL gpujoin.chunk_rows = 7;
SELECT is(pg_temp.heap_failures('fq', 'fq_expected'), '', 'pages staged one at a time, chunks of 7 rows: every query');
RESET gpujoin.chunk_rows;
RESET gpujoin.heap_stage_pages;
SELECT is(pg_temp.heap_failures('fq', 'fq_expected', false), '', 'device filters, ' || v || ': every query')
	FROM unnest(ARRAY['nphj', 'phj', 'smj']) v, LATERAL (SELECT set_config('gpujoin.join_variant', v, true)) c;
RESET gpujoin.join_variant;
SET LOCAL gpujoin.enable_hashjoin = off;
SELECT is(pg_temp.heap_failures('fq', 'fq_expected', false), '', 'device filters under GPU merge joins: every query');
RESET gpujoin.enable_hashjoin;
SET LOCAL gpujoin.enable_heapscan = off;
SELECT is(pg_temp.heap_failures('fq', 'fq_expected', false), '', 'the Seq Scan children (enable_heapscan = off): every query');
SELECT doesnt_match(pg_temp.plan(sql), 'Device Filter', 'enable_heapscan = off: the quals stay in the Seq Scan')
	FROM fq WHERE name = 'int4 comparison';
RESET gpujoin.enable_heapscan;

-- a partitioned join: the outer side goes to the partitions tuple by tuple,
-- its quals evaluated by the executor
SET LOCAL gpujoin.device_memory_limit = 64;
SELECT matches(pg_temp.plan_analyze(sql), 'Outer Device Filter: [^\n]*\n\s+Rows Removed by Outer Device Filter: \d+[\s\S]*Partitions: \d+',
			   'partitioned: the outer side filtered')
	FROM fq WHERE name = 'int4 comparison';
SELECT is(pg_temp.heap_failures('fq', 'fq_expected', false), '', 'partitioned joins with device filters: every query');
RESET gpujoin.device_memory_limit;

-- errors where PostgreSQL raises them, and only there
\set q_div 'SELECT a.k, a.z FROM a JOIN c ON a.k = c.k WHERE a.z / (a.k - 5) > 2'
\set q_ovf 'SELECT a.k FROM a JOIN c ON a.k = c.k WHERE a.i8 * 1000 > 7'
\set q_i2 'SELECT a.k FROM a JOIN c ON a.k = c.k WHERE a.i2 * 2::int2 > 0'
\set q_cast 'SELECT a.k FROM a JOIN c ON a.k = c.k WHERE a.i8::int4 > 0'
\set q_fovf 'SELECT a.k FROM a JOIN c ON a.k = c.k WHERE a.f8 * 1e10 > 0'
:postgres_join
SELECT throws_ok(:'q_div', '22012', NULL, 'the reference raises division by zero');
SELECT throws_ok(:'q_ovf', '22003', NULL, 'the reference raises bigint out of range');
:gpu_join
SELECT matches(pg_temp.plan(:'q_div'), 'Outer Device Filter', 'the division is a device filter');
SELECT throws_ok(:'q_div', '22012', 'division by zero', 'device filter: division by zero, as PostgreSQL raises it');
SELECT throws_ok(:'q_ovf', '22003', 'bigint out of range', 'device filter: bigint out of range');
SELECT throws_ok(:'q_i2', '22003', 'smallint out of range', 'device filter: smallint out of range');
SELECT throws_ok(:'q_cast', '22003', 'integer out of range', 'device filter: a cast out of range');
SELECT throws_ok(:'q_fovf', '22003', 'value out of range: overflow', 'device filter: float8 overflow');

-- the host's quals: EXPLAIN shows them apart from the device's, the rows
-- removed count both, and their errors are PostgreSQL's
SELECT matches(pg_temp.plan(sql), 'Device Filter: \(a\.z > 1200\)\n\s+(?:Outer|Inner) Host Filter: \(\(a\.t ~~ ''x1%''::text\) AND \(a\.f8 < ''200''::double precision\)\)',
			   'EXPLAIN: the quals before the first the device does not evaluate are the device''s, the rest the host''s')
	FROM fq WHERE name = 'the device''s quals, then the host''s';
SELECT is(pg_temp.plan_number(pg_temp.plan_analyze(sql), 'Rows Removed by (?:Outer|Inner) Device and Host Filters'),
		  (SELECT count(*) FROM a WHERE NOT coalesce(a.z > 1200 AND a.t LIKE 'x1%' AND a.f8 < 200, false)),
		  'EXPLAIN ANALYZE counts the rows the device''s and the host''s quals removed')
	FROM fq WHERE name = 'the device''s quals, then the host''s';
\set q_text 'SELECT a.k FROM a JOIN c ON a.k = c.k WHERE a.z > 10 AND a.t::int4 > 0'
:postgres_join
SELECT throws_ok(:'q_text', '22P02', NULL, 'the reference raises invalid input syntax');
:gpu_join
SELECT throws_ok(:'q_text', '22P02', 'invalid input syntax for type integer: "x11"', 'the host''s filter: invalid input syntax, as PostgreSQL raises it');
-- a qual of the host's before one of the device's in the planner's order:
-- PostgreSQL evaluates it on every row, so the device's may drop none
\set q_order 'SELECT a.k FROM a JOIN c ON a.k = c.k WHERE a.t::int4 > 0 AND a.z + 1 + 1 + 1 < 0'
:postgres_join
SELECT throws_ok(:'q_order', '22P02', NULL, 'the reference raises it before the cheaper qual that every row fails');
:gpu_join
SELECT throws_ok(:'q_order', '22P02', 'invalid input syntax for type integer: "x1"', 'a qual of the device''s after one of the host''s: the host''s, and the error is raised');

-- query parameters: a generic plan's filter reads them when the scan starts
SET LOCAL plan_cache_mode = force_generic_plan;
PREPARE pq(int4, float8) AS SELECT a.k, a.z, c.w FROM a JOIN c ON a.k = c.k WHERE a.z > $1 AND a.f8 < $2;
SELECT matches(string_agg(l, E'\n'), 'Outer Device Filter: \(\(a\.z > \$1\) AND \(a\.f8 < \$2\)\)',
			   'a generic plan: the parameters in the device filter')
	FROM gpujoin_explain('EXECUTE pq(4000, 100)') l;
-- PL/pgSQL's variables are such parameters, fetched through its hook
CREATE FUNCTION pg_temp.pq(lim int4, fl float8) RETURNS TABLE (k int4, z int4, w int4)
LANGUAGE plpgsql AS $f$
BEGIN
	RETURN QUERY SELECT a.k, a.z, c.w FROM a JOIN c ON a.k = c.k WHERE a.z > lim AND a.f8 < fl;
END
$f$;
:postgres_join
CREATE TEMP TABLE pq_expected AS
	SELECT 1 AS run, * FROM pg_temp.pq(4000, 100) UNION ALL SELECT 2, * FROM pg_temp.pq(100, 10)
	UNION ALL SELECT 3, * FROM pg_temp.pq(NULL, 10);
:gpu_join
SELECT bag_eq($$SELECT 1 AS run, * FROM pg_temp.pq(4000, 100) UNION ALL SELECT 2, * FROM pg_temp.pq(100, 10)
				UNION ALL SELECT 3, * FROM pg_temp.pq(NULL, 10)$$,
			  'SELECT * FROM pq_expected', 'parameters: each execution its own rows (a NULL one: none)');
-- a parameter in a qual the device does not evaluate: the Seq Scan stays
PREPARE pq2(text) AS SELECT a.k, c.w FROM a JOIN c ON a.k = c.k WHERE a.t LIKE $1;
SELECT doesnt_match(string_agg(l, E'\n'), 'Relation: a \(heap pages',
					'a generic plan''s parameter in a qual the host would evaluate: the Seq Scan stays')
	FROM gpujoin_explain('EXECUTE pq2(''x2%'')') l;
:postgres_join
CREATE TEMP TABLE pq2_expected AS SELECT a.k, c.w FROM a JOIN c ON a.k = c.k WHERE a.t LIKE 'x2%';
:gpu_join
SELECT bag_eq('EXECUTE pq2(''x2%'')', 'SELECT * FROM pq2_expected', 'that parameter: PostgreSQL''s rows');
RESET plan_cache_mode;

-- row-level security: a policy's qual comes before the query's, so where
-- the device does not evaluate it, the Seq Scan stays
CREATE ROLE gj_rls_user;
CREATE TABLE sec AS SELECT * FROM a;
ALTER TABLE sec ENABLE ROW LEVEL SECURITY;
CREATE POLICY sec_x1 ON sec USING (t LIKE 'x1%');
GRANT SELECT ON sec, c TO gj_rls_user;
ANALYZE sec;
\set q 'SELECT sec.k, sec.z, c.w FROM sec JOIN c ON sec.k = c.k WHERE sec.z > 100'
SET LOCAL ROLE gj_rls_user;
:postgres_join
CREATE TEMP TABLE sec_expected AS :q;
:gpu_join
SELECT doesnt_match(pg_temp.plan(:'q'), 'Relation: sec \(heap pages',
					'row-level security, its policy''s qual not the device''s: the Seq Scan stays');
SELECT bag_eq(:'q', 'SELECT * FROM sec_expected', 'row-level security: the rows the policy lets through');
RESET ROLE;

-- a parallel join: the processes share the filtered outer side's blocks
-- (through the gpujoin service with the inner side read in shares, the
-- planner makes the filtered relation the inner side: one reader of it
-- here)
\set q 'SELECT a.k, a.z, c.w FROM a JOIN c ON a.k = c.k WHERE a.z % 3 = 0 AND a.f8 > 10'
:postgres_join
CREATE TEMP TABLE par_expected AS :q;
:gpu_join
:parallel_cheap
SET LOCAL gpujoin.parallel_inner_shares = off;
SELECT matches(pg_temp.plan(:'q'), 'Outer Relation: a \(heap pages, parallel\)\n\s+Outer Device Filter',
			   'parallel: the outer side filtered, its blocks shared');
SELECT bag_eq(:'q', 'SELECT * FROM par_expected', 'parallel: the same rows');
RESET gpujoin.parallel_inner_shares;
SELECT bag_eq(:'q', 'SELECT * FROM par_expected', 'parallel, gpujoin''s defaults: the same rows');
RESET max_parallel_workers_per_gather;

-- a rescan: the filtered sides read again, or kept
\set q 'SELECT t.g, ss.* FROM (VALUES (1), (2), (3)) t(g), LATERAL (SELECT count(*), sum(c.w) FROM a JOIN c ON a.k = c.k + t.g WHERE a.z > 1000 AND c.w < 2500) ss'
:postgres_join
CREATE TEMP TABLE rescan_expected AS :q;
:gpu_join
SET LOCAL enable_memoize = off;
SELECT bag_eq(:'q', 'SELECT * FROM rescan_expected', 'rescanned: each value its own rows');
RESET enable_memoize;

-- an operator whose function is internal (a superuser's): the device runs
-- what its C function does; that function replaced by another (pg_proc's
-- row updated in place, its OID kept), the next plan runs the new one, not
-- the planner's remembered answer for the OID
CREATE FUNCTION gj_cmp(int4, int4) RETURNS bool LANGUAGE internal IMMUTABLE STRICT AS 'int4lt';
CREATE OPERATOR ### (LEFTARG = int4, RIGHTARG = int4, FUNCTION = gj_cmp);
\set q 'SELECT a.k, a.z, c.w FROM a JOIN c ON a.k = c.k WHERE a.z ### 1500'
:postgres_join
CREATE TEMP TABLE op_lt AS :q;
:gpu_join
SELECT matches(pg_temp.plan(:'q'), 'Device Filter: \(a\.z ### 1500\)', 'an operator of an internal function: a device filter');
SELECT bag_eq(:'q', 'SELECT * FROM op_lt', 'that operator: PostgreSQL''s rows');
CREATE OR REPLACE FUNCTION gj_cmp(int4, int4) RETURNS bool LANGUAGE internal IMMUTABLE STRICT AS 'int4gt';
:postgres_join
CREATE TEMP TABLE op_gt AS :q;
:gpu_join
SELECT bag_eq(:'q', 'SELECT * FROM op_gt', 'its function replaced by another: the new function''s rows');

SELECT * FROM finish();
ROLLBACK;
