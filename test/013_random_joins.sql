-- test/013_random_joins.sql
--
-- Differential random joins: 400 joins generated from a fixed seed over
-- four tables of varied types (integers of three widths, numeric, float8
-- with NaN and -0, text, date, timestamp, bool; NULLs, duplicates, keys on
-- one side only), each of a random join type (inner, left, right, full,
-- semi, anti), on one or two equalities between compatible columns or on
-- comparisons alone, sometimes with an extra comparison between the sides
-- and a filter above the join.  Each runs with gpujoin forced (core join
-- methods off) and with gpujoin off; the rows must be the same (as a
-- digest of the sorted rows).  The generator must produce GPU joins: at
-- least 90 % of the queries plan one.  Each runs a third time with 64 kB of
-- device memory, so that hash joins run in partitions (at least 100 must),
-- and must return the same rows again.
BEGIN;
SELECT plan(5);
CREATE EXTENSION IF NOT EXISTS gpujoin;
LOAD 'gpujoin';
\ir helpers.psql
SET LOCAL client_min_messages = warning;

CREATE FUNCTION pg_temp.make_table(name text, n int, salt int) RETURNS void
LANGUAGE plpgsql AS $f$
BEGIN
	EXECUTE format($q$CREATE TABLE %I AS
		SELECT g AS id,
			CASE WHEN g %% 17 = 0 THEN NULL ELSE ((g * %s) %% 40)::int2 END AS i2,
			CASE WHEN g %% 13 = 0 THEN NULL ELSE (g * %s) %% 60 END AS i4,
			CASE WHEN g %% 11 = 0 THEN NULL ELSE ((g * %s) %% 50)::int8 END AS i8,
			CASE WHEN g %% 19 = 0 THEN NULL ELSE (((g * %s) %% 30) / 4.0)::numeric(10,2) END AS nm,
			CASE WHEN g %% 23 = 0 THEN 'NaN'::float8 WHEN g %% 29 = 0 THEN '-0'::float8
				ELSE ((g * %s) %% 25) / 2.0 END AS f8,
			CASE WHEN g %% 7 = 0 THEN NULL ELSE 't' || ((g * %s) %% 45) END AS tx,
			date '2024-01-01' + (g * %s) %% 35 AS dt,
			timestamp '2024-01-01' + ((g * %s) %% 35) * interval '1 day' AS ts,
			CASE WHEN g %% 5 = 0 THEN NULL ELSE g %% 3 = 0 END AS bo
		FROM generate_series(1, %s) g$q$, name, salt, salt + 1, salt + 2, salt + 3, salt + 4, salt + 5,
		salt + 6, salt + 6, n);
	EXECUTE format('ANALYZE %I', name);
END
$f$;
SELECT pg_temp.make_table('r1', 1500, 3), pg_temp.make_table('r2', 900, 7),
	pg_temp.make_table('r3', 400, 11), pg_temp.make_table('r4', 60, 13);

CREATE TEMP TABLE runs (n int, q text, gpu boolean, same boolean,
	partitioned boolean, same_partitioned boolean);

DO $do$
DECLARE
	-- columns by compatibility group: equal and compared within a group
	groups text[][] := ARRAY[
		ARRAY['i2', 'i4', 'i8'], ARRAY['nm', 'nm', 'nm'], ARRAY['f8', 'f8', 'f8'],
		ARRAY['tx', 'tx', 'tx'], ARRAY['dt', 'ts', 'dt'], ARRAY['bo', 'bo', 'bo']];
	ordered int[] := ARRAY[1, 2, 3, 5];	-- groups with < and >
	tables text[] := ARRAY['r1', 'r2', 'r3', 'r4'];
	jtypes text[] := ARRAY['inner', 'left', 'right', 'full', 'semi', 'anti'];
	ops text[] := ARRAY['<', '<=', '>', '>='];
	ta text; tb text; jt text; cond text; extra text; filt text; q text;
	g int; g2 int; ca text; cb text;
	want text; got text; plan text; got2 text; plan2 text;
