"""Initial DMV statistics: Klein and Manning's harmonic completion and random posteriors.

Both give each sentence local posteriors in the layout of `cvbayes.trees.dmv`
(head marginals (n, n + 1) and no-dependent marginals (n, 2)) and the expected
counts summed from them, so a learner can start from the counts (EM, VB: the
first M-step) and CVI can also subtract each sentence's share later.

The harmonic completion (Klein and Manning 2004, §3)
---------------------------------------------------
The paper describes it in words only (paraphrased): every word other than ROOT
takes the same number of arguments, and takes each other word as an argument
in inverse proportion to a constant plus their distance; ROOT takes a single
argument, each word with equal probability.  Reimplementations differ in the
details; this one is, for a sentence of n words and a constant c >= 0:

* root: every word is the ROOT's argument with probability 1/n;
* attach: the remaining mass (n - 1)/n of word m's head is spread over the
  other words h in proportion to 1/(c + |m - h|), so every word has exactly one
  head in expectation (its head marginals sum to 1, as a tree posterior's do);
* stop: from those head marginals, each head's dependents on one side are
  treated as independent events, so P(no dependent on side d) is the product
  of (1 - P(m attaches to h)) over the words m on that side, and the valence
  counts follow as from any tree posterior (`add_posterior_counts`): STOP at
  valence 0 gets that probability, CONTINUE at valence 0 and STOP at valence 1
  its complement, CONTINUE at valence 1 the expected number of dependents
  minus that complement.  Every word follows the same rule, whatever its type.

With c = 0 (the default: plain 1/distance) the first M-step favours short
attachments and adjacent heads.  The root and attach counts agree with at least
one reimplementation in public DMV code, whose stop counts come from a
different, ad hoc rule.

``variant="tree"`` is the other reading in use: the exact posterior over
projective single-root trees when every root and stop/continue weight is 1 and
an arc over distance d weighs 1/(c + d), i.e. one E-step of the chart on those
position weights.  Its arcs are a proper tree posterior, whose valence counts
agree with its attachments.  It is the DMV's default
(`cvbayes.models.dmv.HARMONIC_VARIANT`), chosen on EWT dev (UPOS, no
punctuation, at most 10 words): after 100 passes every learner scored 5.5-6.5 points
higher from it than from the completion (mean directed accuracy 35.3 % against
29.4 %; docs/results/fig4_1_dmv/README.md).

Random posteriors
-----------------
Each sentence gets the exact tree posterior of its own random position
weights: every root, stop/continue and arc weight an independent U(0, 1) draw,
then the inside-outside of `cvbayes.trees.dmv` (the tree analogue of the random
local posteriors of thesis footnote 5).  Draws come from a generator seeded by
(seed, sentence index), so they do not depend on the number of threads.
"""
import numpy as np
from numba import njit

from ..core.units import max_length
from .dmv import (RANDOM, DMVCounts, LocalPosteriors, check_sentences, dmv_batch, dmv_buffers, dmv_inside_outside,
                  store_and_count, work_chunks)


@njit(cache=True)
def harmonic_sentence(n, constant, head_marginals, none_marginals):
    """The harmonic completion's local posteriors of one sentence of n words (module notes).

    Parameters
    ----------
    n : int, number of words (>= 1).
    constant : float, c >= 0 in the weights 1/(c + distance).
    head_marginals : (>= n, >= n + 1) output, ``[m, h]`` = P(head of m is h),
        h = 0 for ROOT, h = p + 1 for word p.
    none_marginals : (>= n, 2) output, P(word p has no dependent on side d).
    """
    for m in range(n):
        head_marginals[m, 0] = 1.0 / n
        head_marginals[m, m + 1] = 0.0
        total = 0.0
        for h in range(n):
            if h != m:
                total += 1.0 / (constant + abs(m - h))
        for h in range(n):
            if h != m:
                head_marginals[m, h + 1] = (n - 1.0) / n * (1.0 / (constant + abs(m - h))) / total
    for p in range(n):
        none_left = 1.0
        for m in range(p):
            none_left *= 1.0 - head_marginals[m, p + 1]
        none_right = 1.0
        for m in range(p + 1, n):
            none_right *= 1.0 - head_marginals[m, p + 1]
        none_marginals[p, 0] = none_left
        none_marginals[p, 1] = none_right


