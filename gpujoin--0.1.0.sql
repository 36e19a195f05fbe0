/* gpujoin--0.1.0.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION gpujoin" to load this file. \quit

-- Every new session of this database loads gpujoin (its planner hook), so
-- that CREATE EXTENSION is all it takes: gpujoin_setup_database() adds it to
-- the database's session_preload_libraries, unless every session loads it
-- already, and says so in a NOTICE.  What it changed is kept here, one row
-- (none when nothing changed), for DROP EXTENSION gpujoin to put the setting
-- back (src/setup.c).
CREATE TABLE gpujoin_database_settings (
	had_setting boolean NOT NULL,	-- the database had a session_preload_libraries of its own
	before text,					-- its value then
	after text NOT NULL				-- the value CREATE EXTENSION set
);
COMMENT ON TABLE gpujoin_database_settings IS
	'What CREATE EXTENSION gpujoin changed in this database''s session_preload_libraries; DROP EXTENSION gpujoin puts it back';
CREATE FUNCTION gpujoin_setup_database(OUT had_setting boolean, OUT before text, OUT after text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'gpujoin_setup_database'
LANGUAGE C VOLATILE;
INSERT INTO gpujoin_database_settings SELECT * FROM gpujoin_setup_database();
DROP FUNCTION gpujoin_setup_database();

-- The device gpujoin uses in this session, or one row saying there is none.
-- Probing initializes CUDA in the calling backend (never in the postmaster),
-- once gpujoin.max_gpu_backends allows it.  gpu_backends: the backends that
-- use the GPU now (NULL unless gpujoin is in shared_preload_libraries).
CREATE FUNCTION gpujoin_device_info(
	OUT device int,
	OUT name text,
	OUT total_memory bigint,
	OUT free_memory bigint,
	OUT compute_capability text,
	OUT multiprocessors int,
	OUT driver_version text,
	OUT runtime_version text,
	OUT kernels text,
	OUT gpu_backends int,
	OUT service text,
	OUT service_requests bigint,
	OUT service_contexts bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'gpujoin_device_info'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

-- EXPLAIN a query and return its lines, for tests (like HypoPG's do_explain).
-- COSTS OFF keeps the plan text stable; with_analyze adds ANALYZE with TIMING, SUMMARY and
-- BUFFERS off (BUFFERS is on by default from PostgreSQL 18), so the output does not depend
-- on the machine.
CREATE FUNCTION gpujoin_explain(query text, with_analyze boolean DEFAULT false)
RETURNS SETOF text
LANGUAGE plpgsql VOLATILE STRICT
AS $$
DECLARE
	line text;
BEGIN
	FOR line IN EXECUTE format('EXPLAIN (COSTS OFF%s) %s',
							   CASE WHEN with_analyze THEN ', ANALYZE, TIMING OFF, SUMMARY OFF, BUFFERS OFF' ELSE '' END,
							   query)
	LOOP
		RETURN NEXT line;
	END LOOP;
END
$$;

-- Measure the cost model's constants on the device this session would use
-- (gpujoin.device): one row per gpujoin.* setting with the value measured,
-- to be set with ALTER SYSTEM SET.  Runs synthetic joins of `rows` rows a
-- side on every variant; superuser only (it occupies the device and its
-- results are meant for server-wide settings).
CREATE FUNCTION gpujoin_calibrate(rows int DEFAULT 16777216,
	OUT setting text, OUT value float8, OUT unit text, OUT measured_on text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'gpujoin_calibrate'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;
REVOKE ALL ON FUNCTION gpujoin_calibrate(int) FROM PUBLIC;

-- The variants the planner priced for each GPU join of a query, from
-- EXPLAIN (VERBOSE): one row per (join node, variant), with the model's
-- device and bus time and whether it was chosen.
CREATE FUNCTION gpujoin_explain_choice(query text)
RETURNS TABLE (node text, variant text, estimated_ms float8, chosen boolean)
LANGUAGE plpgsql VOLATILE STRICT
AS $$
DECLARE
	line text;
	item text;
	m text[];
BEGIN
	node := NULL;
	FOR line IN EXECUTE format('EXPLAIN (VERBOSE, COSTS OFF) %s', query)
	LOOP
		IF line ~ 'Custom Scan \(Gpu\w+Join\)' THEN
			node := substring(line FROM 'Custom Scan \((Gpu\w+Join)\)');
		ELSIF line ~ '^\s*Variants Considered: ' THEN
			FOREACH item IN ARRAY string_to_array(substring(line FROM 'Variants Considered: (.*)$'), ', ')
			LOOP
				m := regexp_match(item, '^(\S+) ([0-9.]+) ms( \(chosen)?');
				CONTINUE WHEN m IS NULL;	-- the note on device memory after the variants
				variant := m[1];
				estimated_ms := m[2]::float8;
				chosen := m[3] IS NOT NULL;
				RETURN NEXT;
			END LOOP;
		END IF;
	END LOOP;
END
$$;
