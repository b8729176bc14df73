"""The HMM's structures: its parts, a corpus laid out for the kernels, and the objects the schedules drive.

* `Parts`: the HMM as every structure sees it: its states, its transition part
  (`cvbayes.families.transitions`), its emission family, the tag dictionary's mask, and an occupancy
  strategy (the HDP-HMM's q(C = 0) products and hyperparameter updates, models/hdp.py; None for the
  finite HMM);
* `ChainData`: the corpus as the kernels read it (emissions, offsets, thread chunks), its E-step
  and the collapsed algorithms' starting local statistics (thesis footnote 5);
* `BatchChains`: the structure of `cvbayes.schedules.batch` (EM, VB);
* `SubchainSweep` and `TokenSweep`: the structures of `cvbayes.schedules.leave_one_out` (CVI-2 and
  CVI-3, CVI-1), `TokenSampler` that of `cvbayes.schedules.gibbs` (CGS);
* `Units`: whole sequences, or the subchains they are cut into (CVI-3, SVI, SCVI);
* `Minibatches`: the structure of `cvbayes.schedules.stochastic` (SVI, SCVI), with SCVI-3's
  boundary beliefs and, for the HDP-HMM, the running log q(C = 0) blocks.

Calls go one way: models/hmm.py builds these from its parts, and they call the kernels of
models/hmm_kernels.py, never the model.
"""
from typing import NamedTuple

import numpy as np

from ..core import rules
from ..core.statistics import DecayingCounts
from ..core.units import ZeroProbabilityError, equal_token_chunks
from ..chains.batch import batch_local_posteriors, random_chain_posteriors
from ..families.ops import state_stats, token_stats
from ..schedules import Minibatch
from .hmm_kernels import (GUARDED, NO_OCCUPANCY, START_ROW, STATIONARY, batch_expectations, chain_expectations,
                          factorised_transitions, gibbs_pass, hard_transitions, independent_boundaries,
                          subchain_pass, subchain_state, subchain_workspace, token_pass, token_state,
                          token_workspace, unit_totals)


class Parts(NamedTuple):
    """The HMM's parts (DESIGN.md): ``n_states`` K, ``transitions`` (the start and transition rows),
    ``family`` (the emissions), ``mask`` (the tag dictionary (W, K), (0, K) without one) and
    ``occupancy`` (None, or the HDP-HMM's strategy)."""

    n_states: int
    transitions: object
    family: object
    mask: np.ndarray
    occupancy: object = None

    def check_params(self, params):
        """A dict of parameters (``fit(init=...)``) checked; its start and transition rows as floats."""
        needed = {"startprob", "transmat", *self.family.param_names}
        missing = needed - set(params)
        if missing:
            raise ValueError(f"init dict is missing {', '.join(sorted(missing))}")
        startprob, transmat = self.transitions.check(params)
        return {**params, "startprob": startprob, "transmat": transmat}

    def tables_from_params(self, params, corpus):
        """(start, trans, emission table, its row log offsets) for the kernels: of given parameters,
        or (with "stats") of the posterior mean of those emission counts."""
        if "stats" in params:
            table, offset = self.family.table(params["stats"], rules.MEAN, corpus)
        else:
            table, offset = self.family.table_from_params(params, corpus)
        return params["startprob"], params["transmat"], table, offset


