"""Parameter rules: how each algorithm turns expected counts into a table.

This is the "algorithmic shortcut from EM to CVI" (thesis §3.3.1, §3.5): the
forward-backward kernel is the same, only the table it runs on changes.

* EM (MAP):  theta = (C + a - 1) / (C. + K(a - 1))                 eq. 3.18-3.19
* VB:        theta~ = exp(psi(C + a) - psi(C. + K a))              eq. 3.21-3.22
* CVI / posterior mean:  theta_bar = (C + a) / (C. + K a)         eq. 3.49-3.50, 3.109

All functions normalise along the last axis.  ``prior`` is a scalar (a
symmetric Dirichlet) or a row of pseudo-counts a_k (the HDP-HMM's sigma G[pi_k],
eq. 5.38); ``total`` replaces the prior's own total sum_k a_k in the
denominator (the HDP's sigma, whose remainder belongs to unrepresented states).
"""
import numpy as np
from scipy.special import digamma, gammaln


def dirichlet_mode(counts, prior):
    """MAP estimate of Dirichlet-multinomial rows (eq. 3.18-3.19 with pseudo-counts).

    For a < 1 the posterior mode sits on the simplex boundary; we then use no
    pseudo-count (the prior's pull is clipped at zero), so a <= 1 gives the
    MLE.  A row with no counts at all becomes uniform.
    """
    pseudo = np.maximum(counts + np.maximum(np.asarray(prior, dtype=float) - 1.0, 0.0), 0.0)
    totals = pseudo.sum(axis=-1, keepdims=True)
    width = counts.shape[-1]
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(totals > 0, pseudo / np.where(totals > 0, totals, 1.0), 1.0 / width)
    return out


def _prior_total(prior, width, total):
    if total is not None:
        return total
    return float(np.sum(np.broadcast_to(prior, (width,))))


def dirichlet_geometric_mean(counts, prior, total=None):
    """exp(E_q[log theta]) under q = Dir(counts + prior) (eq. 3.21-3.22)."""
    counts = np.maximum(counts, 0.0)
    log_num = digamma(counts + prior)
    log_den = digamma(counts.sum(axis=-1, keepdims=True) + _prior_total(prior, counts.shape[-1], total))
    # exp(psi(1e-6)) underflows to 0, and a chain entering an all-zero row would die
    return np.maximum(np.exp(log_num - log_den), np.finfo(float).tiny)


def dirichlet_mean(counts, prior, total=None):
    """Posterior mean (C + a) / (C. + K a) (eq. 3.49-3.50, 3.109); (C + a_k) / (C. + A) in general."""
    counts = np.maximum(counts, 0.0)
    return (counts + prior) / (counts.sum(axis=-1, keepdims=True) + _prior_total(prior, counts.shape[-1], total))


def dirichlet_kl(counts, prior):
    """Sum over rows of KL(Dir(counts + prior) || Dir(prior)) for the VB ELBO (eq. 3.11)."""
    counts = np.maximum(counts, 0.0)
    width = counts.shape[-1]
    post = counts + prior
    post_total = post.sum(axis=-1)
    kl = (gammaln(post_total) - gammaln(width * prior)
          - (gammaln(post) - gammaln(prior)).sum(axis=-1)
          + ((post - prior) * (digamma(post) - digamma(post_total)[..., None])).sum(axis=-1))
    return float(kl.sum())


def dirichlet_log_marginal(counts, prior):
    """Sum over rows of log of the Dirichlet-multinomial marginal (eq. 3.24)."""
    width = counts.shape[-1]
    return float((gammaln(width * prior) - gammaln(width * prior + counts.sum(axis=-1))).sum()
                 + (gammaln(counts + prior) - gammaln(prior)).sum())


def dirichlet_log_prior_terms(probs, prior):
    """sum (a - 1)_+ log theta: the prior part of the MAP objective that EM raises."""
    pseudo = max(prior - 1.0, 0.0)
    if pseudo == 0.0:
        return 0.0
    with np.errstate(divide="ignore"):
        return float(pseudo * np.log(probs).sum())
