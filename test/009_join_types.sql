-- test/009_join_types.sql
--
-- LEFT, RIGHT, FULL, SEMI and ANTI joins on the GPU return PostgreSQL's
-- rows, for every equi-join variant (NPHJ, PHJ, SMJ) and both theta
-- variants (BAND, NLJ), with join filters, pushed-down quals, NULL keys,
-- unmatched rows on both sides and several chunks; and GpuMergeJoin's LEFT,
-- SEMI and ANTI joins, whose output stays in key order.  The planner may run a
-- LEFT join as the RIGHT join of the swapped sides, so either is accepted.
BEGIN;
SELECT plan(64);
CREATE EXTENSION IF NOT EXISTS gpujoin;
LOAD 'gpujoin';
\ir helpers.psql

CREATE TABLE o (id int, k int4, v int, t text);
INSERT INTO o SELECT g, CASE WHEN g % 11 = 0 THEN NULL ELSE g % 400 END, g % 9, 'o' || g
FROM generate_series(1, 6000) g;
CREATE TABLE i (id int, k int8, w int, u text);
INSERT INTO i SELECT g, CASE WHEN g % 17 = 0 THEN NULL ELSE g % 600 END, g % 7, 'i' || g
FROM generate_series(1, 2000) g;
ANALYZE o, i;

CREATE FUNCTION pg_temp.check(label text, q text, variants text[], plan_re text) RETURNS SETOF text
LANGUAGE plpgsql AS $f$
DECLARE
	variant text;
BEGIN
	EXECUTE 'SET LOCAL gpujoin.enabled = off';
	EXECUTE format('CREATE TEMP TABLE want ON COMMIT DROP AS %s', q);
	EXECUTE 'SET LOCAL gpujoin.enabled = on';
	RETURN NEXT cmp_ok((SELECT count(*) FROM want), '>', 0::bigint, label || ': the reference is not empty');
	FOREACH variant IN ARRAY variants LOOP
		PERFORM set_config('gpujoin.join_variant', variant, true);
		PERFORM set_config('gpujoin.chunk_rows', CASE WHEN variant IN ('phj', 'nlj') THEN '1500' ELSE '1000000' END, true);
		RETURN NEXT matches(pg_temp.plan(q), plan_re, label || ', ' || variant || ': the plan');
		RETURN NEXT bag_eq(q, 'SELECT * FROM want', label || ', ' || variant || ': PostgreSQL''s rows');
	END LOOP;
	PERFORM set_config('gpujoin.join_variant', 'auto', true);
	RESET gpujoin.chunk_rows;
	EXECUTE 'DROP TABLE want';
END
$f$;

:gpu_join

SELECT * FROM pg_temp.check('left join with a join filter',
	'SELECT o.id, o.t, i.id AS iid, i.u FROM o LEFT JOIN i ON o.k = i.k AND o.v < i.w',
	ARRAY['nphj', 'phj', 'smj'], 'Join Type: (Left|Right)');
SELECT * FROM pg_temp.check('right join',
	'SELECT o.id, i.id AS iid, i.u FROM o RIGHT JOIN i ON o.k = i.k AND o.v < i.w',
	ARRAY['nphj', 'phj', 'smj'], 'Join Type: (Left|Right)');
SELECT * FROM pg_temp.check('full join',
	'SELECT o.id, o.t, i.id AS iid FROM o FULL JOIN i ON o.k = i.k AND o.v < i.w',
	ARRAY['nphj', 'phj', 'smj'], 'Join Type: Full');
SELECT * FROM pg_temp.check('semi join (EXISTS)',
	'SELECT o.id, o.t FROM o WHERE EXISTS (SELECT 1 FROM i WHERE i.k = o.k AND o.v + 2 < i.w)',
	ARRAY['nphj', 'phj', 'smj'], 'Join Type: Semi');
SELECT * FROM pg_temp.check('anti join (NOT EXISTS)',
	'SELECT o.id, o.t FROM o WHERE NOT EXISTS (SELECT 1 FROM i WHERE i.k = o.k AND o.v + 2 < i.w)',
	ARRAY['nphj', 'phj', 'smj'], 'Join Type: Anti');
SELECT * FROM pg_temp.check('left join with a pushed-down qual',
	'SELECT o.id, i.id AS iid FROM o LEFT JOIN i ON o.k = i.k WHERE coalesce(i.w, 99) > o.v + 1',
	ARRAY['nphj', 'smj'], 'Join Type: (Left|Right)');
SELECT * FROM pg_temp.check('theta left join',
	'SELECT o.id, i.id AS iid FROM o LEFT JOIN i ON o.k > i.k + 300 AND o.k < i.k + 310',
	ARRAY['band', 'nlj'], 'Join Type: (Left|Right)');
SELECT * FROM pg_temp.check('theta semi join',
	'SELECT o.id FROM o WHERE EXISTS (SELECT 1 FROM i WHERE i.k > o.k + 150)',
	ARRAY['band', 'nlj'], 'Join Type: Semi');
SELECT * FROM pg_temp.check('theta anti join',
	'SELECT o.id FROM o WHERE NOT EXISTS (SELECT 1 FROM i WHERE i.k > o.k + 150)',
	ARRAY['band', 'nlj'], 'Join Type: Anti');

-- GpuMergeJoin: LEFT, SEMI and ANTI joins come out in key order, the
-- unmatched outer rows in their place (NULL keys last), with no Sort above
CREATE FUNCTION pg_temp.check_merge(label text, q text, join_type text) RETURNS SETOF text
LANGUAGE plpgsql AS $f$
BEGIN
	EXECUTE 'SET LOCAL gpujoin.enabled = off';
	EXECUTE format('CREATE TEMP TABLE want ON COMMIT DROP AS %s', q);
	EXECUTE 'SET LOCAL gpujoin.enabled = on';
	PERFORM set_config('gpujoin.enable_hashjoin', 'off', true);
	RETURN NEXT matches(pg_temp.plan(q || ' ORDER BY o.k'),
		'^Custom Scan \(GpuMergeJoin\)\n.*Join Type: ' || join_type,
		label || ': a GpuMergeJoin with no Sort above it');
	RETURN NEXT bag_eq(q, 'SELECT * FROM want', label || ': PostgreSQL''s rows');
	RETURN NEXT results_eq('SELECT k FROM (' || q || ' ORDER BY o.k) s',
		'SELECT k FROM want ORDER BY k', label || ': in key order, NULL keys last');
	PERFORM set_config('gpujoin.enable_hashjoin', 'on', true);
	EXECUTE 'DROP TABLE want';
END
$f$;
SET LOCAL gpujoin.chunk_rows = 1000;
SELECT * FROM pg_temp.check_merge('merge left join with a join filter',
	'SELECT o.id, o.k, o.t, i.id AS iid FROM o LEFT JOIN i ON o.k = i.k AND o.v < i.w', 'Left');
SELECT * FROM pg_temp.check_merge('merge semi join',
	'SELECT o.id, o.k FROM o WHERE EXISTS (SELECT 1 FROM i WHERE i.k = o.k AND o.v + 2 < i.w)', 'Semi');
SELECT * FROM pg_temp.check_merge('merge anti join',
	'SELECT o.id, o.k FROM o WHERE NOT EXISTS (SELECT 1 FROM i WHERE i.k = o.k AND o.v + 2 < i.w)', 'Anti');
RESET gpujoin.chunk_rows;

SELECT * FROM finish();
ROLLBACK;