class ChainData:
    """A corpus laid out for the kernels: the family's index and features, the tag dictionary, the
    chains' offsets (sequences, or subchains with ``offsets``) and their chunks for the threads."""

    def __init__(self, parts, corpus, offsets=None):
        family = parts.family
        self.parts = parts
        self.corpus = corpus
        self.n_stats = family.n_stats()
        self.index = np.ascontiguousarray(family.index(corpus), dtype=np.int32)
        self.features = family.features(corpus)
        self.offsets = np.ascontiguousarray(corpus.offsets if offsets is None else offsets, dtype=np.int64)
        self.mask = parts.mask
        self.chunks = equal_token_chunks(self.offsets, parts.n_states ** 2)  # forward-backward: K^2 a token

    @property
    def n_chains(self):
        return self.offsets.shape[0] - 1

    def sequence_of(self):
        """The chain of every token (int64), for the token updates."""
        return np.repeat(np.arange(self.n_chains, dtype=np.int64), np.diff(self.offsets))

    def emissions(self):
        """The kernels' view of the emissions under the family's current prior (models/hmm_kernels.py)."""
        family = self.parts.family
        return family.code, family.prior_array(), self.mask, self.index, self.features

    def raise_if_bad(self, bad, what="sequence"):
        if bad < 0:
            return
        begin, end = self.offsets[bad], self.offsets[bad + 1]
        why = ("the tag dictionary admits no state for one of its tokens"
               if self.mask.shape[0] else "its emission probabilities are all zero")
        raise ZeroProbabilityError(
            f"{what} {bad} (tokens {begin}..{end - 1}) has zero probability under every "
            f"state path: {why}")

    def expectations(self, startprob, transmat, table, table_log_offset):
        """E-step: expected counts and sum_i log Z_i under one parameter table."""
        start_counts, trans_counts, stats, log_evidence, bad = batch_expectations(
            self.emissions(), startprob, transmat, table, table_log_offset, self.offsets, self.chunks, self.n_stats)
        self.raise_if_bad(bad)
        return (start_counts, trans_counts, stats), log_evidence

    def token_stats(self, marginals):
        return token_stats(self.parts.family.code, self.index, self.features, marginals, self.n_stats)

    def _random_chain(self, seed, keep_pairs):
        k = self.parts.n_states
        marginals = np.zeros((self.corpus.n_tokens, k), dtype=np.float32)
        local_pairs = np.zeros((self.n_chains if keep_pairs else 0, k, k), dtype=np.float32)
        start_counts, trans_counts = random_chain_posteriors(
            seed, self.offsets, k, self.mask, self.index, self.chunks, marginals, local_pairs)
        return marginals, local_pairs, start_counts, trans_counts

    def random_counts(self, seed):
        """Expected counts of the random local posteriors (thesis footnote 5)."""
        marginals, _, start_counts, trans_counts = self._random_chain(seed, keep_pairs=False)
        return start_counts, trans_counts, self.token_stats(marginals)

    def local_posteriors(self, start, seed, keep_pairs):
        """Starting local statistics of the collapsed algorithms (float32): every chain's marginals
        and, with ``keep_pairs``, its expected transitions; random (footnote 5, ``start`` None), or
        under the tables ``start`` of given parameters (`Parts.tables_from_params`)."""
        if start is None:
            marginals, local_pairs, _, _ = self._random_chain(seed, keep_pairs)
            return marginals, local_pairs
        k = self.parts.n_states
        marginals = np.zeros((self.corpus.n_tokens, k), dtype=np.float32)
        local_pairs = np.zeros((self.n_chains if keep_pairs else 0, k, k), dtype=np.float32)
        bad = batch_local_posteriors(*start, self.mask, self.index, self.offsets, self.chunks, marginals,
                                     local_pairs)
        self.raise_if_bad(bad)
        return marginals, local_pairs

    def random_states(self, seed):
        """Uniform random states, within the tag dictionary when there is one (CGS start)."""
        rng = np.random.default_rng(seed)
        k = self.parts.n_states
        if not self.mask.shape[0]:
            return rng.integers(0, k, size=self.corpus.n_tokens).astype(np.int32)
        allowed = self.mask[self.index]
        cumulative = np.cumsum(allowed, axis=1)
        draws = rng.random(self.corpus.n_tokens) * cumulative[:, -1]
        return (cumulative <= draws[:, None]).sum(axis=1).astype(np.int32)


