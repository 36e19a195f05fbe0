-- test/031_chain.sql
--
-- GPU hash joins stacked one on another run as one chain (src/exec_chain.c,
-- gpujoin.enable_chain): the top node builds every level's table, reads the
-- lowest level's outer side once, and each level's matches go to the next
-- on the device; only the last level's come back, with the row numbers of
-- every side.  EXPLAIN says "Chain: N joins ..." on the top and "Chain: a
-- level ..." on the others.  The rows must be PostgreSQL's: stars of 2 to
-- 5 dimensions over int4, int8 and date keys, NULL and missing foreign
-- keys, repeated dimension keys (a row matching several), text and
-- numeric columns from every side (host columns through each side's row
-- number), semi joins (IN, EXISTS over repeated keys: the kernels keep
-- one match of each row), anti joins (NOT EXISTS: the
-- kernels hand up the rows with no match, NULL keys and an empty inner
-- side included), left joins (the rows with no match NULL-extended on the
-- device, a host column of the left join's inner side NULL), an empty
-- dimension (lowest: chained where the levels above have integer keys,
-- which the kernels pack for the rows that reach them, int4 against int8
-- too; apart where a key is encoded on the host for every fact row), a join with a filter or a
-- hashed text key
-- (which recheck their rows on the host: the planner puts them lowest, and
-- the chain starts above them), a snowflake (a level keyed by the level
-- below's column); EXPLAIN VERBOSE's "Chain Keys" (integer keys packed
-- on the device, a numeric one encoded on the host); the same with the
-- chain off (stacked nodes, no "Chain:"); the levels' rows in EXPLAIN
-- ANALYZE; the top's list of its levels (text, JSON, their rows under
-- ANALYZE); the levels ordered by their estimated selectivities, whichever
-- order the query names them in; the chain running out of
-- device memory in its build (it comes apart into its joins) or in its
-- count or retrieve (gpujoin.inject_fault: it goes on on the CPU twin
-- after the matches it had taken); tables that do not fit the device
-- together (gpujoin.device_memory_limit: one level partitioned, the joins
-- one by one); the planner's price of a chain (EXPLAIN VERBOSE, cheaper
-- than the stacked plan); a chain rescanned for each row of a correlated
-- subquery; a chain cut short by a LIMIT; a left join on top (no chain).
-- A GpuPreAgg on top of a chain (gpujoin.enable_chain_preagg): the last
-- level's matches folded into the groups on the device, group keys and
-- arguments from every level, text group keys of every side (the side
-- below that holds one carries its codes: short texts' words, long
-- texts' codes of the GpuPreAgg's dictionary, NULLs); not where an input
-- is converted by the GpuPreAgg's own outer side (a numeric argument) but
-- not by the side it comes from alike (a numeric of declared scale of the
-- fact table read as pages is, scaled by the deform); out
-- of device memory in the build, count and aggregate; an argument whose
-- division by zero the device leaves to the host (PostgreSQL's error).
-- Partial chains below a Gather (gpujoin.enable_parallel_chain: each
-- process runs the whole chain on its share of the fact table): the same rows, the fact table read once
-- between the processes, the lowest level's inner side read once in shares
-- (a snowflake's with the key of the level above), out of device memory, a
-- partial GpuPreAgg on top.
BEGIN;
SELECT plan(166);
CREATE EXTENSION IF NOT EXISTS gpujoin;
LOAD 'gpujoin';
\ir helpers.psql
SET LOCAL client_min_messages = warning;
SET LOCAL max_parallel_workers_per_gather = 0;
SET LOCAL gpujoin.enable_mergejoin = off;

-- the fact table: a key per dimension (NULL in some rows, missing in others)
CREATE TABLE f (id int, k1 int4, k2 int8, k3 int4, k4 date, k5 int4, v int4, t text, n numeric,
				nd numeric(12, 2));
INSERT INTO f SELECT g,
	CASE WHEN g % 101 = 0 THEN NULL ELSE (g * 7) % 1300 END,
	CASE WHEN g % 103 = 0 THEN NULL ELSE (g * 13) % 950 END,
	(g * 31) % 520,
	date '2020-01-01' + (g * 17) % 400,
	g % 60,
	g % 97,
	'f' || (g % 1000),
	g * 0.5,
	CASE WHEN g % 89 = 0 THEN NULL WHEN g % 97 = 0 THEN 'NaN' ELSE (g % 20011 - 10000) * 1.25 END
	FROM generate_series(1, 30000) g;
-- dimensions: d1 (int4, unique), d2 (int8, keys repeated: up to 3 rows a
-- key), d3 (int4, unique), d4 (date, unique), d5 (int4, two rows a key)
CREATE TABLE d1 (k int4, a int4, name text);
INSERT INTO d1 SELECT g, g % 10, 'd1_' || g FROM generate_series(1, 1200) g;
CREATE TABLE d2 (k int8, b int8, name text);
INSERT INTO d2 SELECT g % 700, g, 'd2_' || g FROM generate_series(1, 1800) g;
CREATE TABLE d3 (k int4, c int4);
INSERT INTO d3 SELECT g, CASE WHEN g % 9 = 0 THEN NULL ELSE g % 5 END FROM generate_series(1, 500) g;
CREATE TABLE d4 (k date, w float8);
INSERT INTO d4 SELECT date '2020-01-01' + g, g * 0.25 FROM generate_series(0, 360) g;
CREATE TABLE d5 (k int4, z int4);
INSERT INTO d5 SELECT g % 50, g FROM generate_series(1, 100) g;
-- snowflake: d1s's k2 keys d2
CREATE TABLE d1s (k int4, k2 int8, name text);
INSERT INTO d1s SELECT g, CASE WHEN g % 40 = 0 THEN NULL ELSE (g * 3) % 800 END, 'd1s_' || g
	FROM generate_series(1, 1300) g;
-- text-keyed dimension
CREATE TABLE dt (t text, x int4);
INSERT INTO dt SELECT 'f' || g, g FROM generate_series(0, 999, 3) g;
CREATE TABLE e (k int4, y int4);
-- long texts (longer than a word: codes of a dictionary), NULL in some rows
CREATE TABLE dl (k int4, label text);
INSERT INTO dl SELECT g, CASE WHEN g % 11 = 0 THEN NULL
	ELSE 'a label longer than a word, number ' || (g % 17) END FROM generate_series(1, 500) g;
-- a numeric key (encoded on the host, not packed by the kernels)
CREATE TABLE dn (k numeric, u int4);
INSERT INTO dn SELECT g, g FROM generate_series(0, 2000) g;
ANALYZE f, d1, d2, d3, d4, d5, d1s, dt, e, dl, dn;

-- levels: how many joins the chain has (a pattern where the device's costs
-- decide the join order: the text key's join lowest, the chain above it, or
-- on top, where its key is rechecked)
CREATE TEMP TABLE q (name text PRIMARY KEY, levels text, sql text);
INSERT INTO q VALUES
	('star of 2', '2', 'SELECT f.id, f.t, d1.name, d3.c FROM f JOIN d1 ON f.k1 = d1.k JOIN d3 ON f.k3 = d3.k'),
	('star of 3, repeated int8 keys', '3',
	 'SELECT f.id, f.v, f.n, d1.a, d2.b, d2.name, d3.c FROM f JOIN d1 ON f.k1 = d1.k JOIN d2 ON f.k2 = d2.k JOIN d3 ON f.k3 = d3.k'),
	('star of 4, date key', '4',
	 'SELECT f.id, d1.name, d2.b, d3.c, d4.w FROM f JOIN d1 ON f.k1 = d1.k JOIN d2 ON f.k2 = d2.k JOIN d3 ON f.k3 = d3.k JOIN d4 ON f.k4 = d4.k'),
	('star of 5', '5',
	 'SELECT f.id, f.t, d1.a, d2.b, d3.c, d4.k, d5.z FROM f JOIN d1 ON f.k1 = d1.k JOIN d2 ON f.k2 = d2.k JOIN d3 ON f.k3 = d3.k JOIN d4 ON f.k4 = d4.k JOIN d5 ON f.k5 = d5.k'),
	('a join filter', '3',
	 'SELECT f.id, d1.a, d3.c FROM f JOIN d1 ON f.k1 = d1.k JOIN d3 ON f.k3 = d3.k JOIN d5 ON f.k5 = d5.k AND f.v < d5.z'),
	('a text key', '[23]',
	 'SELECT f.id, d1.a, dt.x FROM f JOIN d1 ON f.k1 = d1.k JOIN d3 ON f.k3 = d3.k JOIN dt ON f.t = dt.t'),
	('semi joins, repeated keys', '[2-4]',
	 'SELECT f.id, d1.a, f.k2 FROM f JOIN d1 ON f.k1 = d1.k JOIN d3 ON f.k3 = d3.k WHERE f.k2 IN (SELECT k FROM d2 WHERE b > 100) AND EXISTS (SELECT 1 FROM d5 WHERE d5.k = f.k5)'),
	('an anti join, NULL keys', '[2-4]',
	 'SELECT f.id, d1.a, d3.c FROM f JOIN d1 ON f.k1 = d1.k JOIN d3 ON f.k3 = d3.k WHERE NOT EXISTS (SELECT 1 FROM d2 WHERE d2.k = f.k2)'),
	('an anti join on an empty table, a semi join', '[2-4]',
	 'SELECT f.id, d1.a FROM f JOIN d1 ON f.k1 = d1.k JOIN d3 ON f.k3 = d3.k WHERE NOT EXISTS (SELECT 1 FROM e WHERE e.k = f.k5) AND f.k2 IN (SELECT k FROM d2)'),
	('a left join on an empty table', '[2-4]',
	 'SELECT f.id, d1.a, e.y, d3.c FROM f JOIN d1 ON f.k1 = d1.k LEFT JOIN e ON f.k5 = e.k JOIN d3 ON f.k3 = d3.k'),
	('only the aggregate', '3',
	 'SELECT count(*), sum(f.v + d1.a + d3.c), string_agg(DISTINCT d2.name, '','' ORDER BY d2.name) FROM f JOIN d1 ON f.k1 = d1.k JOIN d2 ON f.k2 = d2.k JOIN d3 ON f.k3 = d3.k');

-- more queries, whose plans are looked at one by one
CREATE TEMP TABLE q2 (name text PRIMARY KEY, sql text);
INSERT INTO q2 VALUES
	('snowflake', 'SELECT f.id, d1s.name, d2.b FROM (f JOIN d1s ON f.k1 = d1s.k) JOIN d2 ON d1s.k2 = d2.k'),
	('an empty dimension', 'SELECT f.id, d1.a, e.y FROM f JOIN d1 ON f.k1 = d1.k JOIN d3 ON f.k3 = d3.k JOIN e ON f.k5 = e.k'),
	('an empty dimension, a cross-type key', 'SELECT f.id, d2.b, d3.c FROM f JOIN e ON f.k5 = e.k JOIN d3 ON f.k3 = d3.k JOIN d2 ON f.k1 = d2.k'),
	('an empty dimension, a numeric key', 'SELECT f.id, dn.u, d3.c FROM f JOIN e ON f.k5 = e.k JOIN d3 ON f.k3 = d3.k JOIN dn ON f.n = dn.k'),
	('correlated', 'SELECT x, (SELECT string_agg(f.id::text || '':'' || d3.c, '','' ORDER BY f.id, d3.c) FROM f JOIN d1 ON f.k1 = d1.k JOIN d3 ON f.k3 = d3.k WHERE f.k5 = x) FROM generate_series(0, 4) x'),
	('left on top', 'SELECT f.id, d1.a, d3.c FROM f JOIN d1 ON f.k1 = d1.k LEFT JOIN d3 ON f.k3 = d3.k'),
	('left below', 'SELECT f.id, d1.a, d2.b, d2.name, d3.c FROM ((f LEFT JOIN d2 ON f.k2 = d2.k) JOIN d1 ON f.k1 = d1.k) JOIN d3 ON f.k3 = d3.k'),
	('the selective dimension named first',
	 'SELECT f.id, d1.a, d3.c FROM f JOIN d1 ON f.k1 = d1.k JOIN d3 ON f.k3 = d3.k WHERE d1.k <= 12 AND d3.k <= 400'),
	('the selective dimension named last',
	 'SELECT f.id, d1.a, d3.c FROM f JOIN d3 ON f.k3 = d3.k JOIN d1 ON f.k1 = d1.k WHERE d3.k <= 400 AND d1.k <= 12');

-- PostgreSQL's rows
:postgres_join
SET LOCAL join_collapse_limit = 1;
CREATE TEMP TABLE ref AS
SELECT name, pg_temp.rows_digest(sql) AS digest FROM q UNION ALL
SELECT name, pg_temp.rows_digest(sql) FROM q2;
RESET join_collapse_limit;
CREATE TEMP TABLE counts AS SELECT
	(SELECT count(*) FROM f JOIN d1 ON f.k1 = d1.k JOIN d2 ON f.k2 = d2.k JOIN d3 ON f.k3 = d3.k) AS three;

-- the chains
:gpu_join
CREATE TEMP TABLE got AS
SELECT name, levels, pg_temp.rows_digest(sql) AS digest, pg_temp.plan(sql) AS plan FROM q;
SELECT is(got.digest, ref.digest, got.name || ': the same rows as PostgreSQL')
FROM got JOIN ref USING (name) ORDER BY name;
SELECT ok(plan ~ ('Chain: ' || levels || ' joins in one pass'),
	name || ': one chain of ' || levels || ' GPU joins')
FROM got ORDER BY name;

-- the order of the levels follows the estimated selectivities, not the
-- order the query names the dimensions in: the join that drops most fact
-- rows (d1's 12 keys of 1,200) is the lowest level, the one that keeps most
-- (d3's 400 of 500) on top, so fewer rows go up between them
SELECT ok(p ~ 'Chain: 2 joins in one pass' AND substring(p FROM 'Hash Cond: \(([^)]*)\)') = 'f.k3 = d3.k',
	name || ': a chain of 2, the less selective join on top')
FROM (SELECT name, pg_temp.plan(sql) AS p FROM q2 WHERE name LIKE 'the selective dimension%') s ORDER BY name;
SELECT is(pg_temp.rows_digest(sql), ref.digest, name || ': the same rows as PostgreSQL')
FROM q2 JOIN ref USING (name) WHERE name LIKE 'the selective dimension%' ORDER BY name;

-- left, semi and anti joins as levels: the device NULL-extends a row with
-- no match (left), keeps a row once however many inner rows it matches
-- (semi), hands up only the rows with no match, a NULL key's too, every
-- row where the inner side is empty (anti); the costs order the joins (a
-- semi or anti join may also be on top, where it ends the chain)
CREATE TEMP TABLE level_types (name text PRIMARY KEY, types text, what text);
INSERT INTO level_types VALUES
	('semi joins, repeated keys', 'Semi', 'a semi join'),
	('an anti join, NULL keys', 'Anti', 'the anti join'),
	('an anti join on an empty table, a semi join', '(Anti|Semi)', 'the anti join or the semi join'),
	('a left join on an empty table', 'Left', 'the left join');
SELECT ok(plan ~ ('Join Type: ' || types || '[^>]*Chain: a level of the chain'),
	name || ': ' || what || ' is a level of the chain')
FROM got JOIN level_types USING (name) ORDER BY name;
-- ... over repeated keys, with a text column of the left join's inner
-- side read by its row number (NULL where there is none); the order as
-- written, so that the left join is the lowest level
SET LOCAL join_collapse_limit = 1;
SELECT is(pg_temp.rows_digest(sql), ref.digest, 'a left join below: the same rows as PostgreSQL')
FROM q2 JOIN ref USING (name) WHERE name = 'left below';
SELECT ok(pg_temp.plan(sql) ~ 'Join Type: Left[^>]*Chain: a level of the chain',
	'a left join below: a level of the chain')
FROM q2 WHERE name = 'left below';
RESET join_collapse_limit;

-- stacked nodes: the same rows, no chain
SET LOCAL gpujoin.enable_chain = off;
SELECT is(pg_temp.rows_digest(sql), ref.digest, q.name || ': the same rows without the chain')
FROM q JOIN ref USING (name) WHERE q.name IN ('star of 3, repeated int8 keys', 'star of 5');
SELECT is(count(*), 0::bigint, 'no chain with gpujoin.enable_chain = off')
FROM q WHERE pg_temp.plan(sql) ~ 'Chain:';
RESET gpujoin.enable_chain;

-- a snowflake: the second level probes with d1s.k2, a column of the level
-- below (the join order fixed so that the stack goes through it)
SET LOCAL join_collapse_limit = 1;
SELECT is(pg_temp.rows_digest(sql), ref.digest, 'a snowflake: the same rows as PostgreSQL')
FROM q2 JOIN ref USING (name) WHERE name = 'snowflake';
SELECT ok(pg_temp.plan(sql) ~ 'Chain: 2 joins in one pass', 'a snowflake: one chain of 2 GPU joins')
FROM q2 WHERE name = 'snowflake';
-- an empty dimension on top
SELECT is(pg_temp.rows_digest(sql), ref.digest, 'an empty dimension on top: the same rows as PostgreSQL')
FROM q2 JOIN ref USING (name) WHERE name = 'an empty dimension';
SELECT ok(pg_temp.plan(sql) ~ 'Chain: 3 joins in one pass', 'an empty dimension on top: one chain of 3 GPU joins')
FROM q2 WHERE name = 'an empty dimension';
RESET join_collapse_limit;
-- lowest: the levels above probe with integer keys, which the kernels
-- pack for the rows that reach them (nothing per fact row), so one chain,
-- an int4 column keyed against int8 too (each side keeps its own type's
-- coding); a numeric key is encoded on the host for every fact row, which
-- the empty dimension's rows would not pay for: that level is no chain's
-- (priced as on a GPU, the two integer levels below it are one chain)
SELECT ok(pg_temp.plan(sql) ~ 'Chain: 3 joins in one pass', 'an empty dimension lowest, integer keys above: one chain of 3')
FROM q2 WHERE name = 'an empty dimension';
SELECT ok(pg_temp.rows_digest(sql) = ref.digest AND pg_temp.plan(sql) ~ 'Chain: 3 joins in one pass',
	'an empty dimension lowest, an int4 column keyed against int8 above: one chain of 3, the same rows')
FROM q2 JOIN ref USING (name) WHERE name = 'an empty dimension, a cross-type key';
SELECT ok(pg_temp.rows_digest(sql) = ref.digest AND pg_temp.plan(sql) !~ 'Chain: 3 joins',
	'an empty dimension lowest, a numeric key above: that level in no chain, the same rows')
FROM q2 JOIN ref USING (name) WHERE name = 'an empty dimension, a numeric key';

-- EXPLAIN VERBOSE: where the keys of the levels above the lowest are made
SELECT ok(pg_temp.plan_verbose(sql) ~ 'Chain Keys: 4 packed on the device for the rows that reach their level, 0 encoded on the host',
	'EXPLAIN VERBOSE: a star of 5 over integer keys, its 4 upper keys packed on the device')
FROM q WHERE name = 'star of 5';
SET LOCAL join_collapse_limit = 1;
CREATE TEMP TABLE qn (sql text);
INSERT INTO qn VALUES ('SELECT f.id, d1.a, dn.u FROM f JOIN d1 ON f.k1 = d1.k JOIN dn ON f.n = dn.k');
:postgres_join
CREATE TEMP TABLE refn AS SELECT pg_temp.rows_digest(sql) AS digest FROM qn;
:gpu_join
SELECT ok(pg_temp.plan_verbose(sql) ~ 'Chain Keys: 0 packed on the device for the rows that reach their level, 1 encoded on the host' AND
		  pg_temp.rows_digest(sql) = refn.digest,
	'a numeric key above the lowest: encoded on the host (EXPLAIN VERBOSE), PostgreSQL''s rows')
FROM qn, refn;
RESET join_collapse_limit;

-- EXPLAIN ANALYZE: each level's rows are the matches it handed up
CREATE TEMP TABLE an AS
SELECT pg_temp.plan_analyze(sql) AS plan FROM q WHERE name = 'star of 3, repeated int8 keys';
SELECT is(count(*) FILTER (WHERE substring(b FROM '^ \(actual rows=(\d+)') =
							 substring(b FROM 'Matches: (\d+)')), 3::bigint,
	'EXPLAIN ANALYZE: each level''s rows are its matches')
FROM an, regexp_split_to_table(plan, 'Custom Scan \(GpuHashJoin\)') b WHERE b ~ 'Matches:';
SELECT is((regexp_match(plan, 'Outer Rows: (\d+)  Matches: \d+[^>]*$'))[1]::bigint, 30000::bigint,
	'EXPLAIN ANALYZE: the lowest level read the fact table once')
FROM an;
SELECT ok(plan ~ 'Chain: a level of the chain run by the GPU join above', 'EXPLAIN ANALYZE: the levels below the top say they are')
FROM an;
SELECT is(pg_temp.plan_number(plan, 'Matches'), (SELECT three FROM counts),
	'EXPLAIN ANALYZE: the top''s matches are the join''s rows')
FROM an;

-- ... and the top lists each level's rows in and out, the lowest first, as
-- the level's own node counts them
SELECT is((SELECT string_agg(m[1] || '/' || m[2], ' ' ORDER BY i)
		   FROM regexp_matches(plan, 'Chain Level \d: [^\n]*, rows in (\d+), out (\d+)', 'g') WITH ORDINALITY AS x(m, i)),
		  (SELECT string_agg(m[1] || '/' || m[2], ' ' ORDER BY i DESC)
		   FROM regexp_matches(plan, 'Outer Rows: (\d+)  Matches: (\d+)', 'g') WITH ORDINALITY AS x(m, i)),
	'EXPLAIN ANALYZE: the top lists the levels'' rows in and out, the lowest first')
FROM an;

-- EXPLAIN: the top of every chain lists its levels, the lowest first, each
-- with its join type, relations, condition and variant as its own node
-- shows them (text), and the same as a "Chain Levels" group (JSON)
CREATE TEMP TABLE level_nodes AS
SELECT name, row_number() OVER (PARTITION BY name ORDER BY i DESC) AS k,
	   substring(s FROM 'Hash Cond: ([^\n]*)') AS cond,
	   lower(coalesce(substring(s FROM 'Join Type: (\w+)'), 'inner')) AS type,
	   substring(s FROM 'Variant: ([^\n]*)') AS variant,
	   substring(s FROM 'Join Filter: ([^\n]*)') AS filter,
	   substring(s FROM 'Outer Relation: ([^\n]*) \(heap pages') AS outer_rel,
	   substring(s FROM 'Inner Relation: ([^\n]*) \(heap pages') AS inner_rel
FROM got, regexp_split_to_table(plan, 'Custom Scan \(Gpu') WITH ORDINALITY AS x(s, i)
WHERE plan ~ 'Chain: \d joins in one pass' AND s ~ '\n\s+Chain: (\d joins in one pass|a level)';
CREATE TEMP TABLE level_lines AS
SELECT name, m[1]::bigint AS k, m[2] AS line FROM got, regexp_matches(plan, 'Chain Level (\d): ([^\n]*)', 'g') AS m;
CREATE TEMP TABLE chain_levels AS
SELECT sum((regexp_match(plan, 'Chain: (\d) joins in one pass'))[1]::int)::bigint AS n FROM got;
SELECT is((SELECT count(*) FROM level_lines), n, 'EXPLAIN: the tops list as many levels as their chains have')
FROM chain_levels;
SELECT is((SELECT count(*) FROM level_nodes JOIN level_lines USING (name, k)
		   WHERE line = CASE WHEN k = 1 THEN coalesce(outer_rel, 'its outer plan') || ' ' ELSE '' END ||
						type || ' join ' || coalesce(inner_rel, 'its inner plan') || ' on ' || cond ||
						coalesce(' filter ' || filter, '') || ', ' || variant),
		  n, 'EXPLAIN: each level listed as its node shows it, the lowest first')
FROM chain_levels;
CREATE FUNCTION pg_temp.plan_json(q text) RETURNS jsonb
LANGUAGE plpgsql AS $f$
DECLARE
	r json;
BEGIN
	EXECUTE 'EXPLAIN (FORMAT JSON, COSTS OFF) ' || q INTO r;
	RETURN r::jsonb;
END
$f$;
SELECT is((SELECT string_agg(concat_ws(':', l->>'Level', l->>'Join Type', l->>'Inner Relation', l->>'Hash Cond', l->>'Variant'),
								' ' ORDER BY (l->>'Level')::int)
		   FROM jsonb_array_elements(jsonb_path_query_first(pg_temp.plan_json(sql), 'strict $.**."Chain Levels"')) AS l),
		  (SELECT string_agg(concat_ws(':', k, initcap(type), inner_rel, cond, variant), ' ' ORDER BY k)
		   FROM level_nodes WHERE level_nodes.name = q.name),
	'EXPLAIN (FORMAT JSON): the top''s Chain Levels, one object a level')
FROM q WHERE name = 'star of 4, date key';

-- out of device memory in the chain's build: the chain comes apart into
-- its joins (each then falls back on its own); in its count or retrieve:
-- the chain goes on on the CPU twin, every row once (small chunks and
-- rounds, so that a chunk's matches come in several rounds and the
-- retrieve fails after some were taken)
SET LOCAL gpujoin.chunk_rows = 700;
CREATE FUNCTION pg_temp.with_fault(fault text, f text, q text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	r text;
BEGIN
	PERFORM set_config('gpujoin.inject_fault', fault, true);
	EXECUTE format('SELECT pg_temp.%I($1)', f) INTO r USING q;
	PERFORM set_config('gpujoin.inject_fault', 'none', true);
	RETURN r;
END $$;
CREATE TEMP TABLE faults (fault text, step text, says text);
INSERT INTO faults VALUES
	('build_oom', 'the build', 'Chain: 3 joins run one by one: their tables did not fit the device together'),
	('count_oom', 'the count', 'Chain: 3 joins in one pass[\s\S]*Device: CPU \(fell back from'),
	('retrieve_oom', 'a retrieve', 'Chain: 3 joins in one pass[\s\S]*Device: CPU \(fell back from');
SELECT is(pg_temp.with_fault(fault, 'rows_digest', q.sql), ref.digest,
	q.name || ', out of memory in ' || step || ': the same rows')
FROM faults, q JOIN ref USING (name)
WHERE q.name IN ('star of 3, repeated int8 keys', 'star of 5') ORDER BY fault, q.name;
SELECT ok(pg_temp.with_fault(fault, 'plan_analyze', sql) ~ says,
	'EXPLAIN ANALYZE, out of memory in ' || step || ': ' ||
	CASE fault WHEN 'build_oom' THEN 'the chain came apart into its joins' ELSE 'the chain fell back to the CPU' END)
FROM faults, q WHERE name = 'star of 3, repeated int8 keys' ORDER BY fault;
RESET gpujoin.chunk_rows;

-- a level whose table would not fit the device alone runs partitioned:
-- the chain comes apart before any row and its joins run one by one, each
-- as the node it is (the d2 level: 1800 rows; 64 kB of device memory, set
-- after planning: planned with it, the levels would be priced partitioned,
-- which is no chain)
SELECT format('PREPARE apart_q AS %s', sql) FROM q WHERE name = 'star of 3, repeated int8 keys' \gexec
-- (a statement without parameters is planned at its first use, and kept)
SELECT pg_temp.plan('EXECUTE apart_q') IS NOT NULL AS planned \gset
SET LOCAL gpujoin.device_memory_limit = '64kB';
CREATE TEMP TABLE apart_rows AS EXECUTE apart_q;
CREATE TEMP TABLE apart AS
SELECT pg_temp.rows_digest('SELECT * FROM apart_rows') AS digest,
	pg_temp.plan_analyze('EXECUTE apart_q') AS plan;
SELECT is(apart.digest, ref.digest, 'tables that do not fit together: the same rows, one join at a time')
FROM apart, ref WHERE ref.name = 'star of 3, repeated int8 keys';
SELECT ok(plan ~ 'Chain: 3 joins run one by one: their tables did not fit the device together'
		  AND plan ~ 'Partitions: [2-9]' AND plan !~ 'Chain: a level',
	'EXPLAIN ANALYZE: the chain came apart, a level partitioned')
FROM apart;
RESET gpujoin.device_memory_limit;

-- a chain rescanned: once per row of a correlated subquery (the string_agg
-- keeps PostgreSQL's Aggregate on top, so the joins stay a chain)
SELECT ok(pg_temp.plan(sql) ~ 'Chain: 2 joins', 'a correlated subquery over a chain')
FROM q2 WHERE name = 'correlated';
SELECT is(pg_temp.rows_digest(sql), ref.digest, 'a chain rescanned once per outer row: the same rows as PostgreSQL')
FROM q2 JOIN ref USING (name) WHERE name = 'correlated';

-- a LIMIT stops the chain early; the level below still shows its run
SELECT is((SELECT count(*) FROM (SELECT f.id FROM f JOIN d1 ON f.k1 = d1.k JOIN d3 ON f.k3 = d3.k LIMIT 10) l),
	10::bigint, 'a chain under a LIMIT of 10 gives 10 rows');
SELECT ok(p !~ 'never executed' AND p ~ 'GpuHashJoin\) \(actual rows=[\d.]+ loops=1\)\s+Hash Cond[^\n]*\n[^\n]*\n\s+Chain: a level',
	'EXPLAIN ANALYZE under a LIMIT: the level below counts its run')
FROM (SELECT pg_temp.plan_analyze($$SELECT f.id FROM f JOIN d1 ON f.k1 = d1.k JOIN d3 ON f.k3 = d3.k LIMIT 10$$) AS p) s;

-- the planner prices the top of a chain without the rows between the
-- levels (EXPLAIN VERBOSE's Variants Considered says what it saved), and
-- the stacked plan is cheaper with chains than without
SELECT ok(pg_temp.plan_verbose(sql) ~ 'a chain with the GPU join below \(\d+\.\d+ saved\)',
	'EXPLAIN VERBOSE: the top of a chain priced as one')
FROM q WHERE name = 'star of 3, repeated int8 keys';
CREATE FUNCTION pg_temp.total_cost(q text) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE
	j json;
BEGIN
	EXECUTE 'EXPLAIN (FORMAT JSON) ' || q INTO j;
	RETURN (j->0->'Plan'->>'Total Cost')::float8;
END $$;
CREATE TEMP TABLE costs AS
SELECT pg_temp.total_cost(sql) AS chained FROM q WHERE name = 'star of 3, repeated int8 keys';
SET LOCAL gpujoin.enable_chain = off;
UPDATE costs SET chained = chained - (SELECT pg_temp.total_cost(sql) FROM q
	WHERE name = 'star of 3, repeated int8 keys');
RESET gpujoin.enable_chain;
SELECT cmp_ok(chained, '<', 0::float8, 'the chained plan costs less than the stacked one') FROM costs;

-- what is not a chain: a left join on top of an inner one (the order as
-- written; a left join below an inner one is a level)
SET LOCAL join_collapse_limit = 1;
SELECT ok(pg_temp.plan(sql) !~ 'Chain: 2', 'a left join on top of an inner one is not chained')
FROM q2 WHERE name = 'left on top';
SELECT is(pg_temp.rows_digest(sql), ref.digest, 'a left join on top: the same rows as PostgreSQL')
FROM q2 JOIN ref USING (name) WHERE name = 'left on top';
RESET join_collapse_limit;

-- a GpuPreAgg on top of a chain: the last level's matches go into the
-- groups on the device (small chunks and rounds: several of each)
SET LOCAL gpujoin.enable_chain_preagg = on;
SET LOCAL gpujoin.chunk_rows = 700;
CREATE TEMP TABLE qa (name text PRIMARY KEY, folded bool, sql text);
INSERT INTO qa VALUES
	('a GpuPreAgg over 3 levels', true,
	 'SELECT d1.a, count(*), sum(f.v), sum(d2.b), min(d3.c), max(f.k4), avg(d3.c) FROM f JOIN d1 ON f.k1 = d1.k JOIN d2 ON f.k2 = d2.k JOIN d3 ON f.k3 = d3.k GROUP BY d1.a'),
	('a GpuPreAgg over 5 levels, keys from two levels', true,
	 'SELECT d3.c, d5.z % 3, count(*), sum(d2.b + f.v), min(d4.w), max(d1.a) FROM f JOIN d1 ON f.k1 = d1.k JOIN d2 ON f.k2 = d2.k JOIN d3 ON f.k3 = d3.k JOIN d4 ON f.k4 = d4.k JOIN d5 ON f.k5 = d5.k GROUP BY 1, 2'),
	('a GpuPreAgg with no group key', true,
	 'SELECT count(*), sum(f.v), max(d2.b) FROM f JOIN d1 ON f.k1 = d1.k JOIN d2 ON f.k2 = d2.k'),
	('a numeric argument', false,
	 'SELECT d1.a, sum(f.n), count(*) FROM f JOIN d1 ON f.k1 = d1.k JOIN d3 ON f.k3 = d3.k GROUP BY d1.a'),
	('a numeric argument of declared scale, scaled by the deform of the fact table''s pages', true,
	 'SELECT d1.a, sum(f.nd), avg(f.nd), max(f.nd), count(*) FROM f JOIN d1 ON f.k1 = d1.k JOIN d3 ON f.k3 = d3.k GROUP BY d1.a'),
	('a text group key of the top''s own inner side', true,
	 'SELECT d2.name, count(*), sum(f.v) FROM f JOIN d1 ON f.k1 = d1.k JOIN d2 ON f.k2 = d2.k GROUP BY d2.name'),
	('a text group key of a level below', true,
	 'SELECT d1.name, count(*), sum(f.v) FROM f JOIN d1 ON f.k1 = d1.k JOIN d2 ON f.k2 = d2.k GROUP BY d1.name'),
	('text group keys of the lowest level, long ones and NULLs, and of the top''s inner side', true,
	 'SELECT dl.label, d2.name, count(*), sum(f.v) FROM f JOIN dl ON f.k3 = dl.k JOIN d1 ON f.k1 = d1.k JOIN d2 ON f.k2 = d2.k GROUP BY 1, 2'),
	('a text group key of the fact table, a long one of a level below', true,
	 'SELECT f.t, dl.label, count(*), max(d2.b) FROM f JOIN dl ON f.k3 = dl.k JOIN d2 ON f.k2 = d2.k GROUP BY 1, 2');
:postgres_join
CREATE TEMP TABLE refa AS SELECT name, pg_temp.rows_digest(sql) AS digest FROM qa;
-- (the joins in the order written: the top's inner side is the last)
SET LOCAL join_collapse_limit = 1;
:gpu_join
CREATE TEMP TABLE gota AS
SELECT name, folded, pg_temp.rows_digest(sql) AS digest, pg_temp.plan(sql) AS plan FROM qa;
SELECT is(gota.digest, refa.digest, gota.name || ': the same rows as PostgreSQL')
FROM gota JOIN refa USING (name) ORDER BY name;
SELECT is(plan ~ 'GpuPreAgg[^>]*Chain: \d joins in one pass[^\n]*folded into groups there', folded,
	name || CASE WHEN folded THEN ': the GpuPreAgg is the chain''s top'
		ELSE ': the GpuPreAgg is no level (an input it converts)' END)
FROM gota ORDER BY name;
SELECT is(pg_temp.with_fault(fault, 'rows_digest', qa.sql), refa.digest,
	qa.name || ', out of memory in ' || step || ': the same rows')
FROM faults, qa JOIN refa USING (name)
WHERE qa.name = 'a GpuPreAgg over 3 levels' ORDER BY fault;
SELECT ok(pg_temp.with_fault('retrieve_oom', 'plan_analyze', sql) ~
		  'GpuPreAgg[^>]*Chain: 3 joins in one pass[\s\S]*Device: CPU \(fell back from',
	'EXPLAIN ANALYZE, out of memory in the aggregation: the chain and its groups went on on the CPU')
FROM qa WHERE name = 'a GpuPreAgg over 3 levels';
-- an argument the device leaves undecided (a division by zero): the host
-- evaluates it, and raises PostgreSQL's error
SELECT throws_ok($$SELECT d1.a, sum(f.v / (d3.c - 2)) FROM f JOIN d1 ON f.k1 = d1.k JOIN d2 ON f.k2 = d2.k JOIN d3 ON f.k3 = d3.k GROUP BY d1.a$$,
	'22012', NULL, 'a division by zero in a chain''s GpuPreAgg: PostgreSQL''s error');
SELECT ok(pg_temp.plan($$SELECT d1.a, sum(f.v / (d3.c - 2)) FROM f JOIN d1 ON f.k1 = d1.k JOIN d2 ON f.k2 = d2.k JOIN d3 ON f.k3 = d3.k GROUP BY d1.a$$)
		  ~ 'GpuPreAgg[^>]*folded into groups there',
	'... and it is a chain''s GpuPreAgg')
;
SET LOCAL gpujoin.enable_chain_preagg = off;
SELECT ok(pg_temp.plan(sql) ~ 'GpuPreAgg' AND pg_temp.plan(sql) !~ 'folded into groups',
	'gpujoin.enable_chain_preagg off: the GpuPreAgg is no level')
FROM qa WHERE name = 'a GpuPreAgg over 3 levels';
-- ... and its join, priced as a chain's top, pays that saving back
SELECT ok(pg_temp.plan_verbose(sql) ~ 'GpuPreAgg[^>]*a chain with the GPU join below \([\d.]+ saved\); paid back: the GpuPreAgg runs this join on its own',
	'gpujoin.enable_chain_preagg off: the GpuPreAgg''s join pays its chain saving back')
FROM qa WHERE name = 'a GpuPreAgg over 3 levels';
RESET gpujoin.enable_chain_preagg;
RESET gpujoin.chunk_rows;
RESET join_collapse_limit;

-- a partial chain: below a Gather every process (the leader and 2
-- workers) runs the whole chain on its share of the fact table's pages
-- (small chunks: several in each process; gpujoin.enable_parallel_chain,
-- on by default, set here all the same)
:parallel_cheap
SET LOCAL gpujoin.chunk_rows = 700;
SET LOCAL gpujoin.enable_parallel_chain = on;
CREATE TEMP TABLE gotp AS
SELECT name, levels, pg_temp.rows_digest(sql) AS digest, pg_temp.plan(sql) AS plan FROM q;
SELECT is(gotp.digest, ref.digest, gotp.name || ', in parallel: the same rows as PostgreSQL')
FROM gotp JOIN ref USING (name) ORDER BY name;
SELECT ok(plan ~ ('Gather[\s\S]*Parallel Custom Scan \(GpuHashJoin\)[^>]*Chain: ' || levels || ' joins in one pass'),
	name || ', in parallel: one partial chain of ' || levels || ' GPU joins')
FROM gotp ORDER BY name;
-- a semi join as a level of a partial chain
SELECT ok(plan ~ 'Join Type: Semi[^>]*Chain: a level of the chain',
	name || ', in parallel: the semi join is a level of the chain')
FROM gotp WHERE name = 'an anti join on an empty table, a semi join';
CREATE TEMP TABLE anp AS
SELECT pg_temp.plan_analyze(sql) AS plan FROM q WHERE name = 'star of 3, repeated int8 keys';
SELECT cmp_ok(pg_temp.plan_number(plan, 'Workers Launched'), '>=', 1::bigint,
	'a partial chain: workers were launched')
FROM anp;
SELECT is((regexp_match(plan, 'Participants: (\d+)  (?:Shared Builds: \d+  )?(?:Inner Shares: \d+  )?Chunks: \d+  Inner Rows: \d+  Outer Rows: (\d+)  Matches: \d+[^>]*$'))::bigint[],
	ARRAY[pg_temp.plan_number(plan, 'Workers Launched') + 1, 30000],
	'EXPLAIN ANALYZE, a partial chain: the leader and every worker took part, reading the fact table once between them')
FROM anp;
SELECT is(pg_temp.plan_number(plan, 'Matches'), (SELECT three FROM counts),
	'EXPLAIN ANALYZE, a partial chain: the top''s matches are the join''s rows')
FROM anp;
-- through the gpujoin service, one process builds each level for all but
-- d2's, whose name column the top reads on the host: each process builds
-- that one (EXPLAIN ANALYZE's Shared Builds: the others', on d1's and
-- d3's levels); without the service each process builds every level.
-- shared_builds: the Shared Builds of a plan's levels, and what they
-- should be where n levels are shared (every worker probing each)
CREATE FUNCTION pg_temp.shared_builds(plan text, n int, OUT got int[], OUT want int[])
LANGUAGE sql AS $$
	SELECT (SELECT array_agg(m[1]::int) FROM regexp_matches(plan, 'Shared Builds: (\d+)', 'g') m),
		CASE WHEN current_setting('gpujoin.service') = 'on'
			THEN array_fill(pg_temp.plan_number(plan, 'Workers Launched')::int, ARRAY[n]) END
$$;
SELECT is(got, want, 'EXPLAIN ANALYZE, a partial chain: ' ||
	CASE WHEN want IS NOT NULL THEN 'the levels without host columns built once, the others probing that build'
		ELSE 'no shared builds without the gpujoin service' END)
FROM anp, pg_temp.shared_builds(plan, 2);
-- through the service the lowest level's inner side is read in shares by
-- the processes (each page once: Inner Shares, those that read some), its
-- table built from the shares where they lie; without, every process
-- reads it whole
SELECT is(m[3]::bigint,
	(SELECT relpages FROM pg_class WHERE relname = m[1])::bigint *
		CASE WHEN current_setting('gpujoin.service') = 'on' THEN 1 ELSE m[2]::bigint END,
	'EXPLAIN ANALYZE, a partial chain: ' || CASE WHEN current_setting('gpujoin.service') = 'on'
		THEN 'the lowest level''s inner pages read once, in shares'
		ELSE 'no service: every process read the lowest level''s inner pages' END)
FROM anp, regexp_match(plan, 'Outer Relation: f \(heap pages, parallel\)\s+Inner Relation: (\w+)[^>]*?Participants: (\d+)[^>]*?Inner Pages: read=(\d+)') AS m;
-- a snowflake in parallel: the lowest level's inner side (d1p, d1s with
-- more pages) carries the key of the level above (k2), which each process
-- encodes for its share (paced: several read one), into the part of the
-- table it lends the builder; out of device memory in the count or a
-- retrieve, the builder reads the shares again and the others the
-- builder's rows
SET LOCAL join_collapse_limit = 1;
CREATE TABLE d1p (k int4, k2 int8, pad text);
INSERT INTO d1p SELECT g, CASE WHEN g % 40 = 0 THEN NULL ELSE (g * 3) % 800 END, repeat('p', 40)
	FROM generate_series(1, 26000) g;
ANALYZE d1p;
CREATE TEMP TABLE snowp (sql text, digest text);
INSERT INTO snowp VALUES ('SELECT f.id, d1p.k2, d2.b FROM (f JOIN d1p ON f.k1 = d1p.k) JOIN d2 ON d1p.k2 = d2.k', NULL);
:postgres_join
UPDATE snowp SET digest = pg_temp.rows_digest(sql);
:gpu_join
:parallel_cheap
SET LOCAL gpujoin.chunk_rows = 700;
SELECT ok(pg_temp.plan(sql) ~ 'Gather[\s\S]*Parallel Custom Scan \(GpuHashJoin\)[^>]*Chain: 2 joins in one pass',
	'a snowflake in parallel: one partial chain of 2 GPU joins')
FROM snowp;
SELECT is(pg_temp.with_fault(fault, 'rows_digest', sql), digest,
	'a snowflake in parallel, ' || CASE fault WHEN 'none' THEN 'its lowest level in shares'
		ELSE 'paced shares' || CASE WHEN fault = 'share_pace' THEN '' ELSE ', out of memory in a retrieve' END END ||
	': the same rows as PostgreSQL')
FROM snowp, unnest(ARRAY['none', 'share_pace', 'share_pace_retrieve_oom']) AS fault ORDER BY fault;
-- a worker that read a share and is refused the builder's table reads the
-- whole inner side for a table of its own, not the rest of the launch's
-- block scan, which the shares used up (it once built on no rows there
-- and lost every match of its share of the fact table)
SELECT is(pg_temp.with_fault('share_pace_refused', 'rows_digest', sql), digest,
	'a snowflake in parallel, paced shares, a worker refused the build: the same rows as PostgreSQL')
FROM snowp;
SELECT is(pg_temp.with_fault(fault, 'rows_digest', sql), digest,
	'a snowflake in parallel, out of memory in ' || step || ': the same rows as PostgreSQL')
FROM snowp, faults ORDER BY fault;
SELECT ok(current_setting('gpujoin.service') = 'off' OR
	(regexp_match(pg_temp.with_fault('share_pace', 'plan_analyze', sql),
				  'Inner Relation: d1p[\s\S]*?Inner Shares: (\d+)'))[1]::int >= 2,
	'a snowflake in parallel, paced: several processes read a share of d1p')
FROM snowp;
RESET join_collapse_limit;
-- ... as the planner priced it (EXPLAIN VERBOSE's Variants Considered)
SELECT ok(pg_temp.plan_verbose(sql) ~ ('a chain with the GPU join below \([\d.]+ saved, ' ||
		CASE WHEN current_setting('gpujoin.service') = 'on'
			THEN 'its build shared, its inner side read by one process\)'
			ELSE 'each process building its table\)' END),
	'a partial chain priced ' || CASE WHEN current_setting('gpujoin.service') = 'on'
		THEN 'with its levels'' builds shared' ELSE 'with every process building every level' END)
FROM q WHERE name = 'star of 3, repeated int8 keys';
-- with the dimensions' host columns priced fetched by tid for each match
-- (a low gpujoin.heap_fetch_cost), d2's level is built once too: its
-- builder reads the rows' tids, and every process fetches d2.name by them;
-- out of device memory in the count or a retrieve, the processes that
-- probed read the inner sides (the builder's rows in its order) and go on
-- on the CPU twin
SET LOCAL gpujoin.heap_fetch_cost = 0.0001;
CREATE TEMP TABLE anpt AS
SELECT pg_temp.plan_analyze(sql) AS plan, pg_temp.rows_digest(sql) AS digest
FROM q WHERE name = 'star of 3, repeated int8 keys';
SELECT is(digest, (SELECT digest FROM ref WHERE name = 'star of 3, repeated int8 keys'),
	'a partial chain, host columns fetched by tid: the same rows as PostgreSQL')
FROM anpt;
SELECT is(got, want, 'EXPLAIN ANALYZE, a partial chain, host columns fetched by tid: ' ||
	CASE WHEN want IS NOT NULL THEN 'every level built once, d2''s too'
		ELSE 'no shared builds without the gpujoin service' END)
FROM anpt, pg_temp.shared_builds(plan, 3);
SELECT is(plan ~ 'Inner Relation: [a-z_.]*d2 \(heap pages, host columns fetched per match\)',
	current_setting('gpujoin.service') = 'on',
	'a partial chain: d2''s name priced fetched per match with the gpujoin service (a shared build), not without')
FROM anpt;
SELECT is(pg_temp.with_fault(fault, 'rows_digest', q.sql), ref.digest,
	'a partial chain, host columns fetched by tid, out of memory in ' || step || ': the same rows')
FROM faults, q JOIN ref USING (name)
WHERE q.name = 'star of 3, repeated int8 keys' AND fault <> 'build_oom' ORDER BY fault;
RESET gpujoin.heap_fetch_cost;
-- out of device memory in every process: each comes apart into its joins
-- (the build) or goes on on the CPU twin (the count, a retrieve)
SELECT is(pg_temp.with_fault(fault, 'rows_digest', q.sql), ref.digest,
	q.name || ', in parallel, out of memory in ' || step || ': the same rows')
FROM faults, q JOIN ref USING (name)
WHERE q.name = 'star of 3, repeated int8 keys' ORDER BY fault;
SELECT ok(pg_temp.with_fault(fault, 'plan_analyze', sql) ~ ('Parallel Custom Scan \(GpuHashJoin\)[^>]*' || says),
	'EXPLAIN ANALYZE in parallel, out of memory in ' || step || ': ' ||
	CASE fault WHEN 'build_oom' THEN 'the chain came apart into its joins' ELSE 'the chain fell back to the CPU' END)
FROM faults, q WHERE name = 'star of 3, repeated int8 keys' ORDER BY fault;
-- a partial GpuPreAgg on top of a partial chain: each process's groups,
-- combined by PostgreSQL's Finalize Aggregate above the Gather
SET LOCAL gpujoin.enable_chain_preagg = on;
SET LOCAL join_collapse_limit = 1;
CREATE TEMP TABLE gotpa AS
SELECT name, folded, pg_temp.rows_digest(sql) AS digest, pg_temp.plan(sql) AS plan FROM qa;
SELECT is(gotpa.digest, refa.digest, gotpa.name || ', in parallel: the same rows as PostgreSQL')
FROM gotpa JOIN refa USING (name) ORDER BY name;
SELECT is(plan ~ 'Gather[\s\S]*Parallel Custom Scan \(GpuPreAgg\)[^>]*Chain: \d joins in one pass[^\n]*folded into groups there', folded,
	name || ', in parallel: ' || CASE WHEN folded THEN 'the partial GpuPreAgg is the partial chain''s top'
		ELSE 'the GpuPreAgg is no level' END)
FROM gotpa ORDER BY name;
RESET join_collapse_limit;
RESET gpujoin.enable_chain_preagg;
-- off: the same parallel plans' GPU joins stacked
SET LOCAL gpujoin.enable_parallel_chain = off;
SELECT ok(pg_temp.plan(sql) ~ 'Parallel Custom Scan \(GpuHashJoin\)' AND pg_temp.plan(sql) !~ 'Chain:',
	'gpujoin.enable_parallel_chain off: parallel GPU joins, no chain')
FROM q WHERE name = 'star of 3, repeated int8 keys';
SELECT is(pg_temp.rows_digest(sql), ref.digest, 'gpujoin.enable_parallel_chain off: the same rows')
FROM q JOIN ref USING (name) WHERE name = 'star of 3, repeated int8 keys';
RESET gpujoin.enable_parallel_chain;
RESET gpujoin.chunk_rows;

SELECT * FROM finish();
ROLLBACK;
