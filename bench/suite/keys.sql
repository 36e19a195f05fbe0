-- bench/suite/keys.sql: primary and foreign keys on the benchmark's tables
--
--   psql -v keys=on -f bench/suite/keys.sql     (bench/suite/run --keys)
--   psql -v keys=off -f bench/suite/keys.sql    (bench/suite/run --no-keys)
--
-- gen.sql and gen_ssb.sql make their tables without keys or indexes, so
-- that every join of the suite is a join.  A user's schema usually
-- declares the keys, and PostgreSQL's planner reads a join along a
-- declared foreign key as matching each referencing row once: without
-- them it multiplies the selectivities of a join's key columns as if
-- they were independent, which for TPC-H Q9's two-column join of
-- lineitem with partsupp (l_partkey, l_suppkey) estimates a few hundred
-- rows a process where every lineitem row matches, and keeps the joins
-- above it out of the parallel workers, PostgreSQL's and gpujoin's alike.
--
-- keys=on drops the keys of an earlier run and declares them: each
-- dimension's primary key (a unique index, which also lets PostgreSQL
-- choose an index scan for a join's inner side) and each reference of
-- TPC-H's and SSB's schemas as a foreign key.  The foreign keys are
-- declared NOT VALID, which skips checking the existing rows (a join of
-- the whole fact table per key, minutes at scale factor 10); the
-- generators make every reference hold, which
--   ALTER TABLE lineitem VALIDATE CONSTRAINT lineitem_partsupp_fk;
-- and the others check (at SF 1 they all pass), and PostgreSQL's planner
-- uses a foreign key whether it was validated or not.  The fact tables
-- (lineitem, ssb_lineorder) get no primary key: no query joins on theirs.
-- keys=off drops them all.
\set ON_ERROR_STOP on
\if :{?keys}
\else
\set keys on
\endif

ALTER TABLE IF EXISTS lineitem DROP CONSTRAINT IF EXISTS lineitem_orders_fk,
	DROP CONSTRAINT IF EXISTS lineitem_partsupp_fk, DROP CONSTRAINT IF EXISTS lineitem_part_fk,
	DROP CONSTRAINT IF EXISTS lineitem_supplier_fk;
ALTER TABLE IF EXISTS orders DROP CONSTRAINT IF EXISTS orders_customer_fk;
ALTER TABLE IF EXISTS partsupp DROP CONSTRAINT IF EXISTS partsupp_part_fk,
	DROP CONSTRAINT IF EXISTS partsupp_supplier_fk;
ALTER TABLE IF EXISTS customer DROP CONSTRAINT IF EXISTS customer_nation_fk;
ALTER TABLE IF EXISTS supplier DROP CONSTRAINT IF EXISTS supplier_nation_fk;
ALTER TABLE IF EXISTS nation DROP CONSTRAINT IF EXISTS nation_region_fk;
ALTER TABLE IF EXISTS ssb_lineorder DROP CONSTRAINT IF EXISTS lineorder_date_fk,
	DROP CONSTRAINT IF EXISTS lineorder_customer_fk, DROP CONSTRAINT IF EXISTS lineorder_supplier_fk,
	DROP CONSTRAINT IF EXISTS lineorder_part_fk;
ALTER TABLE IF EXISTS region DROP CONSTRAINT IF EXISTS region_pk;
ALTER TABLE IF EXISTS nation DROP CONSTRAINT IF EXISTS nation_pk;
ALTER TABLE IF EXISTS supplier DROP CONSTRAINT IF EXISTS supplier_pk;
ALTER TABLE IF EXISTS customer DROP CONSTRAINT IF EXISTS customer_pk;
ALTER TABLE IF EXISTS part DROP CONSTRAINT IF EXISTS part_pk;
ALTER TABLE IF EXISTS partsupp DROP CONSTRAINT IF EXISTS partsupp_pk;
ALTER TABLE IF EXISTS orders DROP CONSTRAINT IF EXISTS orders_pk;
ALTER TABLE IF EXISTS ssb_date DROP CONSTRAINT IF EXISTS ssb_date_pk;
ALTER TABLE IF EXISTS ssb_customer DROP CONSTRAINT IF EXISTS ssb_customer_pk;
ALTER TABLE IF EXISTS ssb_supplier DROP CONSTRAINT IF EXISTS ssb_supplier_pk;
ALTER TABLE IF EXISTS ssb_part DROP CONSTRAINT IF EXISTS ssb_part_pk;

