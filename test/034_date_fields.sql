-- test/034_date_fields.sql
--
-- EXTRACT(field FROM a date or a timestamp) on the device (src/planner_expr.c,
-- GJ_EXPR_DATE_FIELD of cuda/expr/expr.h): year, quarter, month, day, dow,
-- isodow and doy, as group keys of a GpuPreAgg (TPC-H Q7, Q8 and Q9 group
-- by a year), in its aggregates and FILTERs, and in a side's filter read
-- with its heap pages.  Differential: every query returns PostgreSQL's own
-- rows, over every day of three centuries' turns (1900 is no leap year,
-- 2000 is, 2100 is not), days spread from 4713 BC to 5874897 AD, the
-- infinities (their years infinite, their months NULL: the device leaves
-- those rows to the host, whose keys come back as infinite numerics),
-- NULLs, and timestamps a microsecond either side of midnight.  Fields the
-- device does not compute (week, epoch, decade, a timestamp's hour, a
-- timestamptz's anything) keep PostgreSQL's plan.  The groups a GpuPreAgg
-- expects are bounded by the fields' values (a quarter 4, a year as many
-- as its column's statistics span), which PostgreSQL's own estimate takes
-- to be 200 each.
BEGIN;
SELECT plan(19);
CREATE EXTENSION IF NOT EXISTS gpujoin;
LOAD 'gpujoin';
\ir helpers.psql
SET LOCAL client_min_messages = warning;
SET LOCAL max_parallel_workers_per_gather = 0;
SET LOCAL gpujoin.cost_as_gpu = on;

CREATE TABLE dd (k int4, d date, t timestamp, v int4);
INSERT INTO dd
SELECT g % 100, d,
	CASE WHEN d > date '294276-12-30' THEN NULL
		 ELSE d + ((g * 7919) % 86400) * interval '1 second' - (g % 2) * interval '1 microsecond' END,
	g % 1000 - 500
FROM (SELECT row_number() OVER () AS g, d FROM (
	SELECT generate_series(date '1895-12-20', date '1905-01-10', '1 day')::date
	UNION ALL SELECT generate_series(date '1995-12-20', date '2005-01-10', '1 day')::date
	UNION ALL SELECT generate_series(date '2095-12-20', date '2105-01-10', '1 day')::date
	UNION ALL SELECT date '4713-11-24 BC' + 99991 * i FROM generate_series(0, 21000) i
	UNION ALL SELECT date '5874897-12-31'
	UNION ALL SELECT unnest(ARRAY['0001-12-31 BC', '0001-01-01', '0005-02-29 BC']::date[])) s(d)) s;
INSERT INTO dd VALUES (1, 'infinity', 'infinity', 1), (2, '-infinity', '-infinity', 2),
	(3, NULL, NULL, 3), (4, 'infinity', '-infinity', 4);
CREATE TABLE dk (k int4, name text, since date, until date);
INSERT INTO dk SELECT g, 'n' || g % 7, date '1990-01-01' + g * 36,
	CASE WHEN g = 50 THEN 'infinity' ELSE date '1990-01-01' + g * 36 END
FROM generate_series(0, 99) g;
ANALYZE dd, dk;

-- the queries, and whether the device computes their keys and aggregates
CREATE TEMP TABLE fq (name text PRIMARY KEY, sql text, preagg bool);
INSERT INTO fq
SELECT format('%s of a %s', f, src),
	format('SELECT extract(%s FROM dd.%s), count(*), sum(dd.v) FROM dd JOIN dk ON dd.k = dk.k GROUP BY 1', f, src),
	true
FROM unnest(ARRAY['year', 'quarter', 'month', 'day', 'dow', 'isodow', 'doy']) f,
	unnest(ARRAY['d', 't']) src;
INSERT INTO fq VALUES
	('fields by their other names', 'SELECT extract(''YEARS'' FROM dd.d), extract(''mon'' FROM dd.t), count(*) FROM dd JOIN dk ON dd.k = dk.k GROUP BY 1, 2', true),
	('sums and averages of fields', 'SELECT dk.name, sum(extract(doy FROM dd.d)), avg(extract(month FROM dd.t)), sum(extract(year FROM dd.d) * 2 - 1) FROM dd JOIN dk ON dd.k = dk.k GROUP BY 1', true),
	('fields in a FILTER', 'SELECT dk.name, count(*) FILTER (WHERE extract(dow FROM dd.d) = 0 OR extract(dow FROM dd.d) = 6), sum(dd.v) FILTER (WHERE extract(quarter FROM dd.t) >= 3) FROM dd JOIN dk ON dd.k = dk.k GROUP BY 1', true),
	('a text key and two fields', 'SELECT dk.name, extract(year FROM dd.d), extract(quarter FROM dd.d), count(*), sum(dd.v) FROM dd JOIN dk ON dd.k = dk.k GROUP BY 1, 2, 3', true),
	('a year of the inner side (TPC-H Q9''s shape)', 'SELECT dk.name, extract(year FROM dk.since), count(*), sum(dd.v) FROM dd JOIN dk ON dd.k = dk.k GROUP BY 1, 2', true),
	('a side''s filter of fields', 'SELECT count(*), sum(dd.v) FROM dd JOIN dk ON dd.k = dk.k WHERE extract(year FROM dd.d) = 2000 AND extract(month FROM dd.t) > 6', NULL),
	('week stays on the CPU', 'SELECT extract(week FROM dd.d), count(*) FROM dd JOIN dk ON dd.k = dk.k WHERE dd.d BETWEEN ''1900-01-01'' AND ''2100-01-01'' GROUP BY 1', false),
	('epoch stays on the CPU', 'SELECT extract(epoch FROM dd.t), count(*) FROM dd JOIN dk ON dd.k = dk.k WHERE dd.d BETWEEN ''1999-01-01'' AND ''2001-01-01'' GROUP BY 1', false),
	('decade stays on the CPU', 'SELECT extract(decade FROM dd.d), count(*) FROM dd JOIN dk ON dd.k = dk.k GROUP BY 1', false),
	('a timestamp''s hour stays on the CPU', 'SELECT extract(hour FROM dd.t), count(*) FROM dd JOIN dk ON dd.k = dk.k GROUP BY 1', false),
	('a timestamptz stays on the CPU', 'SELECT extract(year FROM dd.t::timestamptz), count(*) FROM dd JOIN dk ON dd.k = dk.k WHERE dd.d BETWEEN ''1900-01-01'' AND ''2100-01-01'' GROUP BY 1', false);

CREATE TEMP TABLE fq_expected (name text, digest text);
:postgres_join
INSERT INTO fq_expected SELECT name, pg_temp.rows_digest(sql) FROM fq;

CREATE FUNCTION pg_temp.field_failures() RETURNS text
LANGUAGE sql AS $$
	SELECT coalesce(string_agg(q.name, '; ' ORDER BY q.name), '')
	FROM fq q JOIN fq_expected e USING (name)
	WHERE pg_temp.rows_digest(q.sql) IS DISTINCT FROM e.digest $$;

:gpu_join
SELECT is((SELECT coalesce(string_agg(name, '; ' ORDER BY name), '') FROM fq
		   WHERE preagg IS NOT NULL AND (pg_temp.plan(sql) ~ 'GpuPreAgg') <> preagg), '',
	'a GpuPreAgg where the device computes every field, none for the fields it does not');
SELECT is(pg_temp.field_failures(), '', 'every query returns PostgreSQL''s rows');
SELECT matches(pg_temp.plan(sql), 'Device Filter: .*EXTRACT\(year FROM dd\.d\)',
	'a side''s filter of fields on the device, with its heap pages')
	FROM fq WHERE name = 'a side''s filter of fields';
-- the infinities: undecided on the device, their keys folded on the host
SELECT matches(pg_temp.plan_analyze(sql), 'Undecided Rounds: [1-9][\s\S]*Matches Folded on the Host: [1-9]',
	'an infinite date''s year: its match folded on the host')
	FROM fq WHERE name = 'year of a d';
SELECT is((SELECT array_agg(y ORDER BY y) FROM (SELECT extract(year FROM dd.d) y FROM dd JOIN dk ON dd.k = dk.k
			WHERE dd.d IN ('4713-11-24 BC', '5874897-12-31', 'infinity', '-infinity') OR dd.d IS NULL GROUP BY 1) s),
	ARRAY['-Infinity', -4713, 5874897, 'Infinity', NULL]::numeric[],
	'the years of the infinities are infinite numerics, beside the first and last days''');

-- in the order of the keys: the groups sorted on the device (the
-- infinities at the ends), then by the Finalize GroupAggregate
CREATE FUNCTION pg_temp.ordered_years(descending bool) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	r text;
BEGIN
	EXECUTE format('SELECT count(*) || '' groups, '' || md5(string_agg(y::text || '':'' || n, '','')) FROM (SELECT extract(year FROM dd.d) y, count(*) n
		FROM dd JOIN dk ON dd.k = dk.k GROUP BY 1 ORDER BY 1 %s) s',
		CASE WHEN descending THEN 'DESC' ELSE '' END) INTO r;
	RETURN r;
