-- test/008_theta_joins.sql
--
-- GpuThetaJoin (BAND and NLJ) returns PostgreSQL's rows for range, band and
-- inequality joins: every comparison operator, one- and two-sided ranges,
-- strict and non-strict bounds at equality, BETWEEN (and SYMMETRIC, which
-- becomes >= LEAST and <= GREATEST of its bounds), interval arithmetic on
-- timestamps, float NaN/Infinity/-0, timestamp infinities, NULLs,
-- duplicates, empty ranges; and a result of more than 100 million rows,
-- counted, streamed in bounded rounds; and cancel of a 10^10-row join.
BEGIN;
SELECT plan(42);
CREATE EXTENSION IF NOT EXISTS gpujoin;
LOAD 'gpujoin';
\ir helpers.psql

CREATE TABLE a (id int, x int4, t timestamp, f float8);
INSERT INTO a SELECT g, g % 100, timestamp '2024-03-01' + g * interval '17 seconds',
	   (g % 41) / 8.0 - 2.5
FROM generate_series(1, 4000) g;
INSERT INTO a VALUES (90001, NULL, NULL, NULL), (90002, 50, 'infinity', 'NaN'),
	(90003, 50, '-infinity', '-Infinity'), (90004, 50, '2024-03-01 00:10', '-0');
CREATE TABLE b (id int, y int8, t timestamp, g float4);
INSERT INTO b SELECT g, g % 120 - 10, timestamp '2024-03-01' + g * interval '41 seconds',
	   ((g % 29) / 6.0 - 2.0)::float4
FROM generate_series(1, 1500) g;
INSERT INTO b VALUES (80001, NULL, NULL, NULL), (80002, 50, 'infinity', 'Infinity'),
	(80003, 50, '2024-03-01 00:10', '0'), (80004, 50, '2024-03-01 00:10', 'NaN');
ANALYZE a, b;

CREATE FUNCTION pg_temp.check_join(label text, q text, variants text[]) RETURNS SETOF text
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
		RETURN NEXT matches(pg_temp.plan(q), 'Custom Scan \(GpuThetaJoin\)[^\n]*\n[^\n]*Join Cond[^\n]*\n( *Join Type[^\n]*\n)? *Variant: ' || upper(variant),
							label || ': ' || variant || ' plan');
		RETURN NEXT bag_eq(q, 'SELECT * FROM want', label || ': ' || variant || ' returns PostgreSQL''s rows');
	END LOOP;
	PERFORM set_config('gpujoin.join_variant', 'auto', true);
	EXECUTE 'DROP TABLE want';
END
$f$;

:gpu_join
SET LOCAL enable_nestloop = off;

SELECT * FROM pg_temp.check_join('band on timestamps with interval arithmetic',
	'SELECT a.id, b.id AS bid FROM a JOIN b ON a.t BETWEEN b.t - interval ''30 seconds'' AND b.t + interval ''30 seconds''',
	ARRAY['band', 'nlj']);
SELECT * FROM pg_temp.check_join('strict two-sided range on integers',
	'SELECT a.id, b.id AS bid FROM a JOIN b ON a.x > b.y AND a.x < b.y + 3',
	ARRAY['band', 'nlj']);
SELECT * FROM pg_temp.check_join('one-sided <= across int4 and int8',
	'SELECT a.id, b.id AS bid FROM a JOIN b ON a.x <= b.y - 100',
	ARRAY['band', 'nlj']);
SELECT * FROM pg_temp.check_join('floats with NaN, Infinity and -0',
	'SELECT a.id, b.id AS bid FROM a JOIN b ON a.f >= b.g AND a.f <= b.g + 0.25',
	ARRAY['band', 'nlj']);
-- (these two on an eighth of a and its rows of NULL, infinite and NaN
-- values: on the whole of a they match 1.5 and 3.3 million pairs, and the
-- comparisons took half a minute)
SELECT * FROM pg_temp.check_join('comparisons on two inner columns',
	'SELECT a.id, b.id AS bid FROM a JOIN b ON a.x < b.y AND a.f > b.g WHERE a.id % 8 = 3 OR a.id > 90000',
	ARRAY['band', 'nlj']);

