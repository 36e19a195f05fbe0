-- Join types other than inner: LEFT, RIGHT, FULL, SEMI (EXISTS), ANTI (NOT
-- EXISTS), for hash and theta joins, against PostgreSQL's own joins
LOAD 'gpujoin';
SET gpujoin.explain_device = off;
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_nestloop = off;

-- o's keys 0..36 and NULL; i's keys 0..49 and NULL: outer rows without a
-- match (NULL keys, and those failing the join filter), inner rows without
-- a match (keys 37..49), duplicates on both sides
CREATE TABLE o AS SELECT g AS id, CASE WHEN g % 10 = 0 THEN NULL ELSE g % 37 END AS k, g % 5 AS v
FROM generate_series(1, 2000) g;
CREATE TABLE i AS SELECT g AS id, CASE WHEN g % 13 = 0 THEN NULL ELSE g % 50 END AS k, g % 7 AS w
FROM generate_series(1, 500) g;
ANALYZE o, i;

CREATE TEMP VIEW q AS
SELECT 'left' t, count(*) n, sum(coalesce(o.id, 0) * 1000 + coalesce(i.id, 0)) s
FROM o LEFT JOIN i ON o.k = i.k AND o.v < i.w
UNION ALL SELECT 'right', count(*), sum(coalesce(o.id, 0) * 1000 + coalesce(i.id, 0))
FROM o RIGHT JOIN i ON o.k = i.k AND o.v < i.w
UNION ALL SELECT 'full', count(*), sum(coalesce(o.id, 0) * 1000 + coalesce(i.id, 0))
FROM o FULL JOIN i ON o.k = i.k AND o.v < i.w
UNION ALL SELECT 'semi', count(*), sum(o.id)
FROM o WHERE EXISTS (SELECT 1 FROM i WHERE i.k = o.k AND o.v + 3 < i.w)
UNION ALL SELECT 'anti', count(*), sum(o.id)
FROM o WHERE NOT EXISTS (SELECT 1 FROM i WHERE i.k = o.k AND o.v + 3 < i.w)
UNION ALL SELECT 'left, pushed-down qual', count(*), sum(coalesce(o.id, 0) * 1000 + coalesce(i.id, 0))
FROM o LEFT JOIN i ON o.k = i.k WHERE coalesce(i.w, 99) > o.v + 2
UNION ALL SELECT 'theta left', count(*), sum(coalesce(o.id, 0) * 1000 + coalesce(i.id, 0))
FROM o LEFT JOIN i ON o.k < i.k - 40
UNION ALL SELECT 'theta semi', count(*), sum(o.id)
FROM o WHERE EXISTS (SELECT 1 FROM i WHERE i.k > o.k + 25)
UNION ALL SELECT 'theta anti', count(*), sum(o.id)
FROM o WHERE NOT EXISTS (SELECT 1 FROM i WHERE i.k > o.k + 25);

SET gpujoin.enabled = off;
CREATE TEMP TABLE want AS SELECT * FROM q;
SET gpujoin.enabled = on;
CREATE TEMP TABLE got AS SELECT * FROM q;
SELECT w.t, w.n, g.n = w.n AND g.s = w.s AS same FROM want w JOIN got g USING (t) ORDER BY t;
-- every one of them ran on a GPU path
SELECT count(*) AS gpu_joins FROM gpujoin_explain('SELECT * FROM q') l WHERE l LIKE '%Custom Scan (Gpu%Join)%';

EXPLAIN (COSTS OFF) SELECT count(*) FROM o FULL JOIN i ON o.k = i.k AND o.v < i.w;
EXPLAIN (COSTS OFF) SELECT count(*) FROM o WHERE NOT EXISTS (SELECT 1 FROM i WHERE i.k = o.k);
EXPLAIN (COSTS OFF) SELECT count(*) FROM o LEFT JOIN i ON o.k = i.k WHERE coalesce(i.w, 99) > o.v + 2;
SET gpujoin.join_variant = band;
EXPLAIN (COSTS OFF) SELECT count(*) FROM o WHERE EXISTS (SELECT 1 FROM i WHERE i.k > o.k + 25);
RESET gpujoin.join_variant;

-- a FULL join on a comparison, which PostgreSQL itself cannot run ("FULL
-- JOIN is only supported with merge-joinable or hash-joinable join
-- conditions"): its rows are the LEFT join's plus the unmatched inner rows
SELECT (SELECT count(*) FROM o FULL JOIN i ON o.k < i.k - 40) =
	   (SELECT count(*) FROM o LEFT JOIN i ON o.k < i.k - 40) +
	   (SELECT count(*) FROM i WHERE NOT EXISTS (SELECT 1 FROM o WHERE o.k < i.k - 40)) AS full_is_left_plus_unmatched;
SELECT count(*) FROM i WHERE NOT EXISTS (SELECT 1 FROM o WHERE o.k < i.k - 40);

-- an empty inner side: LEFT and ANTI still return every outer row
CREATE TABLE e (k int, w int);
ANALYZE e;
SELECT count(*) FROM o LEFT JOIN e ON o.k = e.k;
SELECT count(*) FROM o WHERE NOT EXISTS (SELECT 1 FROM e WHERE e.k = o.k);
SELECT count(*) FROM o RIGHT JOIN e ON o.k = e.k;

DROP VIEW q;
DROP TABLE o, i, e;
