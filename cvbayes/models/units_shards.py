"""VB for acoustic units on shards of a corpus across Dask workers (as models/hmm_shards.py does for the HMM).

The E-step (`units_structures.unit_expectations`) is a pure function of the tables and the frames whose results
add up over utterances, so a corpus cut into shards of whole utterances gives the same statistics shard
by shard.  `ShardedUnits` is the structure of `schedules.batch`: the tables and the penalty are built
where the fit runs, every pass sends only the tables to the workers and gets back the summed
statistics and log Z (a tree reduction, the same tree as hmm_shards'); same trajectory as one process
up to the order of the floating-point sums.  Shards are saved once per fit as uncompressed corpus files
that the workers memory-map (in ``$CVBAYES_SHARED_DIR`` when the workers are on other machines).
"""
import os
import tempfile
import uuid
import weakref

import numpy as np

from ..core.units import ZeroProbabilityError
from .hmm_shards import _clean_up, _limit_threads, _opened, shard_bounds, tree_sum
from .units_structures import UnitCounts, Utterances, unit_expectations


def _shard_expectations(token, path, model, tables, first_utterance):
    """One shard's E-step: (UnitCounts, sum of log Z) under ``tables``; ``model`` is (family, n_states)."""
    _limit_threads()
    family, n_states = model
    data = _opened(token, path, model, "units", lambda _, corpus: Utterances(corpus))
    try:
        counts, log_z = unit_expectations(family, n_states, tables, data)
    except ZeroProbabilityError as error:
        raise ZeroProbabilityError(f"in the shard starting at utterance {first_utterance}: {error}") from None
    return tuple(counts), float(log_z.sum())


class ShardedUnits:
    """`units_structures.BatchUnits` with its E-step summed over the shards of a Dask client (VB)."""

    def __init__(self, local, client, n_shards=None):
        self.local = local
        self.client = client
        self.token = uuid.uuid4().hex
        if n_shards is None:
            n_shards = len(client.scheduler_info()["workers"])
        if int(n_shards) != n_shards or n_shards < 1:
            raise ValueError(f"n_shards must be a positive integer, got {n_shards}")
        corpus = local.data.corpus
        self.bounds = shard_bounds(np.asarray(corpus.offsets), int(n_shards))
        self.folder = tempfile.mkdtemp(prefix="cvbayes-unit-shards-", dir=os.environ.get("CVBAYES_SHARED_DIR"))
        self._finalizer = weakref.finalize(self, _clean_up, client, self.token, self.folder)
        self.paths = []
        for s in range(self.bounds.shape[0] - 1):
            path = os.path.join(self.folder, f"shard-{s:05d}.npz")
            corpus[int(self.bounds[s]):int(self.bounds[s + 1])].save(path)
            self.paths.append(path)
        workers = sorted(client.scheduler_info()["workers"])
        self.homes = [workers[s % len(workers)] for s in range(len(self.paths))]
        self.model = client.scatter((local.model.family, local.model.n_states), broadcast=True, hash=False)

    def tables(self, statistics, rule):
        return self.local.tables(statistics, rule)

    def penalty(self, rule, statistics, tables):
        return self.local.penalty(rule, statistics, tables)

    def expectations(self, tables):
        client = self.client
        sent = client.scatter(tables, broadcast=True, hash=False)
        futures = [client.submit(_shard_expectations, self.token, path, self.model, sent, int(self.bounds[s]),
                                 workers=[self.homes[s]], allow_other_workers=True, pure=False)
                   for s, path in enumerate(self.paths)]
        counts, log_z = tree_sum(client.gather(futures))
        return UnitCounts(*counts), log_z

    def close(self):
        self._finalizer()
