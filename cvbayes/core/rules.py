"""The parameter rules: how each algorithm turns expected counts into the table a dynamic program runs on.

This is the thesis's "algorithmic shortcut from EM to CVI" (§3.3.1, §3.5, §4.3-4.4): forward-backward,
inside-outside and every other kernel stay the same; only the table changes.  For a Dirichlet row with
pseudo-counts a_k, prior total A = sum_k a_k (or the HDP's sigma, eq. 5.38) and counts C_k with row total
C_. = sum_k C_k:

* ``MAP`` (EM):     (C_k + (a_k - 1)+) / (C_. + sum_k (a_k - 1)+)        eq. 3.18-3.19, 4.10
* ``VB``:           exp(psi(C_k + a_k) - psi(C_. + A))                    eq. 3.21-3.22, 4.12
* ``MEAN`` (CVI, SCVI, the posterior mean and the samplers' predictive):
                    (C_k + a_k) / (C_. + A)          eq. 3.49-3.50, 3.99, 3.109, 4.16, 4.24, 5.38

The collapsed algorithms apply ``MEAN`` to the counts of everything but the unit being updated, so the
same formula is the leave-one-out (surrogate) table.  Each formula is written once, as a scalar function
compiled twice: as a numba function for the kernels' inner loops (``mean_cell``, ``log_geometric_cell``)
and as a NumPy ufunc for whole tables (``dirichlet_table``).  MAP uses no pseudo-count below a = 1: the
posterior mode then lies on the simplex boundary, so a <= 1 gives the MLE.  Counts are clipped at zero
(float32 local statistics can leave -1e-7 behind).

Rows are dense (the last axis of an array) or sparse: ``slot_*`` functions take only the stored entries of
rows of ``width`` outcomes (the aligner's translation rows, thesis §3.8.3), whose other entries have no
counts.  ``width`` is one number for every row, or one a row: rows of different sizes laid end to end,
such as the annotated parents A[a] of a PCFG with latent annotations, each of whose rows mixes binary,
unary and lexical rules (thesis eq. 4.24 over annotated rules).
"""
import numpy as np
from numba import njit, vectorize
from scipy.special import digamma as scipy_digamma
from scipy.special import gammaln

from .special import digamma

MAP = "map"
VB = "vb"
MEAN = "mean"
RULES = (MAP, VB, MEAN)

# exp(psi(1e-6)) underflows to 0, and a chain entering an all-zero row would die
_TINY = np.finfo(float).tiny
_SIGNATURE = ["float64(float64, float64, float64, float64)"]


def _mean_numerator(count, pseudo):
    return max(count, 0.0) + pseudo


def _mean_denominator(row_count, row_prior):
    return max(row_count, 0.0) + row_prior


mean_weight = njit(cache=True)(_mean_numerator)
mean_weight.__doc__ = """max(C, 0) + a: MEAN's cell times its row's normaliser (the weight a draw needs)."""
_mean_normaliser = njit(cache=True)(_mean_denominator)


def _mean(count, pseudo, row_count, row_prior):
    return mean_weight(count, pseudo) / _mean_normaliser(row_count, row_prior)


def _psi(count, pseudo):
    return digamma(mean_weight(count, pseudo))


_psi_cell = njit(cache=True)(_psi)


def _log_geometric(count, pseudo, row_count, row_prior):
    return _psi_cell(count, pseudo) - _psi_cell(row_count, row_prior)


def _mode(count, pseudo, row_count, row_pseudo, width):
    denominator = max(row_count, 0.0) + row_pseudo
    if denominator > 0.0:
        return (max(count, 0.0) + pseudo) / denominator
    return 1.0 / width


mean_cell = njit(cache=True)(_mean)
mean_cell.__doc__ = """(max(C, 0) + a) / (max(C_., 0) + A): MEAN for one cell (eq. 3.49-3.50, 4.24, 5.38)."""
log_geometric_cell = njit(cache=True)(_log_geometric)
log_geometric_cell.__doc__ = """psi(max(C, 0) + a) - psi(max(C_., 0) + A): log of VB's cell (eq. 3.21-3.22)."""
_mean_table = vectorize(_SIGNATURE, cache=True)(_mean)
_weight_table = vectorize(["float64(float64, float64)"], cache=True)(_mean_numerator)
_mode_table = vectorize(["float64(float64, float64, float64, float64, float64)"], cache=True)(_mode)


