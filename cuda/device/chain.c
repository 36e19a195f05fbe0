/*-------------------------------------------------------------------------
 *
 * chain.c
 *	  Chains of joins: one outer chunk through the inner sides of several
 *	  levels, each level's matches handed to the next where the kernels
 *	  keep them (CHAINS OF JOINS in gpujoin_kernels.h)
 *
 * Plain C over any GjKernels table, like spread.c: the levels are
 * contexts of that table, and the chain only calls their count and
 * retrieve_device (gj_chain_hand_down), or the table's hand_down, which
 * the gpujoin service's clients have: the service runs the same step on
 * its own contexts.  What stays on the device is the rounds: a level's
 * matches, their row numbers and the columns they carry, which the next
 * level's count copies from device memory to device memory.
 *
 * The walk is depth first: the deepest level that still has matches to
 * hand down gives its next round to the level below it, so that at most
 * one round per level is alive, and a level's round stays as it is until
 * every level below it has taken all it gave them (the twin's count copies
 * its chunk, CUDA's reads it from the device; either way, the round must
 * stay until that count is done, and the kernels' contract keeps a round
 * until the next call on its context).
 *
 * IDENTIFICATION
 *	  cuda/device/chain.c
 *
 *-------------------------------------------------------------------------
 */
#include <string.h>

#include "common.h"
#include "gpujoin_kernels.h"

/*
 * Check and record a chain of nlevels contexts of kernels, each made with
 * specs[k] and built on its inner side; key_columns[k] (k >= 1) the outer
 * column level k probes with, packed as packs[k] says (packs NULL: every
 * such column a normalized key) (CHAINS OF JOINS)
 */
GjStatus
gj_chain_init(GjChain *chain, const GjKernels *kernels, int nlevels,
			  GjContext *const *levels, const GjJoinSpec *specs,
			  const int32_t *key_columns, const GjKeyPack *packs, GjError *err)
{
	memset(chain, 0, sizeof(*chain));
	if (kernels == NULL || kernels->count == NULL || kernels->retrieve == NULL)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"A chain of joins needs a kernel table that counts and retrieves.");
	if (nlevels < 1 || nlevels > GJ_MAX_LEVELS)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"A chain of joins has 1 to %d levels, not %d.",
							GJ_MAX_LEVELS, nlevels);
	for (int k = 0; k < nlevels; k++)
	{
		const GjJoinSpec *spec = &specs[k];

		if (levels[k] == NULL)
			return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
								"Level %d of a chain of joins has no context.", k);
		if (spec->variant != GJ_VARIANT_NPHJ && spec->variant != GJ_VARIANT_PHJ &&
			spec->variant != GJ_VARIANT_SMJ)
			return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
								"Level %d of a chain of joins is not an equi-join (NPHJ, PHJ or SMJ).", k);
		if (k < nlevels - 1 && !spec->row_ids)
			return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
								"Level %d of a chain of joins hands its matches down, so it needs row_ids.", k);
		chain->levels[k] = levels[k];
		chain->ncolumns[k] = spec->outer_ncolumns;
		chain->inner_ncolumns[k] = spec->inner_ncolumns;
		if (k == 0)
			continue;

		/* what level k - 1 hands down: its outer and inner columns, its
		 * inner row numbers */
		{
			const GjJoinSpec *up = &specs[k - 1];
			int			n = up->outer_ncolumns + up->inner_ncolumns + 1;
			int			key = key_columns[k];

			if (n > GJ_MAX_COLUMNS || spec->outer_ncolumns != n)
				return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
									"Level %d of a chain of joins takes %d outer columns, but level %d hands down %d (at most %d).",
									k, spec->outer_ncolumns, k - 1, n, GJ_MAX_COLUMNS);
			for (int c = 0; c < n; c++)
			{
				int32_t		width;

				if (c < up->outer_ncolumns)
					width = up->outer_widths[c];
				else if (c < up->outer_ncolumns + up->inner_ncolumns)
					width = up->inner_widths[c - up->outer_ncolumns];
				else
					width = (int32_t) sizeof(GjRowId);
				if (spec->outer_widths[c] != width)
					return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
										"Outer column %d of level %d of a chain of joins is %d bytes wide, but level %d hands down %d.",
										c, k, spec->outer_widths[c], k - 1, width);
			}
			if (packs != NULL && packs[k].width != 0)
			{
				const GjKeyPack *pack = &packs[k];

				/* the width and bits pack_keys takes; then the column's */
				GJ_TRY(gj_check_pack(NULL, pack->width, 0, pack->bits, err));
				if (key < 0 || key >= n || spec->outer_widths[key] != pack->width)
					return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
										"Level %d of a chain of joins packs its key from outer column %d, which is not an integer column of %d bytes of its %d.",
										k, key, pack->width, n);
				if (kernels->pack_keys == NULL && kernels->hand_down == NULL)
					return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
										"The %s kernels cannot pack a chain's keys.", kernels->name);
				chain->packs[k] = *pack;
			}
			else if (key < 0 || key >= n || spec->outer_widths[key] != (int32_t) sizeof(uint64_t))
				return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
									"Level %d of a chain of joins probes with outer column %d, which is not an 8-byte column of its %d.",
									k, key, n);
			chain->key_columns[k] = key;
		}
	}
	chain->kernels = kernels;
	chain->nlevels = nlevels;
	chain->depth = -1;
	return GJ_OK;
}

