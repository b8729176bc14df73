"""Stochastic inference for HMMs: SVI and SCVI on minibatches (thesis §3.7.2, §3.8.4).

Both learners keep only global statistics (start counts, transition counts N
and the emission statistics M), so their state is O(K^2 + K W) whatever the
corpus size.  Each step samples a minibatch of *units* uniformly with
replacement, runs forward-backward on every unit under tables built from the
current globals, and moves the globals towards the minibatch's rescaled
expected counts with step size rho_m = (tau0 + m)^-kappa (eq. 3.103-3.104):

* ``scvi`` uses the surrogate parameters theta_hat = (N + alpha) / (N. + K alpha)
  and the posterior-predictive emissions (eq. 3.98-3.100): SCVI-2 on whole
  sequences, SCVI-3 on subchains of one long sequence, where each subchain is
  guarded by the boundary beliefs of its neighbours (seeds/002 eq. 6-23,
  chains/guarded.py).
* ``svi`` uses the VB tables exp E[log theta] (Hoffman et al. 2013); on
  subchains it pads each one with ``buffer`` observations on both sides and
  starts the padded chain from the stationary distribution (Foti et al. 2014).

A unit is a whole sequence, or a subchain when sequences are cut into pieces
of ``subchain_length`` tokens.  The vanilla variants of Fig. 3.17 start every
subchain from the stationary distribution, with no guards and no buffer.
"""
import numpy as np
from numba import njit, prange

from ..chains.forward_backward import add_pair_outer, chain_buffers, chain_marginals, fill_rows_from_table
from ..chains.guarded import add_left_guard_pairs, guard_end, guard_start
from ..families.ops import add_token_stats
from . import rules
from .sweeps import NO_OCCUPANCY, add_no_transition, equal_token_chunks

# How a unit's chain starts (eq. 3.98 and its subchain variants)
START_ROW = 0     # the sequence's own first token: the start row theta_0
STATIONARY = 1    # mid-sequence, no guard: the stationary distribution of the chain
GUARDED = 2       # SCVI-3: the message from the left guard's belief (eq. 3.77, 3.79)


def step_size(step, kappa, tau0):
    """rho_m = (tau0 + m)^-kappa; the thesis uses tau0 = 1 (§3.8.4)."""
    return (tau0 + step) ** -kappa


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