class Tables(NamedTuple):
    """One E-step's tables: start row, transitions, the emission table with its row log offsets,
    and (MAP) the parameters they came from, for the prior term of EM's objective."""

    start: np.ndarray
    trans: np.ndarray
    emission: np.ndarray
    emission_log_offset: np.ndarray
    params: dict = None


class BatchChains:
    """The HMM as `cvbayes.schedules.batch` sees it: tables of a rule, the E-step over every
    sequence, and the objective's penalty (eq. 3.11-3.22)."""

    def __init__(self, parts, data):
        self.parts = parts
        self.data = data

    def tables(self, statistics, rule):
        start_counts, trans_counts, stats = statistics
        startprob, transmat = self.parts.transitions.tables(start_counts, trans_counts, rule)
        if rule == rules.MAP:
            return self.from_params({"startprob": startprob, "transmat": transmat,
                                     **self.parts.family.map_params(stats)})
        return Tables(startprob, transmat, *self.parts.family.table(stats, rule, self.data.corpus))

    def from_params(self, params):
        """The tables of given parameters (EM's M-step, an ``init`` dict)."""
        return Tables(*self.parts.tables_from_params(params, self.data.corpus), params)

    def expectations(self, tables):
        return self.data.expectations(tables.start, tables.trans, tables.emission, tables.emission_log_offset)

    def penalty(self, rule, statistics, tables):
        """log p(theta) of the tables for MAP; -KL(q(theta) || p(theta)) of the counts for VB."""
        transitions, family = self.parts.transitions, self.parts.family
        if rule == rules.MAP:
            return transitions.log_prior(tables.start, tables.trans) + family.log_prior(tables.params)
        start_counts, trans_counts, stats = statistics
        return -(transitions.kl(start_counts, trans_counts) + family.kl(stats))