END $$;
:postgres_join
CREATE TEMP TABLE ordered_expected AS SELECT pg_temp.ordered_years(false) a, pg_temp.ordered_years(true) d;
:gpu_join
SELECT matches(pg_temp.plan('SELECT extract(year FROM dd.d), count(*) FROM dd JOIN dk ON dd.k = dk.k GROUP BY 1 ORDER BY 1'),
	'GroupAggregate[\s\S]*GpuPreAgg[\s\S]*Output Order: by the group keys', 'a year in order: the GpuPreAgg''s groups sorted on the device');
SELECT is(pg_temp.ordered_years(false), (SELECT a FROM ordered_expected), 'years in ascending order: PostgreSQL''s rows in its order');
SELECT is(pg_temp.ordered_years(true), (SELECT d FROM ordered_expected), 'years in descending order: PostgreSQL''s rows in its order');

-- the groups expected: the fields' values bound them
CREATE FUNCTION pg_temp.preagg_rows(q text) RETURNS float8
LANGUAGE plpgsql AS $$
DECLARE
	j jsonb;
BEGIN
	EXECUTE 'EXPLAIN (FORMAT JSON) ' || q INTO j;
	RETURN jsonb_path_query_first(j, 'strict $.** ? (@."Custom Plan Provider" == "GpuPreAgg")."Plan Rows"')::float8;
