-- micro: many-to-many with Zipf-skewed keys, 1M x 1,000
SELECT count(*), sum(z_a.id::int8 - z_b.id) FROM z_a JOIN z_b ON z_a.k = z_b.k
