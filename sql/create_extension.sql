-- CREATE EXTENSION is all it takes: every new session of the database
-- loads gpujoin and plans GPU joins; DROP EXTENSION puts the database's
-- settings back as they were, other libraries in the same setting
-- included; a CREATE EXTENSION rolled back changes nothing.  (Run in a
-- cluster without gpujoin in shared_preload_libraries, as test/run's
-- pg_regress stage is: there no database setting is needed.)
CREATE DATABASE gpujoin_setup;
\c gpujoin_setup
-- the database's own settings, and what a new session loads
CREATE VIEW db_settings AS
	SELECT coalesce(array_to_string(setconfig, '; '), '(none)') AS settings
	FROM pg_db_role_setting
	WHERE setdatabase = (SELECT oid FROM pg_database WHERE datname = current_database()) AND setrole = 0
	UNION ALL SELECT '(none)'
	WHERE NOT EXISTS (SELECT FROM pg_db_role_setting
					  WHERE setdatabase = (SELECT oid FROM pg_database WHERE datname = current_database()) AND setrole = 0);
CREATE TABLE a AS SELECT g AS k, g % 7 AS v FROM generate_series(1, 2000) g;
CREATE TABLE b AS SELECT g * 2 AS k FROM generate_series(1, 1000) g;
ANALYZE a, b;
\set join_query 'SELECT count(*), sum(v) FROM a JOIN b USING (k)'
\set force 'SET gpujoin.device = cpu; SET gpujoin.explain_device = off; SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_nestloop = off;'

-- before: no setting, no GPU join (gpujoin.* are mere placeholders)
SELECT * FROM db_settings;
:force
EXPLAIN (COSTS OFF) :join_query;

-- CREATE EXTENSION: one NOTICE; a new session plans a GPU join
CREATE EXTENSION gpujoin;
SELECT * FROM db_settings;
SELECT had_setting, before, after FROM gpujoin_database_settings;
\c gpujoin_setup
SHOW session_preload_libraries;
:force
EXPLAIN (COSTS OFF) :join_query;
:join_query;

-- DROP EXTENSION: the setting is gone, a new session is as before
DROP EXTENSION gpujoin;
SELECT * FROM db_settings;
\c gpujoin_setup
SHOW session_preload_libraries;
:force
EXPLAIN (COSTS OFF) :join_query;

-- a CREATE EXTENSION rolled back changes nothing, and says nothing
BEGIN;
CREATE EXTENSION gpujoin;
SELECT * FROM db_settings;
ROLLBACK;
SELECT * FROM db_settings;

-- another library in the database's setting survives CREATE and DROP,
-- twice over
ALTER DATABASE gpujoin_setup SET session_preload_libraries = 'auto_explain';
CREATE EXTENSION gpujoin;
SELECT * FROM db_settings;
\c gpujoin_setup
SHOW session_preload_libraries;
:force
EXPLAIN (COSTS OFF) :join_query;
DROP EXTENSION gpujoin;
SELECT * FROM db_settings;
CREATE EXTENSION gpujoin;
DROP EXTENSION gpujoin;
SELECT * FROM db_settings;
\c gpujoin_setup
SHOW session_preload_libraries;

-- the setting changed after CREATE EXTENSION: DROP takes only gpujoin out
CREATE EXTENSION gpujoin;
ALTER DATABASE gpujoin_setup SET session_preload_libraries = 'auto_explain', 'gpujoin', 'pg_stat_statements';
DROP EXTENSION gpujoin;
SELECT * FROM db_settings;

-- the setting names gpujoin already: CREATE and DROP leave it alone
ALTER DATABASE gpujoin_setup SET session_preload_libraries = '$libdir/gpujoin';
CREATE EXTENSION gpujoin;
SELECT count(*) AS recorded_changes FROM gpujoin_database_settings;
DROP EXTENSION gpujoin;
SELECT * FROM db_settings;

-- a DROP rolled back (in a savepoint) keeps the extension and its setting
ALTER DATABASE gpujoin_setup RESET session_preload_libraries;
BEGIN;
CREATE EXTENSION gpujoin;
SAVEPOINT s;
DROP EXTENSION gpujoin;
ROLLBACK TO s;
COMMIT;
SELECT * FROM db_settings;
DROP EXTENSION gpujoin;
SELECT * FROM db_settings;

\c contrib_regression
DROP DATABASE gpujoin_setup;
