/*-------------------------------------------------------------------------
 *
 * setup.c
 *	  What CREATE EXTENSION gpujoin changes in its database, and how DROP
 *	  EXTENSION gpujoin undoes it
 *
 * gpujoin's planner hook works in a session only once the library is
 * loaded there.  So that CREATE EXTENSION is all it takes, the extension's
 * script calls gpujoin_setup_database(), which adds gpujoin to the
 * database's session_preload_libraries (ALTER DATABASE ... SET, as a DBA
 * would for auto_explain), so that every new session of the database loads
 * it, unless every session loads it already (shared_preload_libraries, or
 * the database's setting names it).  Where the database has no setting of
 * its own, the new one starts from the server's (the configuration files'),
 * so that the libraries it names still load.  One NOTICE says what
 * changed (at commit: CREATE EXTENSION runs its script with
 * client_min_messages at WARNING, and a change rolled back is none), and
 * the script keeps it in the extension's table gpujoin_database_settings.
 *
 * DROP EXTENSION gpujoin undoes it, in the session that drops it, which has
 * the library loaded as every new session of the database has.  Its object
 * access hook sees the extension's objects go, members first: the table,
 * whose row it reads while the table still exists, then the extension
 * itself, when it puts the setting back as it was before CREATE EXTENSION
 * (no setting of the database's own, or the value it had).  If the setting
 * was changed since, it only takes gpujoin out of it.  Both happen in the
 * command's transaction, so a CREATE or DROP that fails or is rolled back
 * changes nothing.  gpujoin in shared_preload_libraries needs no database
 * setting, and remains the way to use gpujoin.max_gpu_backends (shared
 * memory).
 *
 * A DROP EXTENSION in a session that has not loaded the library (one opened
 * before CREATE EXTENSION, or whose role or connection overrides
 * session_preload_libraries) has no hook to run: the setting stays, and
 * new sessions keep loading gpujoin, which plans GPU joins without the
 * extension's functions.  The README says to LOAD 'gpujoin' first then.
 *
 * IDENTIFICATION
 *	  src/setup.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/indexing.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_class.h"
#include "catalog/pg_db_role_setting.h"
#include "catalog/pg_extension.h"
#include "commands/dbcommands.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "gpujoin.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "storage/proc.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/varlena.h"

#define GPUJOIN_PRELOAD_SETTING		"session_preload_libraries"
#define GPUJOIN_SETTINGS_TABLE		"gpujoin_database_settings"

PG_FUNCTION_INFO_V1(gpujoin_setup_database);

static object_access_hook_type prev_object_access_hook = NULL;

/*
 * The row of gpujoin_database_settings read while a DROP EXTENSION deletes
 * the table, for the extension's own deletion (in the same transaction,
 * lxid) to act on; in TopMemoryContext
 */
typedef struct SetupRecord
{
	LocalTransactionId lxid;
	bool		had_setting;	/* the database had a setting of its own */
	char	   *before;			/* its value then (had_setting) */
	char	   *after;			/* the value CREATE EXTENSION set */
} SetupRecord;

static SetupRecord *drop_record = NULL;

/*
 * The NOTICEs that say what changed, sent when the transaction commits:
 * CREATE EXTENSION runs its script with client_min_messages at WARNING, and
 * a change rolled back is no change.  In TopMemoryContext.
 */
typedef struct SetupNotice
{
	SubTransactionId subid;		/* the subtransaction that made the change */
	char	   *message;
	char	   *detail;			/* or NULL */
} SetupNotice;

static List *pending_notices = NIL;

/*
 * The database's own value of a setting (ALTER DATABASE ... SET, for all
 * roles), or NULL when it has none
 */