/*
 * Count one chunk at level 0; the chain's matches of the previous chunk
 * are forgotten
 */
GjStatus
gj_chain_count(GjChain *chain, const GjBatch *chunk, GjError *err)
{
	int64_t		nmatches = 0;

	if (chain->kernels == NULL)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"gj_chain_count was called on a chain gj_chain_init did not accept.");
	chain->depth = -1;
	GJ_TRY(chain->kernels->count(chain->levels[0], chunk, &nmatches, err));
	chain->nmatches[0] = nmatches;
	chain->next[0] = 0;
	chain->depth = 0;
	chain->last_taken = false;
	chain->chunks[0]++;
	chain->rows_in[0] += chunk->nrows;
	chain->rows_out[0] += nmatches;
	return GJ_OK;
}

/*
 * The round of from's matches that starts at first, counted by to with
 * the columns it carries, its row numbers and the key it probes with
 */
GjStatus
gj_chain_hand_down(const GjKernels *kernels, GjContext *from, int64_t first,
				   int nouter, int ninner, bool on_host, GjContext *to, int key,
				   const GjKeyPack *pack, GjColumn *columns, int64_t *handed,
				   int64_t *nmatches, GjError *err)
{
	GjMatchRound round;
	GjBatch		batch;

	*handed = *nmatches = 0;
	if (on_host || kernels->retrieve_device == NULL)
		GJ_TRY(kernels->retrieve(from, first, &round, err));
	else
		GJ_TRY(kernels->retrieve_device(from, first, &round, err));
	*handed = round.nmatches;

	for (int c = 0; c < nouter; c++)
	{
		columns[c].values = round.outer_values[c];
		columns[c].nulls = round.outer_nulls[c];
	}
	for (int c = 0; c < ninner; c++)
	{
		columns[nouter + c].values = round.inner_values[c];
		columns[nouter + c].nulls = round.inner_nulls[c];
	}
	columns[nouter + ninner].values = round.inner_rows;
	columns[nouter + ninner].nulls = NULL;

	memset(&batch, 0, sizeof(batch));
	batch.nrows = round.nmatches;
	batch.keys = (const uint64_t *) columns[key].values;
	batch.nulls = columns[key].nulls;
	if (pack != NULL && pack->width != 0 && round.nmatches > 0)
	{
		if (kernels->pack_keys == NULL)
			return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
								"The %s kernels cannot pack a chain's keys.", kernels->name);
		GJ_TRY(kernels->pack_keys(to, columns[key].values, pack->width, round.nmatches,
								  pack->bits, pack->exact, &batch.keys, err));
	}
	batch.columns = columns;
	batch.row_numbers = round.outer_rows;
	return kernels->count(to, &batch, nmatches, err);
}

/*
 * Hand a round of level k's matches down: level k + 1 counts them, in one
 * call of the table where it has one (GjKernels.hand_down)
 */
static GjStatus
HandDown(GjChain *chain, int k, GjError *err)
{
	const GjKernels *kernels = chain->kernels;
	int64_t		handed = 0;
	int64_t		nmatches = 0;

	if (kernels->hand_down != NULL && !chain->on_host)
		GJ_TRY(kernels->hand_down(chain->levels[k], chain->next[k], chain->levels[k + 1],
								  chain->key_columns[k + 1], &chain->packs[k + 1],
								  &handed, &nmatches, err));
	else
		GJ_TRY(gj_chain_hand_down(kernels, chain->levels[k], chain->next[k],
								  chain->ncolumns[k], chain->inner_ncolumns[k], chain->on_host,
								  chain->levels[k + 1], chain->key_columns[k + 1],
								  &chain->packs[k + 1], chain->columns, &handed, &nmatches,
								  err));
	chain->next[k] += handed;
	chain->nmatches[k + 1] = nmatches;
	chain->next[k + 1] = 0;
	chain->depth = k + 1;
	chain->chunks[k + 1]++;
	chain->rows_in[k + 1] += handed;
	chain->rows_out[k + 1] += nmatches;
	return GJ_OK;
}

/*
 * Leave the last level with its next counted chunk that has matches, and
 * their number in *nmatches; 0 once the chain's chunk has no more
 */
GjStatus
gj_chain_next(GjChain *chain, int64_t *nmatches, GjError *err)
{
	int			last = chain->nlevels - 1;

	*nmatches = 0;
	if (chain->kernels == NULL || chain->depth < 0)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"gj_chain_next was called before gj_chain_count.");
	if (last == 0)
	{
		if (!chain->last_taken)
			*nmatches = chain->nmatches[0];
		chain->last_taken = true;
		return GJ_OK;
	}
	for (;;)
	{
		/* the deepest level above the last with matches not handed down */
		int			k = chain->depth < last ? chain->depth : last - 1;

		while (k >= 0 && chain->next[k] >= chain->nmatches[k])
			k--;
		if (k < 0)
			return GJ_OK;
		GJ_TRY(HandDown(chain, k, err));
		if (k + 1 == last && chain->nmatches[last] > 0)
		{
			*nmatches = chain->nmatches[last];
			return GJ_OK;
		}
	}
}