class SubchainSweep:
    """CVI-2 and CVI-3 for `cvbayes.schedules.leave_one_out`: the units are the sequences, or the
    subchains of ``subchain_length`` tokens each one is cut into, every subchain guarded by its
    neighbours (eq. 3.56-3.82).  Each unit starts as its own chain (footnote 5), independent of its
    neighbours, from random local posteriors or those under the tables ``start``."""

    def __init__(self, parts, data, subchain_length, start, seed, checkpoint):
        self.parts = parts
        self.seed = seed
        self.n_sequences = data.n_chains
        self.offsets, self.is_first = Units(data.offsets, subchain_length).layout()
        self.units = ChainData(parts, data.corpus, self.offsets)
        self.marginals, self.internal = self.units.local_posteriors(start, seed, keep_pairs=True)
        self.boundary = np.zeros((0 if self.is_first.all() else self.internal.shape[0], *self.internal.shape[1:]),
                                 dtype=np.float32)
        independent_boundaries(self.offsets, self.is_first, self.marginals, self.boundary)
        self.start_counts, self.trans_counts = unit_totals(self.offsets, self.is_first, self.marginals, self.internal,
                                                           self.boundary)
        self.stats = data.token_stats(self.marginals)
        self.order = np.arange(self.units.n_chains, dtype=np.int64)
        self.work = subchain_workspace(self.offsets, parts.n_states)
        self.what = "sequence" if subchain_length is None else "subchain"
        self.zero = None
        checkpoint.track_arrays("cvi", self.arrays())

    # the axes of `arrays` that index states: a merge of two states sums along them
    STATE_AXES = {"start": (0,), "trans": (0, 1), "stats": (1,), "marginals": (1,), "internal": (1, 2),
                  "boundary": (1, 2)}

    def arrays(self):
        """The arrays the passes change in place, by name: the global counts and every unit's local ones."""
        return {"start": self.start_counts, "trans": self.trans_counts, "stats": self.stats,
                "marginals": self.marginals, "internal": self.internal, "boundary": self.boundary}

    def snapshot(self):
        """A copy of the state a pass changes, for `restore` (the HDP-HMM's merge trials)."""
        return {name: array.copy() for name, array in self.arrays().items()}, self.zero

    def restore(self, saved):
        arrays, self.zero = saved
        for name, array in self.arrays().items():
            array[...] = arrays[name]

    def merge_states(self, keep, gone):
        """Move state ``gone`` into ``keep``: every token's q(z_t = gone) and every expected count of
        ``gone`` (as source and as target of transitions, and in the emission statistics) added to
        ``keep``'s and zeroed.  Each unit's q(z^i) becomes its image under the map gone -> keep, so the
        global counts stay the sums of the local ones (Hughes, Kim and Sudderth 2015's merge of
        sufficient statistics)."""
        for name, array in self.arrays().items():
            for axis in self.STATE_AXES[name]:
                moved = np.take(array, gone, axis=axis)
                index = [slice(None)] * array.ndim
                index[axis] = keep
                array[tuple(index)] += moved
                index[axis] = gone
                array[tuple(index)] = 0.0

    def delete_state(self, gone):
        """Empty state ``gone``: in every unit, its mass goes to the other states k in proportion r(k) to
        the mass its tokens give them, sum_t q(z_t = gone) q(z_t = k) (the unit's tokens' mass in k when
        that is zero), as if ``gone`` were merged into k with probability r(k) (`merge_states`, unit by
        unit): q(z_t = k) += r(k) q(z_t = gone), transitions (j, gone) and (gone, j) to (j, k) and (k, j),
        (gone, gone) to (k, k).  The global counts stay the sums of the local ones; the next pass, in which
        ``gone`` has no counts, is the restricted local step of Hughes, Kim and Sudderth 2015's delete."""
        marginals = self.marginals
        filled = np.diff(self.offsets) > 0
        starts = self.offsets[:-1][filled]
        overlap = np.zeros((filled.shape[0], marginals.shape[1]))
        mass = np.zeros_like(overlap)
        overlap[filled] = np.add.reduceat(marginals * marginals[:, gone:gone + 1], starts, axis=0)
        mass[filled] = np.add.reduceat(marginals, starts, axis=0)
        overlap[:, gone] = mass[:, gone] = 0.0
        share = np.where(overlap.sum(axis=1, keepdims=True) > 0, overlap, mass)
        share /= np.maximum(share.sum(axis=1, keepdims=True), 1e-300)
        unit_of = np.repeat(np.arange(filled.shape[0]), np.diff(self.offsets))
        marginals += (marginals[:, gone:gone + 1] * share[unit_of]).astype(marginals.dtype)
        marginals[:, gone] = 0.0
        internal = self.internal
        stays = internal[:, gone, gone].copy()
        internal[:, gone, gone] = 0.0
        diagonal = np.arange(marginals.shape[1])
        internal[:, diagonal, diagonal] += (stays[:, None] * share).astype(internal.dtype)
        # a boundary pair joins the last token of unit i - 1 (rows) to the first of unit i (columns)
        before = np.vstack([share[:1], share[:-1]])
        for pairs, rows in ((internal, share), (self.boundary, before)):
            pairs += pairs[:, :, gone:gone + 1] * share[:pairs.shape[0], None, :].astype(pairs.dtype)
            pairs[:, :, gone] = 0.0
            pairs += pairs[:, gone:gone + 1, :] * rows[:pairs.shape[0], :, None].astype(pairs.dtype)
            pairs[:, gone, :] = 0.0
        self.start_counts[...], self.trans_counts[...] = unit_totals(self.offsets, self.is_first, marginals,
                                                                     self.internal, self.boundary)
        self.stats[...] = self.units.token_stats(marginals)

    def sweep(self, iteration):
        strategy = self.parts.occupancy
        occupancy = None if strategy is None else strategy.pass_products(self.seed, iteration)
        state = subchain_state(self.units.emissions(), *self.parts.transitions.prior(), self.offsets, self.is_first,
                               self.start_counts, self.trans_counts, self.stats, self.marginals, self.internal,
                               self.boundary, self.work, occupancy)
        objective, bad = subchain_pass(state, self.order)
        self.units.raise_if_bad(bad, self.what)
        self.zero = None if occupancy is None else occupancy[0]
        return objective

    def after_pass(self, iteration):
        """The occupancy strategy's work after a pass (the HDP's hyperparameters, §5.3)."""
        if self.parts.occupancy is not None:
            self.parts.occupancy.after_collapsed_pass(self.marginals, self.current(), self.zero, self.n_sequences)

    def current(self):
        return self.start_counts, self.trans_counts, self.stats

    def attributes(self):
        return {"local_memory_bytes_": self.marginals.nbytes + self.internal.nbytes + self.boundary.nbytes}