SELECT * FROM pg_temp.check_join('BETWEEN SYMMETRIC, bounds in either order, NULL bounds',
	'SELECT a.id, b.id AS bid FROM a JOIN b ON a.x BETWEEN SYMMETRIC b.y AND 60 - b.y WHERE a.id % 8 = 3 OR a.id > 90000',
	ARRAY['band', 'nlj']);
SELECT * FROM pg_temp.check_join('BETWEEN SYMMETRIC on timestamps, outer side bounded',
	'SELECT a.id, b.id AS bid FROM a LEFT JOIN b ON b.t BETWEEN SYMMETRIC a.t AND a.t - interval ''1 minute''',
	ARRAY['band', 'nlj']);

-- an empty range matches nothing
SET LOCAL gpujoin.join_variant = band;
SELECT is((SELECT count(*) FROM a JOIN b ON a.x BETWEEN b.y + 1 AND b.y - 1), 0::bigint,
	'a range whose bounds are reversed matches nothing');
RESET gpujoin.join_variant;

-- more than 100 million rows, counted: 11000 x 10000 pairs, all matching
CREATE TABLE big_a AS SELECT g AS v FROM generate_series(1, 11000) g;
CREATE TABLE big_b AS SELECT g AS w FROM generate_series(1, 10000) g;
ANALYZE big_a, big_b;
SET LOCAL gpujoin.join_variant = band;
SELECT matches(pg_temp.plan('SELECT count(*) FROM big_a JOIN big_b ON big_a.v > big_b.w - 20000'),
	'GpuThetaJoin', 'a near-cross product runs as a GPU theta join');
SELECT is((SELECT count(*) FROM big_a JOIN big_b ON big_a.v > big_b.w - 20000), 110000000::bigint,
	'110 million joined rows, streamed in rounds');

-- cancel: statement_timeout ends a join producing 10^10 rows within a second
-- of firing, with either variant (NLJ counts in chunks bounded by their
-- comparisons; rounds of matches are bounded; cancel is checked between)
CREATE TABLE huge_a AS SELECT g AS v FROM generate_series(1, 100000) g;
CREATE TABLE huge_b AS SELECT g AS w FROM generate_series(1, 100000) g;
ANALYZE huge_a, huge_b;
SET LOCAL gpujoin.join_variant = nlj;
SELECT matches(pg_temp.plan('SELECT count(*) FROM huge_a JOIN huge_b ON huge_a.v > huge_b.w - 1000000'),
	'Variant: NLJ', 'the 10^10-row join runs as NLJ');
SET LOCAL statement_timeout = '200ms';
SELECT cmp_ok(pg_temp.time_to_cancel('SELECT count(*) FROM huge_a JOIN huge_b ON huge_a.v > huge_b.w - 1000000'),
	'<', interval '2200 ms', 'statement_timeout of 200 ms ends a 10^10-row NLJ within two seconds of firing');
SET LOCAL gpujoin.join_variant = band;
SET LOCAL statement_timeout = 0;
SELECT matches(pg_temp.plan('SELECT count(*) FROM huge_a JOIN huge_b ON huge_a.v > huge_b.w - 1000000'),
	'Variant: BAND', 'the 10^10-row join runs as BAND');
SET LOCAL statement_timeout = '200ms';
SELECT cmp_ok(pg_temp.time_to_cancel('SELECT count(*) FROM huge_a JOIN huge_b ON huge_a.v > huge_b.w - 1000000'),
	'<', interval '2200 ms', 'statement_timeout of 200 ms ends a 10^10-row BAND join within two seconds of firing');
SET LOCAL statement_timeout = 0;
RESET gpujoin.join_variant;

SELECT * FROM finish();
ROLLBACK;