END $$;
SELECT is(pg_temp.preagg_rows('SELECT extract(quarter FROM dd.d), count(*) FROM dd JOIN dk ON dd.k = dk.k GROUP BY 1'), 5::float8,
	'a quarter: at most 5 groups expected (NULL one)');
SELECT is(pg_temp.preagg_rows('SELECT extract(year FROM dk.since), count(*) FROM dd JOIN dk ON dd.k = dk.k GROUP BY 1'),
	(extract(year FROM date '1990-01-01' + 99 * 36) - 1990 + 2)::float8,
	'a year of a column whose statistics span 1990 to 1999: at most 11 groups expected (PostgreSQL: its 100 values)');
SELECT cmp_ok(pg_temp.preagg_rows('SELECT extract(year FROM dk.until), count(*) FROM dd JOIN dk ON dd.k = dk.k GROUP BY 1'),
	'>', 11::float8, 'the same years and an infinite date in the statistics: no bound from them (PostgreSQL''s estimate)');
SELECT cmp_ok(pg_temp.preagg_rows('SELECT dk.name, extract(isodow FROM dd.d), count(*) FROM dd JOIN dk ON dd.k = dk.k GROUP BY 1, 2'),
	'<=', 7 * 8::float8, 'a text key of 7 values and a day of the week: at most 7 x 8 groups expected');

-- chunks, variants, parallel plans, the device out of memory
SET LOCAL gpujoin.chunk_rows = 1000;
SELECT is(pg_temp.field_failures(), '', 'chunks of 1000 rows: every query');
RESET gpujoin.chunk_rows;
SELECT is(pg_temp.field_failures(), '', 'group-by ' || v || ': every query')
	FROM unnest(ARRAY['shared', 'sort', 'sort_tr']) v, LATERAL (SELECT set_config('gpujoin.groupby_variant', v, true)) c;
RESET gpujoin.groupby_variant;
SET LOCAL gpujoin.inject_fault = 'count_oom';
SELECT is(pg_temp.field_failures(), '', 'out of device memory in the count: every query');
RESET gpujoin.inject_fault;
:parallel_cheap
SELECT matches(pg_temp.plan(sql), 'Gather[\s\S]*Parallel Custom Scan \(GpuPreAgg\)',
	'parallel: a GpuPreAgg per process grouping by a field')
	FROM fq WHERE name = 'a text key and two fields';
SELECT is(pg_temp.field_failures(), '', 'parallel plans: every query');

SELECT * FROM finish();
ROLLBACK;
