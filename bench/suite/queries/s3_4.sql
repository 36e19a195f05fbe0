-- SSB Q3.4: two cities each side, a month
SELECT c_city, s_city, d_year, sum(lo_revenue::int8) AS revenue
FROM ssb_customer, ssb_lineorder, ssb_supplier, ssb_date
WHERE lo_custkey = c_custkey AND lo_suppkey = s_suppkey AND lo_orderdate = d_datekey
	AND c_city IN ('UNITED KI1', 'UNITED KI5') AND s_city IN ('UNITED KI1', 'UNITED KI5')
	AND d_yearmonth = 'Dec1997'
GROUP BY c_city, s_city, d_year
ORDER BY d_year, revenue DESC, c_city, s_city
