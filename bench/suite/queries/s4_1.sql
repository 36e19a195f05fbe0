-- SSB Q4.1: all five tables; profit by year and nation
SELECT d_year, c_nation, sum(lo_revenue::int8 - lo_supplycost) AS profit
FROM ssb_date, ssb_customer, ssb_supplier, ssb_part, ssb_lineorder
WHERE lo_custkey = c_custkey AND lo_suppkey = s_suppkey AND lo_partkey = p_partkey AND lo_orderdate = d_datekey
	AND c_region = 'AMERICA' AND s_region = 'AMERICA' AND (p_mfgr = 'MFGR#1' OR p_mfgr = 'MFGR#2')
GROUP BY d_year, c_nation
ORDER BY d_year, c_nation