class TokenSweep:
    """CVI-1 for `cvbayes.schedules.leave_one_out`: token-level mean field (eq. 3.28-3.39), from random
    local posteriors or those under the tables ``start``."""

    def __init__(self, parts, data, start, seed, checkpoint):
        self.data = data
        self.marginals, _ = data.local_posteriors(start, seed, keep_pairs=False)
        self.sequence_of = data.sequence_of()
        self.start_counts, self.trans_counts = factorised_transitions(data.offsets, self.marginals)
        trans_rows = self.trans_counts.sum(axis=1)
        self.stats = data.token_stats(self.marginals)
        self.state = token_state(data.emissions(), parts.transitions.alpha, data.offsets, self.sequence_of,
                                 self.start_counts, self.trans_counts, trans_rows, self.stats, self.marginals,
                                 token_workspace(parts.n_states))
        checkpoint.track_arrays("cvi", {"start": self.start_counts, "trans": self.trans_counts, "rows": trans_rows,
                                        "stats": self.stats, "marginals": self.marginals})
        self.order = np.arange(data.corpus.n_tokens, dtype=np.int64)

    def sweep(self, iteration):
        objective, bad = token_pass(self.state, self.order)
        self.data.raise_if_bad(self.sequence_of[bad] if bad >= 0 else -1)
        return objective

    def current(self):
        return self.start_counts, self.trans_counts, self.stats


class TokenSampler:
    """Collapsed Gibbs sampling (eq. 3.25) for `cvbayes.schedules.gibbs` from the token ``states``,
    sweep i at temperature ``temperatures[i]``; a sweep's objective is log p(x, z) (eq. 3.24)."""

    def __init__(self, parts, data, states, temperatures, checkpoint):
        self.parts = parts
        self.data = data
        self.states = states
        self.temperatures = temperatures
        self.sequence_of = data.sequence_of()
        k = parts.n_states
        self.start_counts, self.trans_counts, trans_rows = hard_transitions(data.offsets, states, k)
        self.stats = state_stats(parts.family.code, data.index, data.features, states, k, data.n_stats)
        self.state = token_state(data.emissions(), parts.transitions.alpha, data.offsets, self.sequence_of,
                                 self.start_counts, self.trans_counts, trans_rows, self.stats, states,
                                 token_workspace(k))
        self.order = np.arange(data.corpus.n_tokens, dtype=np.int64)
        checkpoint.track_arrays("cgs", {"start": self.start_counts, "trans": self.trans_counts, "rows": trans_rows,
                                        "stats": self.stats, "states": states})

    def sweep(self, iteration):
        bad = gibbs_pass(self.state, self.order, 1.0 / self.temperatures[iteration])
        self.data.raise_if_bad(self.sequence_of[bad] if bad >= 0 else -1)
        return (self.parts.transitions.log_marginal(self.start_counts, self.trans_counts)
                + self.parts.family.log_marginal(self.stats))

    def current(self):
        return self.start_counts, self.trans_counts, self.stats

    def attributes(self):
        return {"states_": self.states}


