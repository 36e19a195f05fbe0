-- SSB Q2.1: lineorder, date, part, supplier; a category, a region
SELECT sum(lo_revenue::int8), d_year, p_brand1
FROM ssb_lineorder, ssb_date, ssb_part, ssb_supplier
WHERE lo_orderdate = d_datekey AND lo_partkey = p_partkey AND lo_suppkey = s_suppkey
	AND p_category = 'MFGR#12' AND s_region = 'AMERICA'
GROUP BY d_year, p_brand1
ORDER BY d_year, p_brand1
