-- micro: equi-join 10M x 10M int4 (unique inner keys), every row matching
SELECT count(*), sum(m_r.v + m_s.v) FROM m_r JOIN m_s ON m_r.k = m_s.k
