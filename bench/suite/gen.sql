-- bench/suite/gen.sql: the benchmark data, generated in SQL (SSB: gen_ssb.sql)
--
--   psql -v sf=1 -f bench/suite/gen.sql
--
-- A TPC-H-shaped schema at scale factor :sf with the specification's
-- cardinalities and key distributions (region 5, nation 25, supplier
-- 10,000 x SF, customer 150,000 x SF of which two thirds have orders, part
-- 200,000 x SF, partsupp 4 suppliers a part by the spec's formula, orders
-- 1,500,000 x SF with the spec's sparse order keys, lineitem 1 to 7 lines
-- an order, about 6,000,000 x SF, its supplier one of its part's four);
-- the value columns follow the spec's ranges but not its text grammar;
-- its money columns are numeric(15, 2), the spec's DECIMAL (before
-- 2026-11-30, s_acctbal, c_acctbal, ps_supplycost and o_totalprice were
-- numeric without a scale, which kept Q9's sum of ps_supplycost off the
-- device).
-- setseed() makes every run generate the same data.  No indexes: every
-- join is a join, as in the usual TPC-H runs of analytic engines
-- (bench/suite/keys.sql declares the keys: bench/suite/run --keys).
--
-- Then the microbenchmark tables, sized by :sf as well (at SF 1):
--	m_r, m_s	10M x 10M int4, m_r's keys unique (equi-join)
--	m_fact		10M rows x m_dim 1M (star join; the issue's 100M x 1M at SF 10)
--	z_a, z_b	1M x 1,000 many-to-many, keys Zipf (s = 1) over 100,000 values:
--				about 12M joined rows
--	b_a, b_b	1M x 1M timestamps (band join)
--	w_a, w_b	1M x 1M, 8 int4 payload columns a side (wide)
--
-- In parts (bench/suite/run --jobs N): -v phase=create makes every table,
-- the large ones (orders, lineitem and the microbenchmarks' of SF x 10^6
-- rows or more) empty; then -v phase=fill -v parts=N -v part=K, in N
-- sessions at once, adds rows K + 1, K + 1 + N, ... of each large table
-- (each session its own random() stream, so the data differ from one
-- session's, phase=all, the default).  -v micro=0 leaves the
-- microbenchmark tables out (a larger scale factor's TPC-H and SSB only).
\set ON_ERROR_STOP on
\ir gen_phase.psql
SELECT setseed(0.42 + :part / 1000.0);
SET max_parallel_workers_per_gather = 0;

\if :first
DROP TABLE IF EXISTS region, nation, supplier, customer, part, partsupp, orders, lineitem,
	m_r, m_s, m_fact, m_dim, z_a, z_b, b_a, b_b, w_a, w_b;

CREATE TABLE region (r_regionkey int, r_name text, r_comment text);
INSERT INTO region VALUES (0, 'AFRICA', ''), (1, 'AMERICA', ''), (2, 'ASIA', ''), (3, 'EUROPE', ''), (4, 'MIDDLE EAST', '');

CREATE TABLE nation (n_nationkey int, n_name text, n_regionkey int, n_comment text);
INSERT INTO nation VALUES
	(0, 'ALGERIA', 0, ''), (1, 'ARGENTINA', 1, ''), (2, 'BRAZIL', 1, ''), (3, 'CANADA', 1, ''),
	(4, 'EGYPT', 4, ''), (5, 'ETHIOPIA', 0, ''), (6, 'FRANCE', 3, ''), (7, 'GERMANY', 3, ''),
	(8, 'INDIA', 2, ''), (9, 'INDONESIA', 2, ''), (10, 'IRAN', 4, ''), (11, 'IRAQ', 4, ''),
	(12, 'JAPAN', 2, ''), (13, 'JORDAN', 4, ''), (14, 'KENYA', 0, ''), (15, 'MOROCCO', 0, ''),
	(16, 'MOZAMBIQUE', 0, ''), (17, 'PERU', 1, ''), (18, 'CHINA', 2, ''), (19, 'ROMANIA', 3, ''),
	(20, 'SAUDI ARABIA', 4, ''), (21, 'VIETNAM', 2, ''), (22, 'RUSSIA', 3, ''),
	(23, 'UNITED KINGDOM', 3, ''), (24, 'UNITED STATES', 1, '');

CREATE TABLE supplier AS
SELECT s AS s_suppkey, 'Supplier#' || lpad(s::text, 9, '0') AS s_name,
	(random() * 24)::int AS s_nationkey, round((random() * 10998.99 - 999.99)::numeric, 2)::numeric(15, 2) AS s_acctbal,
	CASE WHEN random() < 0.0005 THEN 'Customer Complaints' ELSE '' END AS s_comment
FROM generate_series(1, (10000 * :sf)::int) s;

CREATE TABLE customer AS
SELECT c AS c_custkey, 'Customer#' || lpad(c::text, 9, '0') AS c_name,
	(random() * 24)::int AS c_nationkey, round((random() * 10998.99 - 999.99)::numeric, 2)::numeric(15, 2) AS c_acctbal,
	(ARRAY['AUTOMOBILE', 'BUILDING', 'FURNITURE', 'HOUSEHOLD', 'MACHINERY'])[1 + (random() * 4)::int] AS c_mktsegment,
	lpad(((random() * 24)::int + 10)::text, 2, '0') || '-' || (100 + (random() * 899)::int) AS c_phone
FROM generate_series(1, (150000 * :sf)::int) c;

CREATE TABLE part AS
SELECT p AS p_partkey, 'part ' || p AS p_name,
	'Brand#' || (1 + (random() * 4)::int) || (1 + (random() * 4)::int) AS p_brand,
	(ARRAY['STANDARD', 'SMALL', 'MEDIUM', 'LARGE', 'ECONOMY', 'PROMO'])[1 + (random() * 5)::int] || ' ' ||
	(ARRAY['ANODIZED', 'BURNISHED', 'PLATED', 'POLISHED', 'BRUSHED'])[1 + (random() * 4)::int] || ' ' ||
	(ARRAY['TIN', 'NICKEL', 'BRASS', 'STEEL', 'COPPER'])[1 + (random() * 4)::int] AS p_type,
	1 + (random() * 49)::int AS p_size,
	(ARRAY['SM', 'LG', 'MED', 'JUMBO', 'WRAP'])[1 + (random() * 4)::int] || ' ' ||
	(ARRAY['CASE', 'BOX', 'BAG', 'JAR', 'PKG', 'PACK', 'CAN', 'DRUM'])[1 + (random() * 7)::int] AS p_container,
	round((90000 + ((p / 10) % 20001) + 100 * (p % 1000)) / 100.0, 2)::numeric(15, 2) AS p_retailprice
FROM generate_series(1, (200000 * :sf)::int) p;

-- the spec's four suppliers of a part
CREATE TABLE partsupp AS
SELECT p AS ps_partkey,
	((p + (i * ((10000 * :sf)::int / 4 + (p - 1) / (10000 * :sf)::int))) % (10000 * :sf)::int) + 1 AS ps_suppkey,
	1 + (random() * 9998)::int AS ps_availqty, round((1 + random() * 999)::numeric, 2)::numeric(15, 2) AS ps_supplycost
FROM generate_series(1, (200000 * :sf)::int) p, generate_series(0, 3) i;

\endif

-- order keys: 8 of every 32 (the spec's sparse keys); customers: those
-- whose key is not a multiple of 3
:make orders :as
SELECT ((o - 1) / 8) * 32 + (o - 1) % 8 + 1 AS o_orderkey,
	c AS o_custkey,
	(ARRAY['F', 'O', 'P'])[1 + (random() * 2)::int] AS o_orderstatus,
	round((1000 + random() * 400000)::numeric, 2)::numeric(15, 2) AS o_totalprice,
	date '1992-01-01' + (random() * 2405)::int AS o_orderdate,
	(ARRAY['1-URGENT', '2-HIGH', '3-MEDIUM', '4-NOT SPECIFIED', '5-LOW'])[1 + (random() * 4)::int] AS o_orderpriority,
	0 AS o_shippriority
FROM generate_series(1 + :part, (1500000 * :sf)::int, :parts) o,
	LATERAL (SELECT x + (x % 3 = 0)::int AS c FROM (SELECT 1 + (random() * ((150000 * :sf)::int - 2))::int + o * 0 AS x) r) cc
:rows;

:make lineitem :as
SELECT o_orderkey AS l_orderkey, pk AS l_partkey,
	((pk + (si * ((10000 * :sf)::int / 4 + (pk - 1) / (10000 * :sf)::int))) % (10000 * :sf)::int) + 1 AS l_suppkey,
	ln AS l_linenumber, q::numeric(15, 2) AS l_quantity,
	round(q * (90000 + ((pk / 10) % 20001) + 100 * (pk % 1000)) / 100.0, 2)::numeric(15, 2) AS l_extendedprice,
	(disc / 100.0)::numeric(15, 2) AS l_discount, (tax / 100.0)::numeric(15, 2) AS l_tax,
	CASE WHEN ship + 30 <= date '1995-06-17' THEN (ARRAY['R', 'A'])[1 + (random() * 1)::int] ELSE 'N' END AS l_returnflag,
	CASE WHEN ship > date '1995-06-17' THEN 'O' ELSE 'F' END AS l_linestatus,
	ship AS l_shipdate, o_orderdate + 30 + (random() * 60)::int AS l_commitdate,
	ship + 1 + (random() * 29)::int AS l_receiptdate,
	(ARRAY['DELIVER IN PERSON', 'COLLECT COD', 'NONE', 'TAKE BACK RETURN'])[1 + (random() * 3)::int] AS l_shipinstruct,
	(ARRAY['REG AIR', 'AIR', 'RAIL', 'SHIP', 'TRUCK', 'MAIL', 'FOB'])[1 + (random() * 6)::int] AS l_shipmode
FROM orders,
	LATERAL generate_series(1, 1 + (random() * 6)::int + o_orderkey * 0) ln,
	LATERAL (SELECT 1 + (random() * ((200000 * :sf)::int - 1))::int + ln * 0 AS pk, (random() * 3)::int AS si,
		1 + (random() * 49)::int AS q, (random() * 10)::int AS disc, (random() * 8)::int AS tax,
		o_orderdate + 1 + (random() * 120)::int AS ship) v
-- (this part's orders: o back from the sparse key)
WHERE (((o_orderkey - 1) / 32) * 8 + (o_orderkey - 1) % 32) % :parts = :part
:rows;

-- microbenchmarks (not with -v micro=0: bench/suite/run --no-micro)
\if :micro
:make m_r :as SELECT g AS k, g % 1000 AS v FROM generate_series(1 + :part, (10000000 * :sf)::int, :parts) g :rows;
:make m_s :as SELECT 1 + (hashint4(g) & 2147483647) % (10000000 * :sf)::int AS k, g % 100 AS v
	FROM generate_series(1 + :part, (10000000 * :sf)::int, :parts) g :rows;
:make m_dim :as SELECT g AS d_key, g % 50 AS d_group FROM generate_series(1 + :part, (1000000 * :sf)::int, :parts) g :rows;
:make m_fact :as SELECT 1 + (hashint4(g) & 2147483647) % (1000000 * :sf)::int AS f_key, g % 7 AS f_qty
	FROM generate_series(1 + :part, (10000000 * :sf)::int, :parts) g :rows;
-- Zipf-like (s = 1) by inverse transform over 100,000 values: exp(u * ln(n))
:make z_a :as SELECT g AS id, floor(exp(random() * ln(100000)))::int AS k FROM generate_series(1 + :part, (1000000 * :sf)::int, :parts) g :rows;
:make z_b :as SELECT g AS id, floor(exp(random() * ln(100000)))::int AS k FROM generate_series(1 + :part, (1000 * :sf)::int, :parts) g :rows;
:make b_a :as SELECT g AS id, timestamp '2024-01-01' + (random() * 86400 * 30) * interval '1 second' AS t
	FROM generate_series(1 + :part, (1000000 * :sf)::int, :parts) g :rows;
:make b_b :as SELECT g AS id, timestamp '2024-01-01' + (random() * 86400 * 30) * interval '1 second' AS t
	FROM generate_series(1 + :part, (1000000 * :sf)::int, :parts) g :rows;
:make w_a :as SELECT g AS k, g AS a1, g + 1 AS a2, g + 2 AS a3, g + 3 AS a4, g + 4 AS a5, g + 5 AS a6, g + 6 AS a7, g + 7 AS a8
	FROM generate_series(1 + :part, (1000000 * :sf)::int, :parts) g :rows;
:make w_b :as SELECT 1 + (hashint4(g) & 2147483647) % (1000000 * :sf)::int AS k, g AS b1, g + 1 AS b2, g + 2 AS b3,
	g + 3 AS b4, g + 4 AS b5, g + 5 AS b6, g + 6 AS b7, g + 7 AS b8
	FROM generate_series(1 + :part, (1000000 * :sf)::int, :parts) g :rows;
\endif

\if :whole
VACUUM ANALYZE;
\endif