\if :keys
SET maintenance_work_mem = '1GB';
ALTER TABLE region ADD CONSTRAINT region_pk PRIMARY KEY (r_regionkey);
ALTER TABLE nation ADD CONSTRAINT nation_pk PRIMARY KEY (n_nationkey);
ALTER TABLE supplier ADD CONSTRAINT supplier_pk PRIMARY KEY (s_suppkey);
ALTER TABLE customer ADD CONSTRAINT customer_pk PRIMARY KEY (c_custkey);
ALTER TABLE part ADD CONSTRAINT part_pk PRIMARY KEY (p_partkey);
ALTER TABLE partsupp ADD CONSTRAINT partsupp_pk PRIMARY KEY (ps_partkey, ps_suppkey);
ALTER TABLE orders ADD CONSTRAINT orders_pk PRIMARY KEY (o_orderkey);
ALTER TABLE nation ADD CONSTRAINT nation_region_fk FOREIGN KEY (n_regionkey) REFERENCES region NOT VALID;
ALTER TABLE supplier ADD CONSTRAINT supplier_nation_fk FOREIGN KEY (s_nationkey) REFERENCES nation NOT VALID;
ALTER TABLE customer ADD CONSTRAINT customer_nation_fk FOREIGN KEY (c_nationkey) REFERENCES nation NOT VALID;
ALTER TABLE partsupp ADD CONSTRAINT partsupp_part_fk FOREIGN KEY (ps_partkey) REFERENCES part NOT VALID,
	ADD CONSTRAINT partsupp_supplier_fk FOREIGN KEY (ps_suppkey) REFERENCES supplier NOT VALID;
ALTER TABLE orders ADD CONSTRAINT orders_customer_fk FOREIGN KEY (o_custkey) REFERENCES customer NOT VALID;
ALTER TABLE lineitem ADD CONSTRAINT lineitem_orders_fk FOREIGN KEY (l_orderkey) REFERENCES orders NOT VALID,
	ADD CONSTRAINT lineitem_partsupp_fk FOREIGN KEY (l_partkey, l_suppkey) REFERENCES partsupp NOT VALID,
	ADD CONSTRAINT lineitem_part_fk FOREIGN KEY (l_partkey) REFERENCES part NOT VALID,
	ADD CONSTRAINT lineitem_supplier_fk FOREIGN KEY (l_suppkey) REFERENCES supplier NOT VALID;
ALTER TABLE ssb_date ADD CONSTRAINT ssb_date_pk PRIMARY KEY (d_datekey);
ALTER TABLE ssb_customer ADD CONSTRAINT ssb_customer_pk PRIMARY KEY (c_custkey);
ALTER TABLE ssb_supplier ADD CONSTRAINT ssb_supplier_pk PRIMARY KEY (s_suppkey);
ALTER TABLE ssb_part ADD CONSTRAINT ssb_part_pk PRIMARY KEY (p_partkey);
ALTER TABLE ssb_lineorder ADD CONSTRAINT lineorder_date_fk FOREIGN KEY (lo_orderdate) REFERENCES ssb_date NOT VALID,
	ADD CONSTRAINT lineorder_customer_fk FOREIGN KEY (lo_custkey) REFERENCES ssb_customer NOT VALID,
	ADD CONSTRAINT lineorder_supplier_fk FOREIGN KEY (lo_suppkey) REFERENCES ssb_supplier NOT VALID,
	ADD CONSTRAINT lineorder_part_fk FOREIGN KEY (lo_partkey) REFERENCES ssb_part NOT VALID;
\endif
