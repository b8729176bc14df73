"""The aligners' sites for the Gibbs schedule: collapsed Gibbs sampling (thesis eq. 3.25; eflomal's approach).

The translation rows t(. | f) and the jump buckets theta are integrated out; the sampler's state is the
alignment a_j of every target word (a_j = I for NULL) and, for the HMM, the bucket b_j that each jump into
a real position was drawn from (chains/jumps.py; -1 for NULL words).  Counts are whole numbers kept in
float64 arrays.  A site is a sentence pair, whose target words are redrawn one at a time, in order (the
same systematic scan as sites of single words, without finding a word's pair and its jump's memory
anew); `cvbayes.schedules.gibbs` visits the pairs in order and every draw is `cvbayes.core.sampling.draw`
(seed it with `cvbayes.core.sampling.seed_numba`).  The predictive of a draw is the MEAN rule
(`cvbayes.core.rules`) on the counts of everything else.

A state is ``(layout, translation, [jumps,] sample, buffers)`` as in models/alignment/collapsed.py, with
``translation = (prior, v_prior, cell_slot, slot_row, counts, totals)`` and ``sample = (align, rb,
accumulate)``: while ``accumulate[0]`` is set, each word's conditional distribution over its I + 1
candidates is added to ``rb`` (Rao-Blackwellised marginals; the aligner decodes from their average); for
the HMM ``jumps = (jump_prior, jump_total, p0, max_jump, jump_counts, bucket)``.
"""
import numpy as np
from numba import njit

from ...chains.jumps import bucket_of, bucket_sizes, jump_probability, jump_weight, restart_spread
from ...core.rules import mean_cell
from ...core.sampling import draw
from ...core.statistics import move_slots
from ...core.units import max_length
from ...schedules import gibbs
from .collapsed import jump_means, translation_means

_ONE = np.ones(1)


def ibm1_gibbs_state(data, prior, counts, totals, align, rb, accumulate):
    """The state of `ibm1_gibbs_pass` (``prior`` the `priors.Pseudocounts`): the alignment ``align`` (int32
    a target token), its slot and row counts, the Rao-Blackwell sums ``rb`` (float32 a cell) and the
    one-element flag ``accumulate``."""
    translation = (prior.slot, prior.row, data.cell_slot, data.slot_row, counts, totals)
    return data.layout(), translation, (align, rb, accumulate), np.empty(max_length(data.src_offsets) + 1)


def hmm_gibbs_state(data, prior, null_prob, max_jump, counts, totals, align, rb, accumulate, jump_counts, bucket):
    """The state of `hmm_gibbs_pass`: as `ibm1_gibbs_state`, with each token's bucket (`hmm_cgs_init`) and
    their counts."""
    n_buckets = jump_counts.shape[0]
    longest = max_length(data.src_offsets)
    translation = (prior.slot, prior.row, data.cell_slot, data.slot_row, counts, totals)
    jumps = (prior.jumps, prior.jump_total, null_prob, max_jump, jump_counts, bucket)
    buffers = (np.empty(longest + 1), np.empty(n_buckets), np.empty((longest + 1, n_buckets)),
               np.empty(longest + 1), np.empty(n_buckets), np.empty(n_buckets), np.empty(n_buckets))
    return data.layout(), translation, jumps, (align, rb, accumulate), buffers


@njit(cache=True)
def _move_token(counts, totals, cell_slot, slot_row, cell, sign):
    """One token's (whole) count at ``cell`` in or out of its slot."""
    move_slots(counts, totals, cell_slot[cell:], slot_row, 0, 1, _ONE, sign)


@njit(cache=True)
def _accumulate(rb, first, weights, n, total):
    for i in range(n):
        rb[first + i] += weights[i] / total


@njit(cache=True)
def ibm1_resample(state, s, power):
    """Redraw a_j for every target word of pair s in turn: p(a_j = i | rest) ∝ (C^{-j}_{f_i e_j} + beta) /
    (C^{-j}_{f_i .} + V beta).  False if a word has no candidate of positive probability."""
    (src_offsets, tgt_offsets, cell_offsets, _), translation, (align, rb, accumulate), weights = state
    prior, v_prior, cell_slot, slot_row, counts, totals = translation
    n_cand = src_offsets[s + 1] - src_offsets[s] + 1
    for j in range(tgt_offsets[s + 1] - tgt_offsets[s]):
        t = tgt_offsets[s] + j
        first = cell_offsets[s] + j * n_cand
        _move_token(counts, totals, cell_slot, slot_row, first + align[t], -1.0)
        total = translation_means(counts, totals, cell_slot, slot_row, first, n_cand, prior, v_prior, weights)
        if not total > 0.0:
            return False
        if accumulate[0]:
            _accumulate(rb, first, weights, n_cand, total)
        x = draw(weights, n_cand, power)
        align[t] = x
        _move_token(counts, totals, cell_slot, slot_row, first + x, 1.0)
    return True


