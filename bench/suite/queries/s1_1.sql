-- SSB Q1.1: lineorder, date; a year, discount 1-3, quantity < 25
SELECT sum(lo_extendedprice::int8 * lo_discount) AS revenue
FROM ssb_lineorder, ssb_date
WHERE lo_orderdate = d_datekey AND d_year = 1993 AND lo_discount BETWEEN 1 AND 3 AND lo_quantity < 25
