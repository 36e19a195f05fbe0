-- micro: wide payloads, 8 int4 columns a side, 1M x 1M
SELECT count(*), sum(a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + b1 + b2 + b3 + b4 + b5 + b6 + b7 + b8)
FROM w_a JOIN w_b ON w_a.k = w_b.k
