-- GpuThetaJoin: range, band and inequality joins (BAND and NLJ), against
-- PostgreSQL's own nested loop on the same data
LOAD 'gpujoin';
SET gpujoin.explain_device = off;
SET enable_hashjoin = off;
SET enable_mergejoin = off;

-- readings at irregular times, and probes: a band join on time, and
-- inequalities on integers and floats, with NULLs, duplicates, NaN,
-- infinities, -0 and the extreme timestamps
CREATE TABLE rd (id int, t timestamp, x int4, f float8, q int8);
CREATE TABLE pr (id int, t timestamp, y int8, g float4, w int2);
INSERT INTO rd
SELECT g, timestamp '2024-01-01' + (g * 37 % 1440) * interval '1 minute',
	   g % 50, (g % 23) / 4.0 - 2.0, g % 7
FROM generate_series(1, 1500) g;
INSERT INTO rd VALUES
	(9001, NULL, NULL, NULL, NULL),
	(9002, '-infinity', -2147483648, '-Infinity', -9223372036854775808),
	(9003, 'infinity', 2147483647, 'Infinity', 9223372036854775807),
	(9004, '2024-01-01 10:00', 10, 'NaN', 3),
	(9005, '2024-01-01 10:00', 10, '-0', 3),
	(9006, '2024-01-01 10:00', 10, '0', 3);
INSERT INTO pr
SELECT g, timestamp '2024-01-01' + (g * 53 % 1440) * interval '1 minute',
	   g % 60 - 5, ((g % 17) / 3.0 - 2.5)::float4, (g % 9)::int2
FROM generate_series(1, 400) g;
INSERT INTO pr VALUES
	(8001, NULL, NULL, NULL, NULL),
	(8002, '2024-01-01 10:00', 10, 'NaN', 1),
	(8003, '2024-01-01 10:00', 10, '-0', 1),
	(8004, 'infinity', 9223372036854775807, 'Infinity', 32767),
	(8005, '-infinity', -9223372036854775808, '-Infinity', -32768);
ANALYZE rd, pr;

-- the joins, one view each: planned anew by every query that reads them
CREATE TEMP VIEW band AS
SELECT rd.id AS rid, pr.id AS pid, rd.f, pr.g FROM rd JOIN pr
	ON rd.t BETWEEN pr.t - interval '5 minutes' AND pr.t + interval '5 minutes';
CREATE TEMP VIEW lt AS
SELECT rd.id AS rid, pr.id AS pid FROM rd JOIN pr ON rd.x < pr.y;
CREATE TEMP VIEW ge AS
SELECT rd.id AS rid, pr.id AS pid FROM rd JOIN pr ON pr.y >= rd.x;
CREATE TEMP VIEW fl AS
SELECT rd.id AS rid, pr.id AS pid FROM rd JOIN pr ON rd.f > pr.g AND rd.f <= pr.g + 1;
CREATE TEMP VIEW two AS
SELECT rd.id AS rid, pr.id AS pid FROM rd JOIN pr ON rd.x < pr.y AND rd.q > pr.w;
CREATE TEMP VIEW empty_range AS
SELECT rd.id AS rid, pr.id AS pid FROM rd JOIN pr ON rd.x BETWEEN pr.w + 5 AND pr.w - 5;
CREATE TEMP VIEW mixed AS
SELECT rd.id AS rid, pr.id AS pid FROM rd JOIN pr
	ON rd.x <= pr.y AND rd.x > pr.w AND rd.id % 3 = pr.id % 2;

CREATE FUNCTION summary(v text, OUT n bigint, OUT s numeric)
LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE format('SELECT count(*), sum(rid::numeric * 100000 + pid) FROM %I', v) INTO n, s;
END
$$;

SET gpujoin.enabled = off;
CREATE TEMP TABLE expected AS
SELECT v, (summary(v)).* FROM unnest(ARRAY['band', 'lt', 'ge', 'fl', 'two', 'empty_range', 'mixed']) v;
SELECT * FROM expected ORDER BY v;
SET gpujoin.enabled = on;

-- the plans (which theta variant is cheaper depends on the device's costs,
-- so the variant is forced here); with an equality, a hash join rechecks
-- the comparisons
SET gpujoin.join_variant = band;
EXPLAIN (COSTS OFF) SELECT * FROM band;
EXPLAIN (COSTS OFF) SELECT * FROM lt;
EXPLAIN (COSTS OFF) SELECT * FROM two;
SET gpujoin.join_variant = nlj;
EXPLAIN (COSTS OFF) SELECT * FROM two;
RESET gpujoin.join_variant;
EXPLAIN (COSTS OFF) SELECT * FROM mixed;

-- every join with each variant, and in small chunks and rounds
CREATE FUNCTION check_theta(variant text, chunk int, OUT v text, OUT same boolean, OUT plan_variant text)
RETURNS SETOF record LANGUAGE plpgsql AS $$
DECLARE
	e record;
BEGIN
	PERFORM set_config('gpujoin.join_variant', variant, true);
	PERFORM set_config('gpujoin.chunk_rows', chunk::text, true);
	FOR e IN SELECT * FROM expected ORDER BY 1 LOOP
		v := e.v;
		-- auto's choice depends on the device's costs: not shown
		SELECT CASE WHEN variant = 'auto' THEN NULL ELSE substring(l FROM 'Variant: (\S+)') END
		INTO plan_variant
		FROM gpujoin_explain(format('SELECT * FROM %I', e.v)) AS l WHERE l LIKE '%Variant:%';
		SELECT r.n = e.n AND r.s IS NOT DISTINCT FROM e.s INTO same FROM summary(e.v) r;
		RETURN NEXT;
	END LOOP;
END
$$;
SELECT * FROM check_theta('band', 1000000);
SELECT * FROM check_theta('nlj', 1000000);
SELECT * FROM check_theta('auto', 37);

DROP FUNCTION check_theta, summary;
DROP VIEW band, lt, ge, fl, two, empty_range, mixed;
DROP TABLE rd, pr;
