-- bench/theta.sql: theta joins, gpujoin against PostgreSQL (run with psql on
-- a server with gpujoin installed; see bench/README.md).  Prints one line
-- per measurement: "RESULT <case> <plan> <ms> <rows>".
\set ON_ERROR_STOP on
\pset pager off
SET max_parallel_workers_per_gather = 0;
SET jit = off;
SET work_mem = '1GB';
LOAD 'gpujoin';
CREATE EXTENSION IF NOT EXISTS gpujoin;

-- 1M x 1M band join on timestamps, about 11 matches per outer row
DROP TABLE IF EXISTS tb_a, tb_b, ti_a, ti_b;
CREATE TABLE tb_a AS SELECT g AS id, timestamp '2024-01-01' + ((g::int8 * 7919) % 1000000) * interval '1 second' AS t
FROM generate_series(1, 1000000) g;
CREATE TABLE tb_b AS SELECT g AS id, timestamp '2024-01-01' + ((g::int8 * 104729) % 1000000) * interval '1 second' AS t
FROM generate_series(1, 1000000) g;
-- 100k x 100k inequality join
CREATE TABLE ti_a AS SELECT g AS id, (hashint4(g)::int8 & 1073741823) AS x FROM generate_series(1, 100000) g;
CREATE TABLE ti_b AS SELECT g AS id, (hashint4(g + 7777777)::int8 & 1073741823) AS y FROM generate_series(1, 100000) g;
VACUUM ANALYZE tb_a, tb_b, ti_a, ti_b;

CREATE OR REPLACE FUNCTION pg_temp.run(label text, q text, setup text, repeats int DEFAULT 3) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	t0 timestamptz;
	ms float8[] := '{}';
	n bigint;
	plan text;
BEGIN
	EXECUTE setup;
	SELECT string_agg(l, ' ') INTO plan FROM gpujoin_explain(q) l
	WHERE l ~ '(GpuThetaJoin|Variant|Nested Loop|Index|Seq Scan on|Join Filter)';
	EXECUTE q INTO n;						-- warm
	FOR i IN 1..repeats LOOP
		t0 := clock_timestamp();
		EXECUTE q INTO n;
		ms := ms || (extract(epoch FROM clock_timestamp() - t0) * 1000);
	END LOOP;
	RAISE NOTICE 'RESULT % | % ms | % rows | %', label,
		(SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY m)::numeric, 1) FROM unnest(ms) m), n, plan;
	RESET ALL;
	SET max_parallel_workers_per_gather = 0; SET jit = off; SET work_mem = '1GB';
END
$$;

\set band 'SELECT count(*) FROM tb_a JOIN tb_b ON tb_a.t BETWEEN tb_b.t - interval ''5 seconds'' AND tb_b.t + interval ''5 seconds'''
\set ineq 'SELECT count(*) FROM ti_a JOIN ti_b ON ti_a.x > ti_b.y + 1000000000'

SELECT pg_temp.run('band gpujoin BAND', :'band', 'SET gpujoin.join_variant = band');
SELECT pg_temp.run('band gpujoin NLJ', :'band', 'SET gpujoin.join_variant = nlj', 1);
SELECT pg_temp.run('ineq gpujoin BAND', :'ineq', 'SET gpujoin.join_variant = band');
SELECT pg_temp.run('ineq gpujoin NLJ', :'ineq', 'SET gpujoin.join_variant = nlj');

-- PostgreSQL without an index: a nested loop over every pair, timed on
-- 1000 outer rows (the full joins would take hours): multiply to compare
SELECT pg_temp.run('ineq postgres no index, 1000 of 100k outer rows (x100 to compare)',
	'SELECT count(*) FROM (SELECT * FROM ti_b WHERE id <= 1000) ti_b JOIN ti_a ON ti_a.x > ti_b.y + 1000000000',
	'SET gpujoin.enabled = off', 1);
SELECT pg_temp.run('band postgres no index, 1000 of 1M outer rows (x1000 to compare)',
	'SELECT count(*) FROM (SELECT * FROM tb_b WHERE id <= 1000) tb_b JOIN tb_a ON tb_a.t BETWEEN tb_b.t - interval ''5 seconds'' AND tb_b.t + interval ''5 seconds''',
	'SET gpujoin.enabled = off', 1);

-- PostgreSQL's best plan with a btree index on the inner side
CREATE INDEX ON tb_a (t);
CREATE INDEX ON ti_a (x);
VACUUM ANALYZE tb_a, ti_a;
SELECT pg_temp.run('band postgres btree', :'band', 'SET gpujoin.enabled = off');
SELECT pg_temp.run('ineq postgres btree', :'ineq', 'SET gpujoin.enabled = off');
SELECT pg_temp.run('band gpujoin auto (index present)', :'band', 'SET gpujoin.join_variant = auto');

DROP TABLE tb_a, tb_b, ti_a, ti_b;