class Units:
    """Whole sequences, or the subchains of ``length`` tokens each sequence is cut into.

    Subchains of one sequence are numbered consecutively, so unit u's neighbours are u - 1 and
    u + 1 when they belong to the same sequence.
    """

    def __init__(self, offsets, length=None):
        self.offsets = offsets
        self.length = length
        if length is None:
            self.n_units = offsets.shape[0] - 1
            return
        lengths = np.diff(offsets)
        pieces = np.maximum(-(-lengths // length), 1)
        self.first_unit = np.concatenate([[0], np.cumsum(pieces)])
        self.n_units = int(self.first_unit[-1])
        self.sequence = np.repeat(np.arange(lengths.shape[0]), pieces)

    def ranges(self, ids):
        """(begin, end, sequence begin, sequence end) of the units ``ids``."""
        if self.length is None:
            begin = np.asarray(self.offsets[ids], dtype=np.int64)
            end = np.asarray(self.offsets[ids + 1], dtype=np.int64)
            return begin, end, begin, end
        seq = self.sequence[ids]
        seq_begin = np.asarray(self.offsets[seq], dtype=np.int64)
        seq_end = np.asarray(self.offsets[seq + 1], dtype=np.int64)
        begin = seq_begin + (ids - self.first_unit[seq]) * self.length
        end = np.minimum(begin + self.length, seq_end)
        return begin, end, seq_begin, seq_end

    def layout(self):
        """(offsets, is_first): every unit's tokens laid end to end, and whether it starts a sequence."""
        begin, _, seq_begin, _ = self.ranges(np.arange(self.n_units))
        return np.append(begin, self.offsets[-1]).astype(np.int64), begin == seq_begin


def stationary_distribution(trans):
    """pi with pi T = pi, for a row-stochastic T (the vanilla subchains' start)."""
    n_states = trans.shape[0]
    system = trans.T - np.eye(n_states)
    system[-1] = 1.0
    rhs = np.zeros(n_states)
    rhs[-1] = 1.0
    try:
        pi = np.linalg.solve(system, rhs)
    except np.linalg.LinAlgError:
        pi = np.full(n_states, 1.0 / n_states)
    pi = np.maximum(pi, 0.0)
    return pi / pi.sum()


def gather_ranges(begins, ends):
    """Token positions of the ranges [begins[u], ends[u]) laid end to end, and their offsets."""
    offsets = np.zeros(begins.shape[0] + 1, dtype=np.int64)
    np.cumsum(ends - begins, out=offsets[1:])
    positions = np.arange(offsets[-1], dtype=np.int64) + np.repeat(begins - offsets[:-1], ends - begins)
    return positions, offsets


class Minibatches:
    """The HMM as `cvbayes.schedules.stochastic` sees it (SVI, SCVI; thesis §3.7.2, §3.8.4).

    ``counts`` is the schedule's dict of `DecayingCounts`: "start", "trans" and "stats", and when the
    parts' occupancy strategy asks for them (the HDP-HMM's SCVI) the running log prod_i q(C^i = 0) of
    eq. 5.46, "zero_start", "zero_pairs", "zero_exits" and (learning beta tau, §5.5.3) "zero_emissions", decayed and
    refreshed like the counts with the minibatch's value scaled to the corpus: an unbiased estimate
    of the sum over units of log q(C^unit = 0).

    Parameters
    ----------
    parts : the HMM's `Parts`; an occupancy strategy there runs after every step and pass
    corpus : the training Corpus (may be memory-mapped)
    rule : core.rules.VB (SVI) or MEAN (SCVI)
    units : `Units`
    buffer : SVI on subchains: observations padded on each side (Foti et al. 2014)
    vanilla : start subchains from the stationary distribution, with no guards (SCVI-3) and no buffer
    """

    def __init__(self, parts, corpus, rule, units, buffer, vanilla):
        self.parts = parts
        self.corpus = corpus
        self.rule = rule
        self.units = units
        self.n_units = units.n_units
        subchains = units.length is not None
        self.buffer = 0 if (vanilla or not subchains or rule != rules.VB) else buffer
        self.guarded = rule == rules.MEAN and subchains and not vanilla
        self.n_tokens = corpus.n_tokens
        self.n_transitions = corpus.n_tokens - int(np.count_nonzero(np.diff(np.asarray(corpus.offsets))))
        k = parts.n_states
        # SCVI-3's boundary beliefs: q(first state), q(last state) of every subchain
        self.beliefs = np.full((self.n_units if self.guarded else 0, 2, k), 1.0 / k, dtype=np.float32)
        products = None if parts.occupancy is None else parts.occupancy.minibatch_occupancy()
        self.occupancy, self.n_samples, self.zero_emissions = (NO_OCCUPANCY, 0, False) if products is None else products
        self.counts = None
        self.step = 0

    def track(self, checkpoint):
        """Declare to a `cvbayes.checkpoints.Checkpoint` what the steps change beside the global blocks
        (which the schedule declares): SCVI-3's boundary beliefs and the step count (the seed of the
        "sampling" occupancy method)."""
        checkpoint.track_arrays("minibatch beliefs", {"beliefs": self.beliefs})
        checkpoint.track("minibatch step", lambda: self.step, lambda step: setattr(self, "step", step))

    def random_counts(self, rng):
        """The random global counts of eq. 3.106-3.107, scaled like random-state tallies."""
        start, trans = self.parts.transitions.random_counts(rng, self.units.offsets.shape[0], self.n_transitions)
        return start, trans, self.parts.family.random_stats(rng, self.corpus, self.parts.n_states)

    def start(self, start_counts, trans_counts, stats):
        """The schedule's global blocks, starting from these counts."""
        k = self.parts.n_states
        self.counts = {"start": DecayingCounts(start_counts), "trans": DecayingCounts(trans_counts),
                       "stats": DecayingCounts(stats)}
        if self.occupancy != NO_OCCUPANCY:
            self.counts.update(zero_start=DecayingCounts(np.zeros(k)), zero_pairs=DecayingCounts(np.zeros((k, k))),
                               zero_exits=DecayingCounts(np.zeros(k)))
            if self.zero_emissions:
                self.counts["zero_emissions"] = DecayingCounts(np.zeros((self.parts.family.n_symbols, k)))
        return self.counts

    def current(self):
        """(start, transitions, emission statistics) of the global counts now."""
        return tuple(self.counts[name].values() for name in ("start", "trans", "stats"))

    def expectations(self, ids):
        """Forward-backward on the units ``ids`` under tables of the current counts: (start, pairs,
        stats, statistics rows, log Z, own tokens, own transitions, chain tokens, q(C = 0) products)."""
        parts, family = self.parts, self.parts.family
        k = parts.n_states
        begin, end, seq_begin, seq_end = self.units.ranges(ids)
        chain_begin = np.maximum(seq_begin, begin - self.buffer)
        chain_end = np.minimum(seq_end, end + self.buffer)
        positions, chain_offsets = gather_ranges(chain_begin, chain_end)
        own_begin = chain_offsets[:-1] + (begin - chain_begin)
        own_end = own_begin + (end - begin)
        index, features, rows = family.minibatch_layout(self.corpus, positions)
        table, offset = family.compact_table(self.counts["stats"].rows(rows), self.rule, features, rows)
        mask = parts.mask[rows[:-1]] if parts.mask.shape[0] else parts.mask
        trans_counts = self.counts["trans"].values()
        trans_prior, trans_prior_total = parts.transitions.prior()
        start_row, trans = parts.transitions.tables(self.counts["start"].values(), trans_counts, self.rule,
                                                    total=trans_prior_total)
        start_kind = np.where(chain_begin == seq_begin, START_ROW,
                              GUARDED if self.guarded else STATIONARY).astype(np.int64)
        right_guarded = self.guarded & (end < seq_end)
        left_beliefs = np.zeros((ids.shape[0], k))
        right_beliefs = np.zeros((ids.shape[0], k))
        if self.guarded:
            has_left = start_kind == GUARDED
            left_beliefs[has_left] = self.beliefs[ids[has_left] - 1, 1]
            right_beliefs[right_guarded] = self.beliefs[ids[right_guarded] + 1, 0]
        stationary = (stationary_distribution(trans / trans.sum(axis=1, keepdims=True))
                      if np.any(start_kind == STATIONARY) else start_row)
        edges = np.empty((ids.shape[0], 2, k))
        n_emission_rows = rows.shape[0] - 1 if self.zero_emissions else 0  # the minibatch's words
        emissions = (family.code, family.prior_array(), mask, index, features)
        start, pairs, stats, log_z, bad, zero = chain_expectations(
            emissions, start_row, stationary, trans, trans_counts, trans_prior, trans_prior_total, table, offset,
            chain_offsets, own_begin, own_end, start_kind, right_guarded, left_beliefs, right_beliefs,
            rows.shape[0], equal_token_chunks(chain_offsets, k * k), edges, self.occupancy, self.n_samples, self.step,
            n_emission_rows)
        if bad >= 0:
            raise ZeroProbabilityError(f"tokens {begin[bad]}..{end[bad] - 1} (unit {int(ids[bad])}) have zero "
                                       "probability under every state path")
        if self.guarded:
            self.beliefs[ids] = edges
        n_pairs = int((own_end - own_begin - 1).sum() + np.count_nonzero(own_begin > chain_offsets[:-1])
                      + np.count_nonzero(start_kind == GUARDED))
        return (start, pairs, stats, rows, log_z, int((end - begin).sum()), n_pairs, int(chain_offsets[-1]), zero)

    def minibatch(self, ids):
        """One step's updates of every global block (eq. 3.103-3.104): the minibatch's statistics
        and q(C = 0) logs, each with its scale from the minibatch to the corpus."""
        start, pairs, stats, rows, log_z, n_tokens, n_pairs, n_chain_tokens, zero = self.expectations(ids)
        self.step += 1
        unit_scale = self.n_units / ids.shape[0]
        if self.units.length is None:
            # eq. 3.103-3.104: every statistic scaled by I / |B|
            pair_scale = stats_scale = unit_scale
        else:
            # subchains differ in length and in the transitions they own
            pair_scale = self.n_transitions / max(n_pairs, 1)
            stats_scale = self.n_tokens / max(n_tokens, 1)
        updates = [("start", slice(None), start, unit_scale), ("trans", slice(None), pairs, pair_scale),
                   ("stats", rows, stats, stats_scale)]
        if self.occupancy != NO_OCCUPANCY:
            tiny = np.finfo(float).tiny
            log_zero = [np.log(np.maximum(values, tiny)) for values in zero]
            updates += [("zero_start", slice(None), log_zero[0], unit_scale),
                        ("zero_pairs", slice(None), log_zero[1], pair_scale),
                        ("zero_exits", slice(None), log_zero[2], pair_scale)]
            if self.zero_emissions:
                # the rows of the minibatch's words (rows[-1] is the totals row of the statistics)
                updates.append(("zero_emissions", rows[:-1], log_zero[3], stats_scale))
        return Minibatch(updates, log_z, n_chain_tokens)

    def after_step(self, rho):
        """The occupancy strategy's work after every step (the HDP's stick gradients, eq. 5.40)."""
        if self.parts.occupancy is not None:
            self.parts.occupancy.after_step(self.counts, self.corpus.n_sequences, rho)

    def after_pass(self):
        """The occupancy strategy's work after every pass over the data (the HDP's beta tau, §5.5.3)."""
        if self.parts.occupancy is not None:
            self.parts.occupancy.after_stochastic_pass(self.counts)

    def attributes(self):
        return {"global_memory_bytes_": sum(self.counts[name].nbytes for name in ("start", "trans", "stats"))}