@njit(cache=True)
def ibm1_gibbs_pass(state, order, power):
    """One Gibbs sweep over the IBM1 pairs in ``order``; the first pair that could not be drawn, or -1."""
    return gibbs(ibm1_resample, state, order, power)


@njit(cache=True)
def hmm_resample(state, s, power):
    """Redraw (a_j, b_j, b_k) for every target word j of pair s in turn, a blocked draw each.

    k is the next target word aligned to a real position; its jump starts from a_j's memory, so changing
    a_j moves it.  With theta_bar the MEAN table of the other jumps' buckets, and theta_bar^(d) that of the
    other jumps plus the jump into a_j drawn from bucket d (eq. 3.25's delta terms),

        p(a_j = i, b_j = d, b_k = d' | rest) ∝
            t_bar(e_j | f_i) (1 - p0) w(d; src, i) theta_bar_d  w(d'; i, a_k) theta_bar^(d)_d',

    and for a_j = NULL, t_bar(e_j | NULL) p0 p(a_k | m) under theta_bar, m the memory carried through.
    src is the memory before j (-1 for the first word).  theta_bar^(d) differs from theta_bar^+ (the
    other jumps' counts over one more jump) only at d, by ``bump[d]``, so summing out both buckets gives

        t_bar (1 - p0) [p(i | src) p^+(a_k | i) + sum_d w(d; src, i) theta_bar_d w(d; i, a_k) bump_d],

    p and p^+ the jump probabilities under theta_bar and theta_bar^+.  a_j is drawn with both buckets
    summed out, then b_j given a_j, then b_k given both.  O(I M) a word.  False if a word has no
    alignment of positive probability.
    """
    (src_offsets, tgt_offsets, cell_offsets, _), translation, jumps, sample, buffers = state
    prior, v_prior, cell_slot, slot_row, counts, totals = translation
    jump_prior, jump_total, p0, max_jump, jump_counts, bucket = jumps
    align, rb, accumulate = sample
    weights, bucket_weights, sizes, spread_next, theta, theta_next, bump = buffers
    n_buckets = jump_counts.shape[0]
    stay = 1.0 - p0
    n_src = src_offsets[s + 1] - src_offsets[s]
    n_tgt = tgt_offsets[s + 1] - tgt_offsets[s]
    base = tgt_offsets[s]
    bucket_sizes(n_src, max_jump, sizes)
    memory = -1
    for j in range(n_tgt):
        first = cell_offsets[s] + j * (n_src + 1)
        t = base + j
        null_memory = max(memory, 0)
        _move_token(counts, totals, cell_slot, slot_row, first + align[t], -1.0)
        if bucket[t] >= 0:
            jump_counts[bucket[t]] -= 1.0
        k = j + 1
        while k < n_tgt and align[base + k] == n_src:
            k += 1
        has_next = k < n_tgt
        dst = align[base + k] if has_next else -1
        if has_next:
            jump_counts[bucket[base + k]] -= 1.0
            n_jumps = jump_counts.sum() + 1.0
            for b in range(n_buckets):
                theta_next[b] = mean_cell(jump_counts[b], jump_prior[b], n_jumps, jump_total)
                bump[b] = mean_cell(jump_counts[b] + 1.0, jump_prior[b], n_jumps, jump_total) - theta_next[b]
            for r in range(n_src + 1):
                spread_next[r] = restart_spread(theta_next, r - 1, n_src, sizes)
        jump_means(jump_counts, jump_prior, jump_total, theta)
        spread_in = restart_spread(theta, memory, n_src, sizes)
        translation_means(counts, totals, cell_slot, slot_row, first, n_src + 1, prior, v_prior, weights)
        total = 0.0
        for x in range(n_src + 1):
            v = weights[x]
            if x == n_src:
                v *= p0
                if has_next:
                    v *= jump_probability(theta, null_memory, dst, max_jump, sizes,
                                          restart_spread(theta, null_memory, n_src, sizes))
            else:
                into = jump_probability(theta, memory, x, max_jump, sizes, spread_in)
                if has_next:
                    into *= jump_probability(theta_next, x, dst, max_jump, sizes, spread_next[x + 1])
                    for b in range(n_buckets):
                        w_in = jump_weight(b, memory, x, n_src, max_jump, sizes)
                        if w_in > 0.0:
                            into += w_in * theta[b] * jump_weight(b, x, dst, n_src, max_jump, sizes) * bump[b]
                v *= stay * into
            weights[x] = v
            total += v
        if not total > 0.0:
            return False
        if accumulate[0]:
            _accumulate(rb, first, weights, n_src + 1, total)
        x = draw(weights, n_src + 1, power)
        align[t] = x
        _move_token(counts, totals, cell_slot, slot_row, first + x, 1.0)
        chosen = -1
        if x < n_src:
            reach_out = 0.0
            if has_next:
                reach_out = jump_probability(theta_next, x, dst, max_jump, sizes, spread_next[x + 1])
            for b in range(n_buckets):
                v = jump_weight(b, memory, x, n_src, max_jump, sizes) * theta[b]
                if has_next:
                    v *= reach_out + jump_weight(b, x, dst, n_src, max_jump, sizes) * bump[b]
                bucket_weights[b] = v
            chosen = draw(bucket_weights, n_buckets, power)
            jump_counts[chosen] += 1.0
            memory = x
        else:
            memory = null_memory
        bucket[t] = chosen
        if has_next:
            jump_means(jump_counts, jump_prior, jump_total, theta)
            for b in range(n_buckets):
                bucket_weights[b] = jump_weight(b, memory, dst, n_src, max_jump, sizes) * theta[b]
            chosen_next = draw(bucket_weights, n_buckets, power)
            bucket[base + k] = chosen_next
            jump_counts[chosen_next] += 1.0
    return True


