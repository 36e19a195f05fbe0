/* gpujoin--0.1.0.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION gpujoin" to load this file. \quit

-- The device gpujoin uses in this session, or one row saying there is none.
-- Probing initializes CUDA in the calling backend (never in the postmaster).
CREATE FUNCTION gpujoin_device_info(
	OUT device int,
	OUT name text,
	OUT total_memory bigint,
	OUT free_memory bigint,
	OUT compute_capability text,
	OUT multiprocessors int,
	OUT driver_version text,
	OUT runtime_version text,
	OUT kernels text)
RETURNS record
AS 'MODULE_PATHNAME', 'gpujoin_device_info'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

-- EXPLAIN a query and return its lines, for tests (like HypoPG's do_explain).
-- COSTS OFF keeps the plan text stable; with_analyze adds ANALYZE with TIMING and SUMMARY
-- off, so the output does not depend on the machine.
CREATE FUNCTION gpujoin_explain(query text, with_analyze boolean DEFAULT false)
RETURNS SETOF text
LANGUAGE plpgsql VOLATILE STRICT
AS $$
DECLARE
	line text;
BEGIN
	FOR line IN EXECUTE format('EXPLAIN (COSTS OFF%s) %s',
							   CASE WHEN with_analyze THEN ', ANALYZE, TIMING OFF, SUMMARY OFF' ELSE '' END,
							   query)
	LOOP
		RETURN NEXT line;
	END LOOP;
END
$$;