static char *
DatabaseSetting(const char *name)
{
	Relation	rel;
	ScanKeyData keys[2];
	SysScanDesc scan;
	HeapTuple	tuple;
	char	   *result = NULL;
	size_t		namelen = strlen(name);

	rel = table_open(DbRoleSettingRelationId, AccessShareLock);
	ScanKeyInit(&keys[0], Anum_pg_db_role_setting_setdatabase,
				BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(MyDatabaseId));
	ScanKeyInit(&keys[1], Anum_pg_db_role_setting_setrole,
				BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(InvalidOid));
	scan = systable_beginscan(rel, DbRoleSettingDatidRolidIndexId, true, NULL, 2, keys);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
	{
		bool		isnull;
		Datum		config = heap_getattr(tuple, Anum_pg_db_role_setting_setconfig,
										  RelationGetDescr(rel), &isnull);

		if (!isnull)
		{
			Datum	   *items;
			bool	   *nulls;
			int			nitems;

			deconstruct_array(DatumGetArrayTypeP(config), TEXTOID, -1, false,
							  TYPALIGN_INT, &items, &nulls, &nitems);
			for (int i = 0; i < nitems; i++)
			{
				char	   *item;

				if (nulls[i])
					continue;
				item = TextDatumGetCString(items[i]);
				if (strncmp(item, name, namelen) == 0 && item[namelen] == '=')
					result = pstrdup(item + namelen + 1);
			}
		}
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return result;
}

/* Say what changed, at commit (SetupXactCallback) */
static void
AddNotice(const char *message, const char *detail)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(TopMemoryContext);
	SetupNotice *notice = palloc(sizeof(SetupNotice));

	notice->subid = GetCurrentSubTransactionId();
	notice->message = pstrdup(message);
	notice->detail = detail ? pstrdup(detail) : NULL;
	pending_notices = lappend(pending_notices, notice);
	MemoryContextSwitchTo(oldcxt);
}

/* Forget the notices of subtransaction subid and those under it, or all */
static void
DropNotices(SubTransactionId subid)
{
	List	   *keep = NIL;
	ListCell   *lc;
	MemoryContext oldcxt = MemoryContextSwitchTo(TopMemoryContext);

	foreach(lc, pending_notices)
	{
		SetupNotice *notice = lfirst(lc);

		if (subid != InvalidSubTransactionId && notice->subid < subid)
			keep = lappend(keep, notice);
		else
		{
			pfree(notice->message);
			if (notice->detail)
				pfree(notice->detail);
			pfree(notice);
		}
	}
	list_free(pending_notices);
	pending_notices = keep;
	MemoryContextSwitchTo(oldcxt);
}

static void
SetupXactCallback(XactEvent event, void *arg)
{
	ListCell   *lc;

	if (pending_notices == NIL)
		return;
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
		case XACT_EVENT_PRE_PREPARE:
			foreach(lc, pending_notices)
			{
				SetupNotice *notice = lfirst(lc);

				ereport(NOTICE,
						(errmsg_internal("%s", notice->message),
						 notice->detail ? errdetail_internal("%s", notice->detail) : 0));
			}
			DropNotices(InvalidSubTransactionId);
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			DropNotices(InvalidSubTransactionId);
			break;
		default:
			break;
	}
}

static void
SetupSubXactCallback(SubXactEvent event, SubTransactionId mySubid,
					 SubTransactionId parentSubid, void *arg)
{
	if (event == SUBXACT_EVENT_ABORT_SUB && pending_notices != NIL)
		DropNotices(mySubid);
}

/* The server's value of session_preload_libraries: its configuration files' */
static char *
ServerPreloadSetting(void)
{
	MemoryContext caller = CurrentMemoryContext;
	char	   *result = pstrdup("");

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "gpujoin: SPI_connect failed");
	if (SPI_execute("SELECT setting FROM pg_catalog.pg_file_settings "
					"WHERE name = '" GPUJOIN_PRELOAD_SETTING "' AND applied",
					true, 1) != SPI_OK_SELECT)
		elog(ERROR, "gpujoin: could not read pg_file_settings");
	if (SPI_processed > 0)
	{
		char	   *value = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);

		if (value != NULL)
			result = MemoryContextStrdup(caller, value);
	}
	SPI_finish();
	return result;
}

/* The libraries a list setting names, as its own parser splits them */
static List *
SplitLibraries(const char *value)
{
	char	   *copy = pstrdup(value);
	List	   *names = NIL;

	if (!SplitGUCList(copy, ',', &names))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid list syntax in setting \"%s\": %s", GPUJOIN_PRELOAD_SETTING, value)));
	return names;
}

/* Does a library name in a preload list name gpujoin ("$libdir/gpujoin.so" ...)? */
static bool
IsGpuJoinLibrary(const char *name)
{
	const char *base = strrchr(name, '/');
	size_t		len;

	base = base ? base + 1 : name;
	len = strlen(base);
	if (len > strlen(DLSUFFIX) && strcmp(base + len - strlen(DLSUFFIX), DLSUFFIX) == 0)
		len -= strlen(DLSUFFIX);
	return len == strlen("gpujoin") && strncmp(base, "gpujoin", len) == 0;
}

