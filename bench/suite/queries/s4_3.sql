-- SSB Q4.3: one nation, one category, by city and brand
SELECT d_year, s_city, p_brand1, sum(lo_revenue::int8 - lo_supplycost) AS profit
FROM ssb_date, ssb_customer, ssb_supplier, ssb_part, ssb_lineorder
WHERE lo_custkey = c_custkey AND lo_suppkey = s_suppkey AND lo_partkey = p_partkey AND lo_orderdate = d_datekey
	AND c_region = 'AMERICA' AND s_nation = 'UNITED STATES' AND (d_year = 1997 OR d_year = 1998)
	AND p_category = 'MFGR#14'
GROUP BY d_year, s_city, p_brand1
ORDER BY d_year, s_city, p_brand1