@njit(cache=True)
def hmm_gibbs_pass(state, order, power):
    """One Gibbs sweep over the HMM aligner's pairs in ``order``; the first pair that could not be drawn,
    or -1."""
    return gibbs(hmm_resample, state, order, power)


@njit(cache=True)
def hmm_cgs_init(max_jump, src_offsets, tgt_offsets, align, bucket, jump_counts):
    """Buckets for a given alignment (IBM1's last sample): each jump into a real position takes the bucket
    of its width; adds them to ``jump_counts``."""
    for s in range(src_offsets.shape[0] - 1):
        n_src = src_offsets[s + 1] - src_offsets[s]
        memory = -1
        for t in range(tgt_offsets[s], tgt_offsets[s + 1]):
            x = align[t]
            if x < n_src:
                bucket[t] = bucket_of(x - memory, max_jump)
                jump_counts[bucket[t]] += 1.0
                memory = x
            else:
                bucket[t] = -1
                memory = max(memory, 0)


@njit(cache=True)
def hmm_alignment_log_prob(p0, max_jump, src_offsets, tgt_offsets, align, bucket):
    """sum_j log p(a_j | b_j, memory): log p0 for NULL, log((1 - p0) w(b_j; src, a_j)) otherwise.

    With the Dirichlet-multinomial of the bucket counts this is the alignment part of the collapsed log
    joint log p(e, a, b) (eq. 3.24).
    """
    total = 0.0
    log_p0 = np.log(p0)
    log_stay = np.log(1.0 - p0)
    sizes = np.empty((max_length(src_offsets) + 1, 2 * max_jump + 1))
    for s in range(src_offsets.shape[0] - 1):
        n_src = src_offsets[s + 1] - src_offsets[s]
        bucket_sizes(n_src, max_jump, sizes)
        memory = -1
        for t in range(tgt_offsets[s], tgt_offsets[s + 1]):
            x = align[t]
            if x < n_src:
                total += log_stay + np.log(jump_weight(bucket[t], memory, x, n_src, max_jump, sizes))
                memory = x
            else:
                total += log_p0
                memory = max(memory, 0)
    return total


@njit(cache=True)
def sample_cells(cell_offsets, src_offsets, tgt_offsets, align, out):
    """One-hot per-cell indicators of an alignment sample (for the slot counts)."""
    for s in range(src_offsets.shape[0] - 1):
        n_cand = src_offsets[s + 1] - src_offsets[s] + 1
        for j in range(tgt_offsets[s + 1] - tgt_offsets[s]):
            first = cell_offsets[s] + j * n_cand
            for i in range(n_cand):
                out[first + i] = 0.0
            out[first + align[tgt_offsets[s] + j]] = 1.0