static bool
ListLoadsGpuJoin(List *names)
{
	ListCell   *lc;

	foreach(lc, names)
	{
		if (IsGpuJoinLibrary(lfirst(lc)))
			return true;
	}
	return false;
}

/*
 * Set the database's session_preload_libraries to these libraries (RESET
 * when names is NIL and reset is asked for), as ALTER DATABASE ... SET
 * would; the new value is the list as the server writes it
 */
static void
SetDatabasePreload(List *names, bool reset)
{
	VariableSetStmt *stmt = makeNode(VariableSetStmt);
	ListCell   *lc;

	stmt->name = GPUJOIN_PRELOAD_SETTING;
	stmt->kind = reset ? VAR_RESET : VAR_SET_VALUE;
	foreach(lc, names)
	{
		A_Const    *arg = makeNode(A_Const);

		arg->val.sval.type = T_String;
		arg->val.sval.sval = lfirst(lc);
		arg->location = -1;
		stmt->args = lappend(stmt->args, arg);
	}
	AlterSetting(MyDatabaseId, InvalidOid, stmt);
}

/*
 * gpujoin_setup_database(OUT had_setting, OUT before, OUT after): make every
 * new session of the database load gpujoin, unless every session does
 * already; one NOTICE says what changed.  Returns no row when nothing did,
 * else one row for gpujoin_database_settings.  Called by the extension's
 * script only (CREATE EXTENSION, whose caller must be a superuser).
 */
Datum
gpujoin_setup_database(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	const char *dbname = get_database_name(MyDatabaseId);
	char	   *shared = GetConfigOptionByName("shared_preload_libraries", NULL, false);
	char	   *before;
	char	   *start;
	List	   *names;
	char	   *after;
	Datum		values[3];
	bool		nulls[3] = {false, false, false};

	if (!creating_extension)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("gpujoin_setup_database() is called by CREATE EXTENSION gpujoin only")));
	InitMaterializedSRF(fcinfo, 0);

	if (ListLoadsGpuJoin(SplitLibraries(shared)))
	{
		AddNotice(psprintf("gpujoin: every session loads gpujoin (shared_preload_libraries); no setting of database \"%s\" changed",
						   dbname), NULL);
		PG_RETURN_VOID();
	}

	before = DatabaseSetting(GPUJOIN_PRELOAD_SETTING);
	start = before ? before : ServerPreloadSetting();
	names = SplitLibraries(start);
	if (ListLoadsGpuJoin(names))
	{
		AddNotice(psprintf("gpujoin: every new session of database \"%s\" loads gpujoin already (%s %s); no setting changed",
						   dbname, before ? "its" : "the server's", GPUJOIN_PRELOAD_SETTING), NULL);
		PG_RETURN_VOID();
	}

	names = lappend(names, "gpujoin");
	SetDatabasePreload(names, false);
	CommandCounterIncrement();
	after = DatabaseSetting(GPUJOIN_PRELOAD_SETTING);
	AddNotice(psprintf("gpujoin: new sessions of database \"%s\" will load gpujoin: its %s is now \"%s\"",
					   dbname, GPUJOIN_PRELOAD_SETTING, after),
			  before ? psprintf("It was \"%s\". DROP EXTENSION gpujoin puts it back.", before) :
			  psprintf("The database had no setting of its own%s. DROP EXTENSION gpujoin removes it.",
					   start[0] != '\0' ? psprintf(" (the server's is \"%s\")", start) : ""));

	values[0] = BoolGetDatum(before != NULL);
	values[1] = before ? CStringGetTextDatum(before) : (Datum) 0;
	nulls[1] = (before == NULL);
	values[2] = CStringGetTextDatum(after);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	PG_RETURN_VOID();
}

/*
 * The setup table is being dropped (as a member of the extension, so the
 * extension goes next): keep its row for the extension's deletion
 */
