-- test/033_random_chains.sql
--
-- Differential random chains: 300 star and snowflake queries generated from
-- a fixed seed over a fact table and five dimensions, each joining 2 to 5
-- of them, every dimension by a random join type (inner, left, semi as
-- EXISTS or IN, anti as NOT EXISTS), with int4, int8 and date keys, NULL
-- and missing foreign keys, repeated dimension keys, a dimension with NULL
-- keys, an empty one, sometimes a snowflake (a dimension keyed by
-- another's column), text, numeric and float columns from the dimensions
-- and sometimes a filter.  Each runs with gpujoin forced (core join
-- methods off; GPU joins stacked on one another run as one chain,
-- src/exec_chain.c) and with gpujoin off: the rows must be the same (a
-- digest of the sorted rows).  Each runs once more, in turn: in chunks of
-- 300 rows (each level's matches handed up chunk by chunk), in a parallel
-- plan with partial chains (gpujoin.enable_parallel_chain), with 64 kB of
-- device memory (a chain whose tables do not fit comes apart into its
-- joins, partitioned), and out of device memory (gpujoin.inject_fault) in
-- the build (the chain comes apart), the count or a retrieve (the chain
-- goes on on the CPU twin, left, semi and anti levels included); the rows
-- must be PostgreSQL's again.  The generator
-- must produce chains: many queries plan one, and left, semi and anti
-- joins each are levels of some.  Then 120 aggregates (count, sums of
-- integers and numerics, max, min of a date, grouped by an integer, a text
-- or an expression) over such chains with gpujoin.enable_chain_preagg, every
-- other one in a parallel plan: a GpuPreAgg over the chain or folding its
-- last level's matches into the groups; the rows must be PostgreSQL's.
BEGIN;
SELECT plan(16);
CREATE EXTENSION IF NOT EXISTS gpujoin;
LOAD 'gpujoin';
\ir helpers.psql
SET LOCAL client_min_messages = warning;
SET LOCAL gpujoin.enable_mergejoin = off;
SET LOCAL max_parallel_workers_per_gather = 0;

-- the fact table: a key for each dimension, NULL in some rows and missing
-- from the dimension in others
CREATE TABLE f (id int, k1 int4, k2 int8, k3 int4, k4 date, v int4, t text);
INSERT INTO f SELECT g,
	CASE WHEN g % 37 = 0 THEN NULL ELSE (g * 7) % 260 END,
	CASE WHEN g % 41 = 0 THEN NULL ELSE (g * 13) % 190 END,
	(g * 31) % 120,
	CASE WHEN g % 43 = 0 THEN NULL ELSE date '2020-01-01' + (g * 17) % 90 END,
	g % 97,
	'f' || (g % 500)
	FROM generate_series(1, 4000) g;
-- d1: int4, unique, keys 1..240 (f's 0 and 241..259 missing), and the
-- snowflake's key into d2
CREATE TABLE d1 (k int4, a int4, s text, k2 int8);
INSERT INTO d1 SELECT g, g % 10, 'd1_' || g, CASE WHEN g % 19 = 0 THEN NULL ELSE (g * 3) % 200 END
	FROM generate_series(1, 240) g;
-- d2: int8, up to three rows a key
CREATE TABLE d2 (k int8, b int8, nm numeric(10,2));
INSERT INTO d2 SELECT g % 150, g, g / 8.0 FROM generate_series(1, 400) g;
-- d3: int4, two rows for the even keys, NULL keys
CREATE TABLE d3 (k int4, c int4, w float8);
INSERT INTO d3 SELECT CASE WHEN g % 23 = 0 THEN NULL ELSE g % 100 END, g % 7, g * 0.5
	FROM generate_series(1, 150) g;
-- d4: date, unique, 60 of f's 90 days
CREATE TABLE d4 (k date, d int4);
INSERT INTO d4 SELECT date '2020-01-01' + g, g FROM generate_series(0, 89, 3) g
	UNION ALL SELECT date '2020-01-01' + g, -g FROM generate_series(1, 89, 3) g;
-- de: empty
CREATE TABLE de (k int4, e int4);
ANALYZE f, d1, d2, d3, d4, de;

-- one random star or snowflake: its FROM and WHERE, and the columns of
-- its inner and left joins' dimensions
CREATE FUNCTION pg_temp.random_star(OUT from_where text, OUT sel text) LANGUAGE plpgsql AS $f$
DECLARE
	-- a dimension: its name, the fact column it joins, its key, its
	-- columns that may be selected
	dims text[][] := ARRAY[
		ARRAY['d1', 'k1', 'k', 'd1.a, d1.s'],
		ARRAY['d2', 'k2', 'k', 'd2.b, d2.nm'],
		ARRAY['d3', 'k3', 'k', 'd3.c, d3.w'],
		ARRAY['d4', 'k4', 'k', 'd4.d'],
		ARRAY['de', 'k1', 'k', 'de.e']];
	jt text; d int; used int[] := '{}'; nlevels int;
	from_ text := 'f'; wh text[] := '{}'; snow boolean := false;
BEGIN
	nlevels := 2 + floor(random() * 4)::int;
	sel := 'f.id, f.v';
	WHILE cardinality(used) < nlevels LOOP
		-- the empty dimension rarely
		d := CASE WHEN random() < 0.08 THEN 5 ELSE 1 + floor(random() * 4)::int END;
		CONTINUE WHEN d = ANY (used);
		used := used || d;
		jt := (ARRAY['inner', 'inner', 'inner', 'left', 'left', 'semi', 'in', 'anti'])[1 + floor(random() * 8)::int];
		-- d2 through d1's column (a snowflake) where d1 is joined already
		IF d = 2 AND 1 = ANY (used) AND NOT snow AND jt IN ('inner', 'left')
			AND from_ ~ ' d1 ON ' AND random() < 0.5 THEN
			snow := true;
			from_ := from_ || format(' %s JOIN d2 ON d1.k2 = d2.k', CASE jt WHEN 'left' THEN 'LEFT' ELSE '' END);
			sel := sel || ', ' || dims[2][4];
			CONTINUE;
		END IF;
		CASE jt
			WHEN 'inner', 'left' THEN
				from_ := from_ || format(' %s JOIN %s ON f.%s = %s.%s', CASE jt WHEN 'left' THEN 'LEFT' ELSE '' END,
										 dims[d][1], dims[d][2], dims[d][1], dims[d][3]);
				sel := sel || ', ' || dims[d][4];
			WHEN 'semi' THEN
				wh := wh || format('EXISTS (SELECT FROM %s WHERE %s.%s = f.%s)', dims[d][1], dims[d][1], dims[d][3], dims[d][2]);
			WHEN 'in' THEN
				wh := wh || format('f.%s IN (SELECT %s FROM %s)', dims[d][2], dims[d][3], dims[d][1]);
			ELSE
				wh := wh || format('NOT EXISTS (SELECT FROM %s WHERE %s.%s = f.%s)', dims[d][1], dims[d][1], dims[d][3], dims[d][2]);
		END CASE;
	END LOOP;
	IF random() < 0.25 THEN
		wh := wh || format('f.id %% %s <> 0', 2 + floor(random() * 5)::int);
	END IF;
	IF random() < 0.15 AND from_ ~ ' JOIN d1 ON ' AND from_ !~ 'LEFT JOIN d1 ' THEN
		wh := wh || 'd1.a < 7'::text;
	END IF;
	from_where := from_;
	IF cardinality(wh) > 0 THEN
		from_where := from_where || ' WHERE ' || array_to_string(wh, ' AND ');
	END IF;
END
$f$;

-- a parallel plan with partial chains (as :parallel_cheap), or back to the
-- session's settings (serial)
CREATE FUNCTION pg_temp.use_parallel(on_ boolean) RETURNS void LANGUAGE plpgsql AS $f$
DECLARE
	setting text;
BEGIN
	IF on_ THEN
		PERFORM set_config('gpujoin.cost_as_gpu', 'on', true);
		PERFORM set_config('parallel_setup_cost', '0', true);
		PERFORM set_config('parallel_tuple_cost', '0', true);
		PERFORM set_config('min_parallel_table_scan_size', '0', true);
		PERFORM set_config('max_parallel_workers_per_gather', '2', true);
		PERFORM set_config('gpujoin.worker_setup_cost', '0', true);
		PERFORM set_config('gpujoin.enable_parallel_chain', 'on', true);
	ELSE
		FOREACH setting IN ARRAY ARRAY['gpujoin.cost_as_gpu', 'parallel_setup_cost', 'parallel_tuple_cost',
			'min_parallel_table_scan_size', 'gpujoin.worker_setup_cost', 'gpujoin.enable_parallel_chain'] LOOP
			PERFORM set_config(setting, NULL, true);	-- back to the session's value
		END LOOP;
		PERFORM set_config('max_parallel_workers_per_gather', '0', true);
	END IF;
END
$f$;

CREATE TEMP TABLE runs (n int, q text, chain boolean, levels text, same boolean,
	how text, plan2 text, same2 boolean);

DO $do$
DECLARE
	star record; q text;
	want text; got text; plan text; got2 text; plan2 text; how text;
BEGIN
	PERFORM setseed(0.33);
	FOR n IN 1 .. 300 LOOP
		star := pg_temp.random_star();
		q := format('SELECT %s, f.t FROM %s', star.sel, star.from_where);

		PERFORM pg_temp.use_gpu(false);
		want := pg_temp.rows_digest(q);
		PERFORM pg_temp.use_gpu(true);
		plan := pg_temp.plan(q);
		got := pg_temp.rows_digest(q);
		-- once more, in turn: small chunks, a parallel plan, little memory
		how := (ARRAY['chunks', 'parallel', 'memory', 'build_oom', 'count_oom', 'retrieve_oom'])[1 + n % 6];
		IF how = 'chunks' THEN
			PERFORM set_config('gpujoin.chunk_rows', '300', true);
		ELSIF how ~ '_oom$' THEN
			-- out of device memory in the build (the chain comes apart), the
			-- count or a round's retrieve after others were taken (it goes on
			-- on the CPU twin); rounds hold max(chunk_rows, 1024) matches, so
			-- chunks of 1000 rows take several where dimension keys repeat
			PERFORM set_config('gpujoin.chunk_rows', '1000', true);
			PERFORM set_config('gpujoin.inject_fault', how, true);
		ELSIF how = 'parallel' THEN
			PERFORM pg_temp.use_parallel(true);
		ELSE
			PERFORM set_config('gpujoin.device_memory_limit', '64kB', true);
		END IF;
		-- (under EXPLAIN ANALYZE where a fault is injected: it says so)
		plan2 := CASE WHEN how ~ '_oom$' THEN pg_temp.plan_analyze(q) ELSE pg_temp.plan(q) END;
		got2 := pg_temp.rows_digest(q);
		PERFORM pg_temp.use_parallel(false);
		PERFORM set_config('gpujoin.chunk_rows', NULL, true);
		PERFORM set_config('gpujoin.device_memory_limit', NULL, true);
		PERFORM set_config('gpujoin.inject_fault', 'none', true);
		INSERT INTO runs VALUES (n, q, plan ~ 'Chain: \d joins in one pass',
			(SELECT string_agg(m[1], ',' ORDER BY m[1])
			 FROM regexp_matches(plan, 'Join Type: (\w+)[^>]*Chain: a level of the chain', 'g') AS m),
			got = want, how, plan2, got2 = want);
	END LOOP;
	PERFORM pg_temp.use_gpu(false);
END
$do$;

SELECT is((SELECT count(*) FROM runs), 300::bigint, '300 random chains ran');
SELECT cmp_ok((SELECT avg(chain::int) FROM runs), '>=', 0.4::numeric,
	'at least 40 % of them planned a chain of GPU joins');
SELECT cmp_ok((SELECT count(*) FROM runs WHERE levels ~ t), '>=', 8::bigint,
	'at least 8 of them have a ' || t || ' join as a level of the chain')
FROM unnest(ARRAY['Left', 'Semi', 'Anti']) AS t;
SELECT is((SELECT string_agg(n || ': ' || q, E'\n' ORDER BY n) FROM runs WHERE NOT same), NULL,
	'every one returns PostgreSQL''s rows');
SELECT is((SELECT string_agg(n || ' (' || how || '): ' || q, E'\n' ORDER BY n) FROM runs WHERE NOT same2), NULL,
	'in chunks of 300 rows, in parallel, with 64 kB of device memory and out of device memory in the build, count or a retrieve, every one returns PostgreSQL''s rows');
SELECT cmp_ok((SELECT count(*) FROM runs WHERE how = fault AND
				plan2 ~ 'Chain: \d joins (in one pass[\s\S]*Device: CPU \(fell back from|run one by one: their tables did not fit)'),
	'>=', least::bigint,
	'at least ' || least || ' chains out of device memory in ' || step || ' came apart or went on on the CPU twin')
FROM (VALUES ('build_oom', 'the build', 10), ('count_oom', 'the count', 10), ('retrieve_oom', 'a retrieve', 5)) AS v(fault, step, least);
SELECT cmp_ok((SELECT count(*) FROM runs WHERE how = 'parallel'
			   AND plan2 ~ 'Gather[\s\S]*Parallel Custom Scan \(GpuHashJoin\)[^>]*Chain: \d joins in one pass'), '>=', 15::bigint,
	'at least 15 of the parallel runs planned a partial chain');
SELECT cmp_ok((SELECT count(*) FROM runs WHERE how = 'memory' AND plan2 ~ 'Chain: \d joins'), '>=', 15::bigint,
	'at least 15 of the runs with 64 kB of device memory planned a chain');

-- aggregates over random chains: a GpuPreAgg over the chain, or (with
-- gpujoin.enable_chain_preagg) its top, the last level's matches folded
-- into the groups on the device; every other query in a parallel plan
CREATE TEMP TABLE aggs (n int, q text, preagg boolean, folded boolean, same boolean);
DO $do$
DECLARE
	star record; q text; g text; a text; plan text; want text; got text;
BEGIN
	PERFORM setseed(0.44);
	FOR n IN 1 .. 120 LOOP
		star := pg_temp.random_star();
		g := CASE WHEN star.sel ~ 'd1\.a' AND random() < 0.5 THEN 'd1.a'
				  WHEN star.sel ~ 'd3\.c' AND random() < 0.5 THEN 'd3.c'
				  WHEN star.sel ~ 'd1\.s' AND random() < 0.3 THEN 'd1.s'
				  ELSE 'f.v % 7' END;
		a := 'count(*), sum(f.v)';
		IF star.sel ~ 'd2\.nm' THEN a := a || ', sum(d2.nm), count(d2.b)'; END IF;
		IF star.sel ~ 'd3\.c' THEN a := a || ', count(d3.c), max(d3.c)'; END IF;
		IF star.sel ~ 'd4\.d' THEN a := a || ', min(d4.d)'; END IF;
		q := format('SELECT %s AS g, %s FROM %s GROUP BY 1', g, a, star.from_where);
		PERFORM pg_temp.use_gpu(false);
		want := pg_temp.rows_digest(q);
		PERFORM pg_temp.use_gpu(true);
		PERFORM set_config('gpujoin.enable_chain_preagg', 'on', true);
		PERFORM pg_temp.use_parallel(n % 2 = 1);
		plan := pg_temp.plan(q);
		got := pg_temp.rows_digest(q);
		PERFORM pg_temp.use_parallel(false);
		PERFORM set_config('gpujoin.enable_chain_preagg', NULL, true);
		INSERT INTO aggs VALUES (n, q, plan ~ 'GpuPreAgg', plan ~ 'Chain: \d joins in one pass[^\n]*folded into groups there',
								 got = want);
	END LOOP;
	PERFORM pg_temp.use_gpu(false);
END
$do$;
SELECT is((SELECT string_agg(n || ': ' || q, E'\n' ORDER BY n) FROM aggs WHERE NOT same), NULL,
	'120 random aggregates over chains, serial and parallel: every one returns PostgreSQL''s rows');
SELECT cmp_ok((SELECT count(*) FROM aggs WHERE preagg), '>=', 40::bigint,
	'at least 40 of them planned a GpuPreAgg');
SELECT cmp_ok((SELECT count(*) FROM aggs WHERE folded AND n % 2 = 0), '>=', 10::bigint,
	'at least 10 of the serial ones folded a chain''s last level into the GpuPreAgg''s groups');
SELECT cmp_ok((SELECT count(*) FROM aggs WHERE folded AND n % 2 = 1), '>=', 10::bigint,
	'at least 10 of the parallel ones did');

SELECT * FROM finish();
SELECT diag(format('%s of 300 planned a chain (levels: %s left, %s semi, %s anti); %s returned other rows than PostgreSQL, '
	'%s on their second run (chunks, parallel, little memory or out of memory)',
	(SELECT count(*) FROM runs WHERE chain), (SELECT count(*) FROM runs WHERE levels ~ 'Left'),
	(SELECT count(*) FROM runs WHERE levels ~ 'Semi'), (SELECT count(*) FROM runs WHERE levels ~ 'Anti'),
	(SELECT count(*) FROM runs WHERE NOT same), (SELECT count(*) FROM runs WHERE NOT same2)));
SELECT diag(format('out of device memory: %s', (SELECT string_agg(format('%s %s of %s', how, fell, n), ', ' ORDER BY how)
	FROM (SELECT how, count(*) AS n, count(*) FILTER (WHERE plan2 ~ 'Chain: \d joins (in one pass[\s\S]*Device: CPU \(fell back from|run one by one: their tables did not fit)') AS fell
		  FROM runs WHERE how ~ '_oom$' GROUP BY how) x)));
SELECT diag(format('of 120 aggregates %s planned a GpuPreAgg, %s serial and %s parallel ones folded a chain into it; %s returned other rows',
	(SELECT count(*) FROM aggs WHERE preagg), (SELECT count(*) FROM aggs WHERE folded AND n % 2 = 0),
	(SELECT count(*) FROM aggs WHERE folded AND n % 2 = 1), (SELECT count(*) FROM aggs WHERE NOT same)));
ROLLBACK;
