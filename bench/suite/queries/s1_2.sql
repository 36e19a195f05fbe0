-- SSB Q1.2: lineorder, date; a month
SELECT sum(lo_extendedprice::int8 * lo_discount) AS revenue
FROM ssb_lineorder, ssb_date
WHERE lo_orderdate = d_datekey AND d_yearmonthnum = 199401 AND lo_discount BETWEEN 4 AND 6
	AND lo_quantity BETWEEN 26 AND 35
