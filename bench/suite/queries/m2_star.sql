-- micro: star join, fact 10M x dimension 1M
SELECT d_group, count(*), sum(f_qty) FROM m_fact JOIN m_dim ON f_key = d_key GROUP BY d_group ORDER BY d_group