def _psi_table(counts, pseudo):
    """`_psi` over arrays: scipy's digamma of MEAN's weights, a quarter faster than the numba digamma
    on VB's emission tables, which it recomputes every pass."""
    return scipy_digamma(_weight_table(counts, pseudo))


def _log_geometric_table(counts, pseudo, row_counts, row_prior):
    """`_log_geometric` over arrays, psi of each row's total taken once per row (not once per cell)."""
    return _psi_table(counts, pseudo) - _psi_table(row_counts, row_prior)


def check_prior(name, value):
    """A prior's pseudo-count (Dirichlet) or shape (Gamma) as a float, or ValueError naming ``name``: every
    rule above needs it positive."""
    if not value > 0:
        raise ValueError(f"{name} must be positive, got {value}")
    return float(value)


def map_pseudo(prior):
    """MAP's pseudo-counts (a - 1)+ (eq. 3.18 with a Dirichlet prior)."""
    return np.maximum(np.asarray(prior, dtype=float) - 1.0, 0.0)


@njit(cache=True, fastmath={"reassoc", "contract", "arcp", "nsz"})
def mean_rows(counts, prior_row, prior_total, rows, out):
    """out[j] = MEAN of row j of ``counts`` for j in ``rows``, with the row total taken from the
    clipped counts (eq. 3.49: a_k = alpha, A = K alpha; eq. 5.38: a_k = sigma G[pi_k], A = sigma).

    The cells of a row share one normaliser, so it is inverted once a row (within 1 ulp of
    `mean_cell`, and half the time of a division a cell in the collapsed updates' inner loop).
    """
    width = counts.shape[1]
    for j in rows:
        row_count = 0.0
        for k in range(width):
            row_count += max(counts[j, k], 0.0)
        inverse = 1.0 / _mean_normaliser(row_count, prior_total)
        for k in range(width):
            out[j, k] = mean_weight(counts[j, k], prior_row[k]) * inverse


def _dense(counts, prior, total):
    """Clipped counts, their row totals, the pseudo-count row and the prior total of dense rows."""
    counts = np.maximum(np.asarray(counts, dtype=float), 0.0)
    width = counts.shape[-1]
    prior = np.asarray(prior, dtype=float)
    prior_total = float(np.sum(np.broadcast_to(prior, (width,)))) if total is None else float(total)
    return counts, counts.sum(axis=-1, keepdims=True), prior, prior_total


def dirichlet_table(rule, counts, prior, total=None):
    """The table of ``rule`` for dense Dirichlet rows along the last axis of ``counts``.

    ``prior`` is a scalar (symmetric Dirichlet) or a row of pseudo-counts a_k; ``total`` replaces the
    prior total sum_k a_k (the HDP's sigma, whose remainder belongs to unrepresented states).
    """
    counts, row_counts, prior, prior_total = _dense(counts, prior, total)
    if rule == MAP:
        pseudo = map_pseudo(prior)
        row_pseudo = float(np.sum(np.broadcast_to(pseudo, (counts.shape[-1],))))
        return _mode_table(counts, pseudo, row_counts, row_pseudo, float(counts.shape[-1]))
    if rule == VB:
        return np.maximum(np.exp(_log_geometric_table(counts, prior, row_counts, prior_total)), _TINY)
    if rule == MEAN:
        return _mean_table(counts, prior, row_counts, prior_total)
    raise ValueError(f"unknown rule {rule!r}; choose one of {', '.join(RULES)}")


def mean_table(counts, pseudo, row_counts, row_prior):
    """MEAN's cells, each with its own row count and prior total broadcast against ``counts``: the
    predictive emission tables whose row totals are kept apart (eq. 3.50, 3.99)."""
    return _mean_table(counts, pseudo, row_counts, row_prior)


def log_dirichlet_table(rule, counts, pseudo, row_counts, row_prior):
    """log of the VB or MEAN cells, each with its own row count and prior total broadcast against
    ``counts``: tables whose rows are scaled afterwards (emissions over a large vocabulary)."""
    if rule == VB:
        return _log_geometric_table(counts, pseudo, row_counts, row_prior)
    if rule == MEAN:
        return np.log(_mean_table(counts, pseudo, row_counts, row_prior))
    raise ValueError(f"log tables take the rules {VB!r} and {MEAN!r}, not {rule!r}")