BEGIN
	PERFORM setseed(0.2024);
	FOR n IN 1 .. 400 LOOP
		ta := tables[1 + floor(random() * 4)::int];
		tb := tables[1 + floor(random() * 4)::int];
		jt := jtypes[1 + floor(random() * 6)::int];
		IF random() < 0.15 THEN
			-- comparisons alone: a theta join (full joins need an equality)
			g := ordered[1 + floor(random() * 4)::int];
			ca := groups[g][1 + floor(random() * 3)::int];
			cb := groups[g][1 + floor(random() * 3)::int];
			cond := format('a.%s %s b.%s', ca, ops[1 + floor(random() * 4)::int], cb);
			IF random() < 0.5 THEN
				cond := cond || format(' AND a.%s %s b.%s', ca, ops[1 + floor(random() * 4)::int], cb);
			END IF;
			IF jt = 'full' THEN jt := 'left'; END IF;
		ELSE
			g := 1 + floor(random() * 6)::int;
			cond := format('a.%s = b.%s', groups[g][1 + floor(random() * 3)::int], groups[g][1 + floor(random() * 3)::int]);
			IF random() < 0.35 THEN
				g2 := 1 + floor(random() * 6)::int;
				cond := cond || format(' AND a.%s = b.%s', groups[g2][1 + floor(random() * 3)::int],
									   groups[g2][1 + floor(random() * 3)::int]);
			END IF;
		END IF;
		extra := '';
		IF random() < 0.3 AND jt <> 'full' THEN
			g := ordered[1 + floor(random() * 4)::int];
			extra := format(' AND a.%s %s b.%s', groups[g][1], ops[1 + floor(random() * 4)::int], groups[g][2]);
		END IF;
		filt := '';
		IF random() < 0.3 THEN
			filt := format(' WHERE a.id %% %s <> 0', 2 + floor(random() * 5)::int);
		END IF;
		q := CASE jt
			WHEN 'semi' THEN format('SELECT a.* FROM %I a WHERE EXISTS (SELECT FROM %I b WHERE %s%s)', ta, tb, cond, extra)
				|| replace(filt, 'WHERE', 'AND')
			WHEN 'anti' THEN format('SELECT a.* FROM %I a WHERE NOT EXISTS (SELECT FROM %I b WHERE %s%s)', ta, tb, cond, extra)
				|| replace(filt, 'WHERE', 'AND')
			ELSE format('SELECT a.id, a.tx, a.f8, b.id AS bid, b.nm, b.ts FROM %I a %s JOIN %I b ON %s%s%s',
						ta, CASE jt WHEN 'inner' THEN '' ELSE upper(jt) END, tb, cond, extra, filt)
		END;

		PERFORM pg_temp.use_gpu(false);
		want := pg_temp.rows_digest(q);
		PERFORM pg_temp.use_gpu(true);
		plan := pg_temp.plan(q);
		got := pg_temp.rows_digest(q);
		-- again with 64 kB of device memory: hash joins run in partitions
		PERFORM set_config('gpujoin.device_memory_limit', '64kB', true);
		got2 := pg_temp.rows_digest(q);
		plan2 := pg_temp.plan_analyze(q);
		PERFORM set_config('gpujoin.device_memory_limit', '0', true);
		INSERT INTO runs VALUES (n, q, plan ~ 'Custom Scan \(Gpu', got = want,
								 plan2 ~ 'Partitions: \d+', got2 = want);
	END LOOP;
	PERFORM set_config('enable_hashjoin', 'on', true);
	PERFORM set_config('enable_mergejoin', 'on', true);
	PERFORM set_config('enable_nestloop', 'on', true);
END
$do$;

SELECT is((SELECT count(*) FROM runs), 400::bigint, '400 random joins ran');
SELECT cmp_ok((SELECT avg(gpu::int) FROM runs), '>=', 0.9::numeric, 'at least 90 % of them planned a GPU join');
SELECT is((SELECT string_agg(n || ': ' || q, E'\n' ORDER BY n) FROM runs WHERE NOT same), NULL,
	'every one returns PostgreSQL''s rows');
SELECT is((SELECT string_agg(n || ': ' || q, E'\n' ORDER BY n) FROM runs WHERE NOT same_partitioned), NULL,
	'with 64 kB of device memory, every one returns PostgreSQL''s rows');
SELECT cmp_ok((SELECT count(*) FROM runs WHERE partitioned), '>=', 100::bigint,
	'with 64 kB of device memory, at least 100 of them run in partitions');

SELECT * FROM finish();
SELECT diag(format('%s of 400 planned a GPU join; %s returned other rows than PostgreSQL; '
	'with 64 kB of device memory %s ran in partitions and %s returned other rows',
	(SELECT count(*) FROM runs WHERE gpu), (SELECT count(*) FROM runs WHERE NOT same),
	(SELECT count(*) FROM runs WHERE partitioned), (SELECT count(*) FROM runs WHERE NOT same_partitioned)));
ROLLBACK;
