-- bench/suite/gen_ssb.sql: the Star Schema Benchmark's tables, in SQL
--
--   psql -v sf=1 -f bench/suite/gen_ssb.sql     (bench/suite/run does this)
--
-- O'Neil et al.'s SSB at scale factor :sf, prefixed ssb_ so that it sits
-- beside the TPC-H-shaped tables: ssb_lineorder 6,000,000 x SF rows, ssb_date
-- the 2,556 days of 1992-1998 (d_datekey yyyymmdd), ssb_customer 30,000 x
-- SF, ssb_supplier 2,000 x SF, ssb_part 200,000 x (1 + floor(log2 SF)); the
-- hierarchies the flights filter on are the benchmark's: region > nation >
-- city ("UNITED KI1"), mfgr > category > brand1 ("MFGR#1221").  Seeded, no
-- indexes.  In parts, as gen.sql (-v phase=create, then -v phase=fill -v
-- parts=N -v part=K): ssb_lineorder's orders K + 1, K + 1 + N, ...
-- Each customer's and supplier's nation is drawn once per key, uniform
-- over the 25 (until 2026-11-30 a random number drawn per row of
-- ssb_nation in a WHERE gave a key no row, one, or several: about a third
-- of the keys were missing and some were repeated).
\set ON_ERROR_STOP on
\ir gen_phase.psql
SELECT setseed(0.7 + :part / 1000.0);
SET max_parallel_workers_per_gather = 0;
\if :first
DROP TABLE IF EXISTS ssb_lineorder, ssb_date, ssb_customer, ssb_supplier, ssb_part, ssb_nation;

CREATE TEMP TABLE ssb_nation (n int, nation text, region text);
INSERT INTO ssb_nation VALUES
	(0, 'ALGERIA', 'AFRICA'), (1, 'ARGENTINA', 'AMERICA'), (2, 'BRAZIL', 'AMERICA'), (3, 'CANADA', 'AMERICA'),
	(4, 'EGYPT', 'MIDDLE EAST'), (5, 'ETHIOPIA', 'AFRICA'), (6, 'FRANCE', 'EUROPE'), (7, 'GERMANY', 'EUROPE'),
	(8, 'INDIA', 'ASIA'), (9, 'INDONESIA', 'ASIA'), (10, 'IRAN', 'MIDDLE EAST'), (11, 'IRAQ', 'MIDDLE EAST'),
	(12, 'JAPAN', 'ASIA'), (13, 'JORDAN', 'MIDDLE EAST'), (14, 'KENYA', 'AFRICA'), (15, 'MOROCCO', 'AFRICA'),
	(16, 'MOZAMBIQUE', 'AFRICA'), (17, 'PERU', 'AMERICA'), (18, 'CHINA', 'ASIA'), (19, 'ROMANIA', 'EUROPE'),
	(20, 'SAUDI ARABIA', 'MIDDLE EAST'), (21, 'VIETNAM', 'ASIA'), (22, 'RUSSIA', 'EUROPE'),
	(23, 'UNITED KINGDOM', 'EUROPE'), (24, 'UNITED STATES', 'AMERICA');

CREATE TABLE ssb_date AS
SELECT to_char(d, 'YYYYMMDD')::int AS d_datekey, d AS d_date, extract(year FROM d)::int AS d_year,
	extract(month FROM d)::int AS d_monthnuminyear, to_char(d, 'YYYYMM')::int AS d_yearmonthnum,
	to_char(d, 'MonYYYY') AS d_yearmonth, extract(week FROM d)::int AS d_weeknuminyear
FROM generate_series(date '1992-01-01', date '1998-12-31', interval '1 day') g, LATERAL (SELECT g::date AS d) x;

CREATE TABLE ssb_customer AS
SELECT c AS c_custkey, 'Customer#' || lpad(c::text, 9, '0') AS c_name,
	rpad(nation, 9) || (random() * 9)::int AS c_city, nation AS c_nation, region AS c_region,
	(ARRAY['AUTOMOBILE', 'BUILDING', 'FURNITURE', 'HOUSEHOLD', 'MACHINERY'])[1 + (random() * 4)::int] AS c_mktsegment
FROM generate_series(1, (30000 * :sf)::int) c, LATERAL (SELECT floor(random() * 25)::int + c * 0 AS r) r
	JOIN ssb_nation nn ON nn.n = r.r;

CREATE TABLE ssb_supplier AS
SELECT s AS s_suppkey, 'Supplier#' || lpad(s::text, 9, '0') AS s_name,
	rpad(nation, 9) || (random() * 9)::int AS s_city, nation AS s_nation, region AS s_region
FROM generate_series(1, (2000 * :sf)::int) s, LATERAL (SELECT floor(random() * 25)::int + s * 0 AS r) r
	JOIN ssb_nation nn ON nn.n = r.r;

CREATE TABLE ssb_part AS
SELECT p AS p_partkey, 'MFGR#' || m AS p_mfgr, 'MFGR#' || m || c AS p_category,
	'MFGR#' || m || c || (1 + (random() * 39)::int) AS p_brand1,
	(ARRAY['almond', 'antique', 'aquamarine', 'azure', 'beige', 'bisque', 'black', 'blue'])[1 + (random() * 7)::int] AS p_color,
	1 + (random() * 49)::int AS p_size
FROM generate_series(1, (200000 * (1 + floor(ln(greatest(:sf, 1)) / ln(2))))::int) p,
	LATERAL (SELECT 1 + (random() * 4)::int + p * 0 AS m, 1 + (random() * 4)::int AS c) mc;

\endif

:make ssb_lineorder :as
SELECT o AS lo_orderkey, l AS lo_linenumber,
	1 + (random() * ((30000 * :sf)::int - 1))::int AS lo_custkey,
	1 + (random() * ((SELECT count(*) FROM ssb_part) - 1))::int AS lo_partkey,
	1 + (random() * ((2000 * :sf)::int - 1))::int AS lo_suppkey,
	to_char(od, 'YYYYMMDD')::int AS lo_orderdate,
	q AS lo_quantity, q * price AS lo_extendedprice, disc AS lo_discount,
	(q * price * (100 - disc) / 100)::int AS lo_revenue, (price * 6 / 10)::int AS lo_supplycost,
	(random() * 8)::int AS lo_tax,
	(ARRAY['REG AIR', 'AIR', 'RAIL', 'SHIP', 'TRUCK', 'MAIL', 'FOB'])[1 + (random() * 6)::int] AS lo_shipmode
FROM generate_series(1 + :part, (1500000 * :sf)::int, :parts) o,
	LATERAL (SELECT date '1992-01-01' + (random() * 2405)::int + o * 0 AS od) d,
	LATERAL generate_series(1, 1 + (random() * 6)::int + o * 0) l,
	LATERAL (SELECT 1 + (random() * 49)::int + l * 0 AS q, 900 + (random() * 100000)::int AS price,
		(random() * 10)::int AS disc) v
:rows;

\if :whole
VACUUM ANALYZE ssb_lineorder, ssb_date, ssb_customer, ssb_supplier, ssb_part;
\endif