static void
ReadSetupRecord(Oid relid)
{
	Relation	rel = table_open(relid, AccessShareLock);
	TableScanDesc scan;
	TupleTableSlot *slot;
	SetupRecord *record = NULL;

	scan = table_beginscan(rel, GetLatestSnapshot(), 0, NULL);
	slot = table_slot_create(rel, NULL);
	if (RelationGetDescr(rel)->natts == 3 &&
		table_scan_getnextslot(scan, ForwardScanDirection, slot))
	{
		bool		isnull;
		Datum		had = slot_getattr(slot, 1, &isnull);
		Datum		before;
		Datum		after;

		record = MemoryContextAllocZero(TopMemoryContext, sizeof(SetupRecord));
		record->lxid = GpuJoinLocalXid(MyProc);
		record->had_setting = !isnull && DatumGetBool(had);
		before = slot_getattr(slot, 2, &isnull);
		if (!isnull)
			record->before = MemoryContextStrdup(TopMemoryContext, TextDatumGetCString(before));
		after = slot_getattr(slot, 3, &isnull);
		if (!isnull)
			record->after = MemoryContextStrdup(TopMemoryContext, TextDatumGetCString(after));
	}
	ExecDropSingleTupleTableSlot(slot);
	table_endscan(scan);
	table_close(rel, AccessShareLock);

	if (drop_record != NULL)
	{
		if (drop_record->before)
			pfree(drop_record->before);
		if (drop_record->after)
			pfree(drop_record->after);
		pfree(drop_record);
	}
	drop_record = record;
}

/*
 * The extension is being dropped: undo what its CREATE EXTENSION changed,
 * as drop_record says
 */
static void
UndoSetup(void)
{
	SetupRecord *record = drop_record;
	const char *dbname = get_database_name(MyDatabaseId);
	char	   *now;
	List	   *names = NIL;
	ListCell   *lc;

	drop_record = NULL;
	if (record == NULL || record->lxid != GpuJoinLocalXid(MyProc) || record->after == NULL)
		return;					/* CREATE EXTENSION changed nothing */

	now = DatabaseSetting(GPUJOIN_PRELOAD_SETTING);
	if (now != NULL && strcmp(now, record->after) == 0)
	{
		/* as CREATE EXTENSION left it: back to what it was */
		if (record->had_setting)
			SetDatabasePreload(SplitLibraries(record->before), false);
		else
			SetDatabasePreload(NIL, true);
		AddNotice(record->had_setting ?
				  psprintf("gpujoin: new sessions of database \"%s\" will not load gpujoin: its %s is \"%s\" again",
						   dbname, GPUJOIN_PRELOAD_SETTING, record->before) :
				  psprintf("gpujoin: new sessions of database \"%s\" will not load gpujoin: it has no %s of its own again",
						   dbname, GPUJOIN_PRELOAD_SETTING), NULL);
	}
	else if (now != NULL && ListLoadsGpuJoin(SplitLibraries(now)))
	{
		/* changed since: take gpujoin out, leave the rest */
		foreach(lc, SplitLibraries(now))
		{
			if (!IsGpuJoinLibrary(lfirst(lc)))
				names = lappend(names, lfirst(lc));
		}
		SetDatabasePreload(names, names == NIL);
		AddNotice(psprintf("gpujoin: new sessions of database \"%s\" will not load gpujoin: it was taken out of its %s, which was changed after CREATE EXTENSION",
						   dbname, GPUJOIN_PRELOAD_SETTING), NULL);
	}
	if (record->before)
		pfree(record->before);
	pfree(record->after);
	pfree(record);
}

/*
 * object_access_hook: on DROP of the setup table (a member of the extension)
 * and then of the extension itself
 */
static void
SetupObjectAccess(ObjectAccessType access, Oid classId, Oid objectId,
				  int subId, void *arg)
{
	if (prev_object_access_hook)
		prev_object_access_hook(access, classId, objectId, subId, arg);
	if (access != OAT_DROP)
		return;

	if (classId == RelationRelationId && subId == 0)
	{
		char	   *relname = get_rel_name(objectId);

		if (relname != NULL && strcmp(relname, GPUJOIN_SETTINGS_TABLE) == 0 &&
			OidIsValid(getExtensionOfObject(RelationRelationId, objectId)) &&
			getExtensionOfObject(RelationRelationId, objectId) == get_extension_oid("gpujoin", true))
			ReadSetupRecord(objectId);
	}
	else if (classId == ExtensionRelationId && drop_record != NULL &&
			 objectId == get_extension_oid("gpujoin", true))
		UndoSetup();
}

/*
 * Install the object access hook, chaining any hook loaded before us
 */
void
GpuJoinInitSetup(void)
{
	prev_object_access_hook = object_access_hook;
	object_access_hook = SetupObjectAccess;
	RegisterXactCallback(SetupXactCallback, NULL);
	RegisterSubXactCallback(SetupSubXactCallback, NULL);
}