@njit(cache=True)
def harmonic_tree_sentence(n, constant, w_root, w_stop, w_attach, chart, posterior, terms, head_marginals,
                           none_marginals):
    """The tree-posterior variant (module notes): the chart's posteriors when every
    root and stop/continue weight is 1 and an arc over distance d weighs 1/(c + d)."""
    for p in range(n):
        w_root[p] = 0.0
        for d in range(2):
            for v in range(2):
                for o in range(2):
                    w_stop[p, d, v, o] = 0.0
        for q in range(n):
            w_attach[p, q] = -np.log(constant + abs(p - q)) if p != q else -np.inf
    dmv_inside_outside(w_root, w_stop, w_attach, n, chart, posterior, terms, head_marginals, none_marginals)


@njit(cache=True)
def harmonic_batch(tags, offsets, n_types, constant, tree, head_offsets, head_store, none_store):
    """Harmonic counts of a corpus (Klein and Manning 2004; module notes).

    Parameters
    ----------
    tags : (N,) int type ids; offsets : (I + 1,) int64.
    n_types : int, V.
    constant : float, c >= 0.
    tree : bool, the tree-posterior variant instead of the completion.
    head_offsets, head_store, none_store : local-posterior stores as in
        `cvbayes.trees.dmv.dmv_batch_expectations` (empty to keep nothing).

    Returns
    -------
    (root_counts (V,), stop_counts (V, 2, 2, 2), attach_counts (V, 2, V))
    """
    longest = max_length(offsets)
    root = np.zeros(n_types)
    stop = np.zeros((n_types, 2, 2, 2))
    attach = np.zeros((n_types, 2, n_types))
    w_root, w_stop, w_attach, chart, posterior, terms, hm, none, _, _ = dmv_buffers(longest)
    for i in range(offsets.shape[0] - 1):
        begin = offsets[i]
        n = offsets[i + 1] - begin
        if n == 0:
            continue
        if tree:
            harmonic_tree_sentence(n, constant, w_root, w_stop, w_attach, chart, posterior, terms, hm, none)
        else:
            harmonic_sentence(n, constant, hm, none)
        store_and_count(tags, begin, n, i, hm, none, head_offsets, head_store, none_store, root, stop, attach)
    return root, stop, attach


def random_batch(seed, tags, offsets, chunk_bounds, n_types, head_offsets, head_store, none_store):
    """Counts of random local tree posteriors, one per sentence (module notes): the chart's driver on
    random position weights (`cvbayes.trees.dmv.dmv_batch`, RANDOM).

    Parameters as `harmonic_batch`, plus ``seed`` and ``chunk_bounds``
    (`cvbayes.trees.dmv.work_chunks`).  Returns (root, stop, attach) counts;
    every weight is positive, so every sentence has trees.
    """
    no_tables = (np.zeros(n_types), np.zeros((0, 2, 2, 2)), np.zeros((0, 2, 0)))
    return dmv_batch(RANDOM, seed, tags, offsets, chunk_bounds, *no_tables, head_offsets, head_store, none_store,
                     np.zeros(0, dtype=np.int32), np.zeros(0))[:3]


def _no_local():
    return LocalPosteriors(np.zeros(1, dtype=np.int64), np.zeros(0), np.zeros((0, 2)))


def dmv_harmonic_counts(tags, offsets, n_types, constant=0.0, variant="completion", local=None):
    """Expected counts of Klein and Manning's (2004) harmonic initialiser (module notes).

    Parameters
    ----------
    tags : (N,) int type ids; offsets : (I + 1,) sentence boundaries.
    n_types : int, V.
    constant : float, default 0
        c >= 0 in the attachment weights 1/(c + distance).
    variant : {"completion", "tree"}, default "completion"
        The distance-based completion, or the tree posterior under the same
        weights (module notes).
    local : LocalPosteriors, optional
        Receives every sentence's local posteriors.

    Returns
    -------
    DMVCounts
    """
    if not constant >= 0.0:
        raise ValueError(f"constant must be >= 0, got {constant}")
    if variant not in ("completion", "tree"):
        raise ValueError(f"variant must be 'completion' or 'tree', got {variant!r}")
    tags, offsets = check_sentences(tags, offsets, n_types)
    return DMVCounts(*harmonic_batch(tags, offsets, int(n_types), float(constant), variant == "tree",
                                     *(local or _no_local())))


def dmv_random_counts(tags, offsets, n_types, seed, local=None):
    """Expected counts of random local tree posteriors (module notes); deterministic given ``seed``.

    Parameters as `dmv_harmonic_counts`, with ``seed`` (int) instead of ``constant``.

    Returns
    -------
    DMVCounts
    """
    tags, offsets = check_sentences(tags, offsets, n_types)
    return DMVCounts(*random_batch(int(seed), tags, offsets, work_chunks(offsets), int(n_types),
                                   *(local or _no_local())))
