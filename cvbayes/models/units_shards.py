"""VB for acoustic units on shards of a corpus across Dask workers (as models/hmm_shards.py does for the HMM).

The E-step (`units_structures.unit_expectations`) is a pure function of the tables and the frames whose results
add up over utterances, so a corpus cut into shards of whole utterances gives the same statistics shard
by shard.  `ShardedUnits` is the structure of `schedules.batch`: the tables and the penalty are built
where the fit runs, every pass sends only the tables to the workers and gets back the summed
statistics and log Z (`cvbayes.models.shards`: the shards, their files and the reduction tree the HMM's
use); same trajectory as one process up to the order of the floating-point sums.
"""
from ..core.units import ZeroProbabilityError
from .shards import ShardedBatch, Shards, limit_threads, opened
from .units_structures import UnitCounts, Utterances, presegmented, unit_expectations


def _shard_expectations(token, shard, model, tables, first_utterance):
    """One shard's E-step: (UnitCounts, sum of log Z) under ``tables``; ``model`` is (family, n_states,
    presegment)."""
    limit_threads()
    family, n_states, presegment = model
    data = opened(token, shard, model, "units", lambda _, corpus: Utterances(corpus, presegmented(corpus, presegment)))
    try:
        counts, log_z = unit_expectations(family, n_states, tables, data)
    except ZeroProbabilityError as error:
        raise ZeroProbabilityError(f"in the shard starting at utterance {first_utterance}: {error}") from None
    return tuple(counts), float(log_z.sum())


class ShardedUnits(ShardedBatch):
    """`units_structures.BatchUnits` with its E-step summed over the shards of a Dask client (VB)."""

    def __init__(self, local, client, n_shards=None):
        model = local.model
        super().__init__(local, Shards(local.data.corpus, (model.family, model.n_states, model.presegment), client,
                                       n_shards), _shard_expectations)

    def expectations(self, tables):
        counts, log_z = super().expectations(tables)
        return UnitCounts(*counts), log_z