class Units:
    """Whole sequences, or the subchains of ``length`` tokens each sequence is cut into.

    Subchains of one sequence are numbered consecutively, so unit u's
    neighbours are u - 1 and u + 1 when they belong to the same sequence.
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


class DecayingCounts:
    """Statistics updated by N <- (1 - rho) N + rho * update (eq. 3.103-3.104).

    The decay is kept as one scale factor, so a step costs only the rows its
    minibatch touches instead of all K x W entries.
    """

    def __init__(self, values):
        self.stored = np.array(values, dtype=float)
        self.scale = 1.0

    def decay(self, keep):
        self.scale *= keep
        if self.scale < 1e-150:
            self.stored *= self.scale
            self.scale = 1.0

    def add(self, rows, update):
        self.stored[rows] += update / self.scale

    def rows(self, rows):
        return self.scale * self.stored[rows]

    def values(self):
        return self.scale * self.stored


@njit(cache=True)
def gather_ranges(begins, ends, local_offsets):
    """Token positions of the ranges [begins[u], ends[u]) laid end to end."""
    positions = np.empty(local_offsets[-1], dtype=np.int64)
    for u in range(begins.shape[0]):
        base = local_offsets[u]
        for t in range(ends[u] - begins[u]):
            positions[base + t] = begins[u] + t
    return positions


@njit(parallel=True, cache=True)
def unit_expectations(family, start_row, stationary, trans, guard_counts, trans_prior, trans_prior_total, table,
                      table_log_offset, mask, index, features, chain_offsets, own_begin, own_end,
                      start_kind, right_guarded, left_beliefs, right_beliefs, n_stats, chunk_bounds,
                      out_edges, occupancy, n_samples, seed, n_emission_rows):
    """Expected counts of a minibatch of units under one set of tables.

    Unit u's chain is the tokens chain_offsets[u]..chain_offsets[u+1] of the
    minibatch (its own tokens own_begin[u]..own_end[u] plus any SVI buffer).
    It starts from ``start_row``, ``stationary`` or the guard message of
    ``left_beliefs[u]`` (start_kind), and when ``right_guarded[u]`` ends with the
    guard factor of ``right_beliefs[u]`` (eq. 3.75-3.76, 3.78).  Only the unit's
    own tokens and the transitions into them are counted: the start row when
    the chain starts the sequence, the left guard pair (eq. 3.82), the buffer's
    last transition into the first own token, and the internal transitions.

    With an ``occupancy`` method (the HDP-HMM's SCVI), the minibatch's
    q(C^B = 0) products of eq. 5.46 come back too (sweeps.add_no_transition;
    guard pairs by the heuristic); units then must have no buffer.  With
    ``n_emission_rows`` > 0 (categorical emissions, learning beta tau of
    §5.5.3) so do prod_t (1 - q(z_t = k)) over the tokens of every compact row
    of ``index``, the words of the minibatch.

    Returns (start_counts, trans_counts, stats, sum of log Z, first bad unit or
    -1, (zero start, zero pairs, zero exits, zero emissions (n_emission_rows,
    K))) and writes q(first own token), q(last own token) to out_edges[u].
    """
    n_states = trans.shape[0]
    n_chunks = chunk_bounds.shape[0] - 1
    longest = 1
    for u in range(chain_offsets.shape[0] - 1):
        longest = max(longest, chain_offsets[u + 1] - chain_offsets[u])
    start_acc = np.zeros((n_chunks, n_states))
    outer_acc = np.zeros((n_chunks, n_states, n_states))
    guard_acc = np.zeros((n_chunks, n_states, n_states))
    stats_acc = np.zeros((n_chunks, n_stats, n_states))
    log_z_acc = np.zeros(n_chunks)
    bad_acc = np.full(n_chunks, -1, dtype=np.int64)
    with_zero = occupancy != NO_OCCUPANCY
    n_zero = n_chunks if with_zero else 0
    zero_start_acc = np.ones((n_zero, n_states))
    zero_pairs_acc = np.ones((n_zero, n_states, n_states))
    zero_exits_acc = np.ones((n_zero, n_states))
    zero_emissions_acc = np.ones((n_zero, n_emission_rows, n_states))
    for c in prange(n_chunks):
        lik, fwd, bwd, gamma = chain_buffers(longest, n_states)
        start = np.empty(n_states)
        end_vector = np.empty(n_states)
        for u in range(chunk_bounds[c], chunk_bounds[c + 1]):
            begin = chain_offsets[u]
            n_steps = chain_offsets[u + 1] - begin
            if n_steps == 0:
                continue
            log_scale = fill_rows_from_table(table, table_log_offset, mask, index, begin, begin + n_steps, lik)
            if start_kind[u] == START_ROW:
                start[:] = start_row
            elif start_kind[u] == STATIONARY:
                start[:] = stationary
            else:
                guard_start(left_beliefs[u], guard_counts, trans_prior, start)
            if right_guarded[u]:
                guard_end(guard_counts, right_beliefs[u], trans_prior, trans_prior_total, end_vector)
                for k in range(n_states):
                    lik[n_steps - 1, k] *= end_vector[k]
            log_z = -np.inf
            if log_scale > -np.inf:
                log_z = chain_marginals(start, trans, lik, n_steps, fwd, bwd, gamma)
            if log_z == -np.inf:
                if bad_acc[c] < 0:
                    bad_acc[c] = u
                continue
            log_z_acc[c] += log_z + log_scale
            first = own_begin[u] - begin
            last = own_end[u] - begin
            add_pair_outer(fwd, bwd, max(first, 1), last, outer_acc[c])
            if first == 0 and start_kind[u] == START_ROW:
                for k in range(n_states):
                    start_acc[c, k] += gamma[0, k]
            elif start_kind[u] == GUARDED:
                if with_zero:
                    guard_pairs = np.zeros((n_states, n_states))
                    add_left_guard_pairs(left_beliefs[u], guard_counts, trans_prior, gamma[0], 1.0, guard_pairs)
                    for j in range(n_states):
                        for k in range(n_states):
                            guard_acc[c, j, k] += guard_pairs[j, k]
                            zero_pairs_acc[c, j, k] *= 1.0 - guard_pairs[j, k]
                else:
                    add_left_guard_pairs(left_beliefs[u], guard_counts, trans_prior, gamma[0], 1.0, guard_acc[c])
            if with_zero:
                add_no_transition(occupancy, n_samples, seed + u, fwd, bwd, gamma, trans, n_steps,
                                  start_kind[u] == START_ROW, right_guarded[u], family, index, begin,
                                  (zero_start_acc[c], zero_pairs_acc[c], zero_exits_acc[c], zero_emissions_acc[c]))
            for t in range(first, last):
                add_token_stats(family, stats_acc[c], index, features, begin + t, gamma[t], 1.0)
            for k in range(n_states):
                out_edges[u, 0, k] = gamma[first, k]
                out_edges[u, 1, k] = gamma[last - 1, k]
    first_bad = -1
    for bad in bad_acc:
        if bad >= 0 and (first_bad < 0 or bad < first_bad):
            first_bad = bad
    pairs = outer_acc.sum(axis=0) * trans + guard_acc.sum(axis=0)
    zero = (np.ones(n_states), np.ones((n_states, n_states)), np.ones(n_states),
            np.ones((n_emission_rows, n_states)))
    for c in range(n_zero):
        zero[0][:] *= zero_start_acc[c]
        zero[1][:, :] *= zero_pairs_acc[c]
        zero[2][:] *= zero_exits_acc[c]
        zero[3][:, :] *= zero_emissions_acc[c]
    return start_acc.sum(axis=0), pairs, stats_acc.sum(axis=0), log_z_acc.sum(), first_bad, zero


class StochasticLearner:
    """The minibatch loop shared by SVI and SCVI.

    Parameters
    ----------
    model : HMM (its family, alpha, n_states and tag dictionary)
    corpus : the training Corpus (may be memory-mapped)
    rule : "vb" (SVI) or "predictive" (SCVI)
    batch_size : units per minibatch
    kappa, tau0 : step sizes rho_m = (tau0 + m)^-kappa
    subchain_length : None for whole sequences, else the subchain length
    buffer : SVI only, observations padded on each side of a subchain
    vanilla : start subchains from the stationary distribution, with no
        guards (SCVI-3) and no buffer (SVI)
    occupancy : (method code, samples, emissions) of q(C = 0) for the HDP-HMM,
        whose corpus-level log prod_i q(C^i = 0) (eq. 5.46) is then kept in
        ``log_zero`` like the counts: decayed by 1 - rho and refreshed with the
        minibatch's value scaled to the corpus, an unbiased estimate of the
        sum over units of log q(C^unit = 0).  With ``emissions`` (categorical
        only, for beta tau of §5.5.3) ``log_zero_emissions`` keeps the (W, K)
        log prod_t (1 - q(z_t = k)) over every word's tokens the same way, with
        the decay and scale of the emission statistics.
    """

    def __init__(self, model, corpus, rule, batch_size, kappa, tau0, subchain_length, buffer, vanilla,
                 occupancy=(NO_OCCUPANCY, 0, False)):
        self.model = model
        self.family = model.family
        self.corpus = corpus
        self.rule = rule
        self.batch_size = batch_size
        self.kappa = kappa
        self.tau0 = tau0
        self.units = Units(np.asarray(corpus.offsets), subchain_length)
        self.buffer = 0 if (vanilla or subchain_length is None or rule != "vb") else buffer
        self.guarded = rule == "predictive" and subchain_length is not None and not vanilla
        self.mask = model.tag_dictionary
        self.n_tokens = corpus.n_tokens
        self.n_transitions = corpus.n_tokens - int(np.count_nonzero(np.diff(np.asarray(corpus.offsets))))
        k = model.n_states
        # SCVI-3's boundary beliefs: q(first state), q(last state) of every subchain
        n_beliefs = self.units.n_units if self.guarded else 0
        self.beliefs = np.full((n_beliefs, 2, k), 1.0 / k, dtype=np.float32)
        self.step = 0
        self.occupancy, self.n_samples, emissions = occupancy
        self.log_zero = (np.zeros(k), np.zeros((k, k)), np.zeros(k))
        self.log_zero_emissions = DecayingCounts(np.zeros((self.family.n_symbols, k))) if emissions else None

    # ------------------------------------------------------------ globals
    def random_globals(self, rng):
        """Exponential draws of eq. 3.106-3.107, scaled like random-state tallies."""
        k = self.model.n_states
        start = rng.exponential(self.units.offsets.shape[0] / k, size=k)
        trans = rng.exponential(max(self.n_transitions, 1) / k ** 2, size=(k, k))
        stats = self.family.random_stats(rng, self.corpus, k)
        self.set_globals(start, trans, stats)

    def set_globals(self, start, trans, stats):
        self.start_counts = np.array(start, dtype=float)
        self.trans_counts = np.array(trans, dtype=float)
        self.stats = DecayingCounts(stats)

    def counts(self):
        return self.start_counts, self.trans_counts, self.stats.values()

    def _transition_tables(self):
        fn = rules.dirichlet_geometric_mean if self.rule == "vb" else rules.dirichlet_mean
        return self.model._transition_tables(self.start_counts, self.trans_counts, fn,
                                             total=self.model.transition_prior()[1])

    # ------------------------------------------------------------ one step
    def minibatch(self, ids):
        """Run forward-backward on the units ``ids``; returns their expected counts."""
        units = self.units
        k = self.model.n_states
        begin, end, seq_begin, seq_end = units.ranges(ids)
        chain_begin = np.maximum(seq_begin, begin - self.buffer)
        chain_end = np.minimum(seq_end, end + self.buffer)
        chain_offsets = np.zeros(ids.shape[0] + 1, dtype=np.int64)
        np.cumsum(chain_end - chain_begin, out=chain_offsets[1:])
        positions = gather_ranges(chain_begin, chain_end, chain_offsets)
        own_begin = chain_offsets[:-1] + (begin - chain_begin)
        own_end = own_begin + (end - begin)
        index, features, rows = self.family.minibatch_layout(self.corpus, positions)
        table, offset = self.family.compact_table(self.stats.rows(rows), self.rule, features, rows)
        mask = self.mask[rows[:-1]] if self.mask is not None else np.zeros((0, k))
        start_row, trans = self._transition_tables()

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
        n_emission_rows = 0 if self.log_zero_emissions is None else rows.shape[0] - 1  # the minibatch's words
        start_counts, pairs, stats, log_z, bad, zero = unit_expectations(
            self.family.code, start_row, stationary, trans, self.trans_counts, *self.model.transition_prior(),
            table, offset, mask, index, features, chain_offsets, own_begin, own_end, start_kind,
            right_guarded, left_beliefs, right_beliefs, rows.shape[0], equal_token_chunks(chain_offsets), edges,
            self.occupancy, self.n_samples, self.step, n_emission_rows)
        if bad >= 0:
            u = int(ids[bad])
            raise ValueError(f"tokens {begin[bad]}..{end[bad] - 1} (unit {u}) have zero probability "
                             "under every state path")
        if self.guarded:
            self.beliefs[ids] = edges
        n_pairs = int((own_end - own_begin - 1).sum() + np.count_nonzero(own_begin > chain_offsets[:-1])
                      + np.count_nonzero(start_kind == GUARDED))
        n_chain_tokens = int(chain_offsets[-1])
        return (start_counts, pairs, stats, rows, log_z, int((end - begin).sum()), n_pairs, n_chain_tokens,
                zero)

    def update(self, rng):
        """One stochastic step (eq. 3.103-3.104); returns (sum log Z, tokens in the chains).

        A minibatch at least as large as the corpus is the whole corpus.
        """
        n_units = self.units.n_units
        if self.batch_size >= n_units:
            ids = np.arange(n_units)
        else:
            ids = np.sort(rng.integers(0, n_units, size=self.batch_size))
        start, pairs, stats, rows, log_z, n_tokens, n_pairs, n_chain_tokens, zero = self.minibatch(ids)
        rho = step_size(self.step, self.kappa, self.tau0)
        self.step += 1
        unit_scale = n_units / ids.shape[0]
        if self.units.length is None:
            # eq. 3.103-3.104: every statistic scaled by I / |B|
            pair_scale = stats_scale = unit_scale
        else:
            # subchains differ in length and in the transitions they own
            pair_scale = self.n_transitions / max(n_pairs, 1)
            stats_scale = self.n_tokens / max(n_tokens, 1)
        keep = 1.0 - rho
        self.start_counts = keep * self.start_counts + rho * unit_scale * start
        self.trans_counts = keep * self.trans_counts + rho * pair_scale * pairs
        self.stats.decay(keep)
        self.stats.add(rows, rho * stats_scale * stats)
        if self.occupancy != NO_OCCUPANCY:
            tiny = np.finfo(float).tiny
            for running, batch, scale in zip(self.log_zero, zero[:3], (unit_scale, pair_scale, pair_scale)):
                running *= keep
                running += rho * scale * np.log(np.maximum(batch, tiny))
            if self.log_zero_emissions is not None:
                # the rows of the minibatch's words (rows[-1] is the totals row of the statistics)
                self.log_zero_emissions.decay(keep)
                self.log_zero_emissions.add(rows[:-1], rho * stats_scale * np.log(np.maximum(zero[3], tiny)))
        self.rho = rho
        return log_z, n_chain_tokens