def slot_table(rule, counts, slot_row, row_counts, prior, width):
    """The table of ``rule`` at the stored entries of sparse rows.

    ``counts`` (S,) are the stored entries, ``slot_row`` (S,) their rows, ``row_counts`` (R,) the rows'
    totals over all ``width`` outcomes (a number, or (R,) each row's) and ``prior`` the symmetric
    pseudo-count.
    """
    row_counts = np.maximum(row_counts, 0.0)[slot_row]
    width = _slot_width(width, slot_row)
    if rule == MAP:
        pseudo = float(map_pseudo(prior))
        return _mode_table(counts, pseudo, row_counts, width * pseudo, width)
    if rule == VB:
        return np.maximum(np.exp(_log_geometric_table(counts, prior, row_counts, width * prior)), _TINY)
    if rule == MEAN:
        return _mean_table(counts, prior, row_counts, width * prior)
    raise ValueError(f"unknown rule {rule!r}; choose one of {', '.join(RULES)}")


# -- objectives ---------------------------------------------------------------------------------


def _slot_width(width, slot_row):
    """Each stored entry's row width: ``width`` if every row has it, else ``width[slot_row]``."""
    width = np.asarray(width, dtype=float)
    return width if width.ndim == 0 else width[slot_row]


def _row_priors(width, prior, n_rows):
    """Each row's prior total A = width * a (sparse rows), shape (n_rows,)."""
    return np.broadcast_to(np.asarray(width, dtype=float) * prior, (n_rows,))


def dirichlet_kl(counts, prior):
    """sum over rows of KL(Dir(C + a) || Dir(a)), VB's penalty in the ELBO (eq. 3.11)."""
    counts, row_counts, prior, prior_total = _dense(counts, prior, None)
    return _rows_kl(row_counts[..., 0], prior_total, row_counts, prior_total, counts, prior)


def slot_kl(counts, slot_row, row_counts, prior, width):
    """`dirichlet_kl` of sparse rows from their stored entries (the others have no counts)."""
    row_counts = np.maximum(row_counts, 0.0)
    row_prior = _row_priors(width, prior, row_counts.shape[0])
    used = row_counts > 0
    return _rows_kl(row_counts[used], row_prior[used], row_counts[slot_row], row_prior[slot_row],
                    np.maximum(counts, 0.0), prior)


def _rows_kl(row_counts, row_prior, entry_row_counts, entry_row_prior, counts, prior):
    """KL(Dir(C + a) || Dir(a)) = lnG(C. + A) - lnG(A) - sum_k [lnG(C_k + a_k) - lnG(a_k)
    - C_k (psi(C_k + a_k) - psi(C. + A))] summed over rows, the psi difference being VB's log cell;
    ``entry_row_counts`` and ``entry_row_prior`` are each entry's row total and prior total A,
    broadcast against ``counts``."""
    log_geometric = _log_geometric_table(counts, prior, entry_row_counts, entry_row_prior)
    return float((gammaln(row_counts + row_prior) - gammaln(row_prior)).sum()
                 - (gammaln(counts + prior) - gammaln(prior) - counts * log_geometric).sum())


def dirichlet_log_marginal(counts, prior, total=None):
    """sum over rows of log p(C | a) with the row's parameters integrated out, the
    Dirichlet-multinomial of eq. 3.24 and 4.13; ``total`` as in `dirichlet_table` (the HDP's
    sigma, eq. 5.10, whose remainder belongs to states without counts)."""
    counts = np.asarray(counts, dtype=float)
    width = counts.shape[-1]
    prior_total = float(np.sum(np.broadcast_to(prior, (width,)))) if total is None else float(total)
    return float((gammaln(prior_total) - gammaln(prior_total + counts.sum(axis=-1))).sum()
                 + (gammaln(counts + prior) - gammaln(prior)).sum())


def slot_log_marginal(counts, slot_row, row_counts, prior, width):
    """`dirichlet_log_marginal` of sparse rows from their stored entries."""
    used = row_counts > 0
    prior_total = _row_priors(width, prior, row_counts.shape[0])[used]
    return float((gammaln(prior_total) - gammaln(prior_total + row_counts[used])).sum()
                 + (gammaln(counts + prior) - gammaln(prior)).sum())


def dirichlet_log_prior(table, prior):
    """sum (a - 1)+ log theta: the prior's part of the MAP objective that EM raises (dense rows)."""
    pseudo = map_pseudo(prior)
    if not np.any(pseudo):
        return 0.0
    with np.errstate(divide="ignore"):
        return float(np.sum(pseudo * np.log(table)))


