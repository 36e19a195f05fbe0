-- micro: band join 1M x 1M timestamps, +- 1 second
SELECT count(*) FROM b_a JOIN b_b ON b_a.t BETWEEN b_b.t - interval '1 second' AND b_b.t + interval '1 second'