def slot_log_prior(table, slot_row, row_counts, prior, width):
    """`dirichlet_log_prior` of sparse MAP rows: the stored entries plus the (width - stored) entries
    of every row that hold only the pseudo-count."""
    pseudo = float(map_pseudo(prior))
    if pseudo == 0.0:
        return 0.0
    denominator = np.maximum(row_counts, 0.0) + width * pseudo
    stored = np.bincount(slot_row, minlength=row_counts.shape[0])
    unstored = (width - stored) * np.log(pseudo / denominator)
    return float(pseudo * (np.log(table).sum() + unstored.sum()))


# -- truncated stick-breaking (GEM) weights ----------------------------------------------------------
#
# A Dirichlet process over K outcomes truncated as Blei and Jordan (2006) truncate it: pi_k = pi~_k
# prod_{l<k} (1 - pi~_l) with pi~_k ~ Beta(1, gamma) for k < K and pi~_K = 1, so that the K weights sum
# to one (thesis eq. 5.3).  Given counts n_k of draws from pi, the sticks' posterior is again a product
# of Betas, q(pi~_k) = Beta(u_k, v_k) with u_k = 1 + n_k and v_k = gamma + n_{>k} (eq. 5.25-5.26 with
# the counts in place of the table counts), so the rules of this module carry over stick by stick:
# VB takes geometric expectations G[pi_k] (the text after eq. 5.28), MEAN the posterior means, which
# are also the predictive probability of the next draw.


def stick_posterior(counts, concentration):
    """(u, v) of the K - 1 free sticks' Beta posteriors from counts n (K,) (eq. 5.25-5.26)."""
    counts = np.maximum(np.asarray(counts, dtype=float), 0.0)
    beyond = np.cumsum(counts[::-1])[::-1]  # n_{>=k}
    return 1.0 + counts[:-1], float(concentration) + beyond[1:]


def stick_table(rule, counts, concentration):
    """The K weights of a truncated stick-breaking prior under ``rule``: VB's
    G[pi_k] = exp(E[log pi~_k] + sum_{l<k} E[log(1 - pi~_l)]) or MEAN's E[pi_k] (the predictive of
    the next draw, exact for stick-breaking priors: the sticks are independent a posteriori)."""
    u, v = stick_posterior(counts, concentration)
    if rule == VB:
        both = scipy_digamma(u + v)
        take, skip = scipy_digamma(u) - both, scipy_digamma(v) - both
    elif rule == MEAN:
        take, skip = np.log(u / (u + v)), np.log(v / (u + v))
    else:
        raise ValueError(f"stick-breaking weights take the rules {VB!r} and {MEAN!r}, not {rule!r}")
    passed = np.concatenate([[0.0], np.cumsum(skip)])
    return np.maximum(np.exp(passed + np.append(take, 0.0)), _TINY)


def stick_kl(counts, concentration):
    """sum_k KL(Beta(u_k, v_k) || Beta(1, gamma)) over the free sticks: VB's penalty for the weights."""
    u, v = stick_posterior(counts, concentration)
    gamma = float(concentration)
    both = scipy_digamma(u + v)
    return float((gammaln(u + v) - gammaln(u) - gammaln(v) - (gammaln(1.0 + gamma) - gammaln(gamma))
                  + (u - 1.0) * (scipy_digamma(u) - both) + (v - gamma) * (scipy_digamma(v) - both)).sum())


def stick_log_marginal(counts, concentration):
    """log p(z) of draws with counts n under the truncated stick-breaking prior, the weights
    integrated out: sum_{k<K} log B(1 + n_k, gamma + n_{>k}) - log B(1, gamma)."""
    u, v = stick_posterior(counts, concentration)
    gamma = float(concentration)
    return float((gammaln(u) + gammaln(v) - gammaln(u + v) + np.log(gamma)).sum())


@njit(cache=True)
def stick_mean_row(counts, concentration, out):
    """out = MEAN's weights of `stick_table` from counts (K,), in numba for the collapsed updates."""
    n_outcomes = counts.shape[0]
    beyond = 0.0
    for k in range(n_outcomes):
        beyond += max(counts[k], 0.0)
    passed = 1.0
    for k in range(n_outcomes - 1):
        count = max(counts[k], 0.0)
        beyond -= count
        u = 1.0 + count
        v = concentration + max(beyond, 0.0)
        out[k] = passed * u / (u + v)
        passed *= v / (u + v)
    out[n_outcomes - 1] = passed
