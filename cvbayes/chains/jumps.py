"""The jump model of the HMM aligner (Vogel et al. 1996), in conjugate form.

Vogel's HMM lets the alignment of target word j depend on the previous one
only through the jump width a_j - a_{j-1}.  We bucket the width into
d in {-M, ..., M} (``max_jump`` = M; -M means "M or more back", +M "M or
more ahead"), give the buckets one categorical theta with a Dirichlet prior,
and place a bucket's mass on the sentence as follows.  From source position
src (src = -1 for the first target word, a virtual position before the
sentence) to a sentence of I source words:

    p(i | src) = sum_d theta_d w(d; src, i),
    w(d; src, i) = 1 / m_d(src)   if d = clip(i - src, -M, M) (the bucket of i),
                   1 / I          if m_d(src) = 0 (the bucket holds no position),
                   0              otherwise,

where m_d(src) counts the positions of the sentence in bucket d.  So a bucket
spreads its mass evenly over its positions, and a bucket that leaves the
sentence (a forward jump from the last word) restarts anywhere.  Every row
sums to one without renormalisation, which keeps the model conjugate: the
bucket is a latent categorical draw, expected bucket counts are sufficient
statistics, the EM M-step is exact (the likelihood never drops), VB has an
exact ELBO, and collapsed Gibbs samples the exact collapsed posterior.
Vogel's and GIZA++'s renormalised jump tables have none of these.

Tables are stored (I + 1, I): row r = src + 1 for src = -1 .. I - 1.
"""
from numba import njit


@njit(cache=True)
def bucket_of(width, max_jump):
    """Bucket index (0 .. 2M) of a jump width: clip(width, -M, M) + M."""
    return min(max(width, -max_jump), max_jump) + max_jump


@njit(cache=True)
def bucket_size(bucket, src, n_src, max_jump):
    """m_d(src): the number of positions 0..I-1 whose jump from src falls in the bucket."""
    d = bucket - max_jump
    if d == max_jump:
        return max(0, n_src - (src + max_jump))
    if d == -max_jump:
        return max(0, src - max_jump + 1)
    return 1 if 0 <= src + d < n_src else 0


@njit(cache=True)
def bucket_sizes(n_src, max_jump, out):
    """out[src + 1, d] = m_d(src) for src = -1 .. I - 1: computed once per sentence,
    as every table below needs it for each (src, d)."""
    for r in range(n_src + 1):
        for b in range(2 * max_jump + 1):
            out[r, b] = bucket_size(b, r - 1, n_src, max_jump)


@njit(cache=True)
def jump_weight(bucket, src, dst, n_src, max_jump, sizes):
    """w(d; src, dst) of the module notes: how bucket d places mass on position dst.

    ``sizes`` is the sentence's `bucket_sizes` table.
    """
    size = sizes[src + 1, bucket]
    if size == 0:
        return 1.0 / n_src
    if bucket_of(dst - src, max_jump) == bucket:
        return 1.0 / size
    return 0.0


@njit(cache=True)
def restart_spread(theta, src, n_src, sizes):
    """The mass of the buckets that hold no position from src, spread evenly over the I positions:
    sum_{d: m_d(src) = 0} theta_d / I (``sizes`` the sentence's `bucket_sizes`)."""
    mass = 0.0
    for b in range(theta.shape[0]):
        if sizes[src + 1, b] == 0:
            mass += theta[b]
    return mass / n_src


@njit(cache=True)
def jump_probability(theta, src, dst, max_jump, sizes, spread):
    """p(dst | src) = sum_d theta_d w(d; src, dst) = theta_b / m_b(src) + ``spread``, b the bucket of
    dst - src (which holds dst) and ``spread`` = `restart_spread` of src."""
    b = bucket_of(dst - src, max_jump)
    return theta[b] / sizes[src + 1, b] + spread


@njit(cache=True)
def jump_matrix(theta, n_src, max_jump, sizes, out):
    """out[src + 1, i] = p(i | src) = sum_d theta_d w(d; src, i) for src = -1 .. I - 1.

    ``theta`` may be unnormalised (VB's exp E[log theta]); rows then sum to
    sum(theta).  O(I^2 + I M).
    """
    for r in range(n_src + 1):
        spread = restart_spread(theta, r - 1, n_src, sizes)
        for i in range(n_src):
            out[r, i] = jump_probability(theta, r - 1, i, max_jump, sizes, spread)


@njit(cache=True)
def _add_bucket_row(weight, counts, table_row, theta, src, n_src, max_jump, sizes_row, out):
    """Bucket responsibilities of the jumps src -> i, i < n_src, expected ``weight * counts[i]`` times."""
    restart = 0.0
    for i in range(n_src):
        p = table_row[i]
        if counts[i] == 0.0 or p <= 0.0:
            continue
        ratio = weight * counts[i] / p
        b = bucket_of(i - src, max_jump)
        out[b] += ratio * theta[b] / sizes_row[b]
        restart += ratio
    if restart > 0.0:
        for b in range(theta.shape[0]):
            if sizes_row[b] == 0:
                out[b] += restart * theta[b] / n_src


@njit(cache=True)
def add_bucket_counts(pairs, table, theta, n_src, max_jump, sizes, weight, out):
    """Expected bucket counts of expected transition counts (the E-step for theta).

    ``pairs[src + 1, i]`` is the expected number of jumps from src into real
    position i and ``table`` the matrix `jump_matrix` built from ``theta``.
    A jump src -> i came from bucket d with probability
    theta_d w(d; src, i) / p(i | src); ``out[d] += weight *`` the sum of those
    responsibilities.  O(I^2 + I M).
    """
    for r in range(n_src + 1):
        _add_bucket_row(weight, pairs[r], table[r], theta, r - 1, n_src, max_jump, sizes[r], out)


@njit(cache=True)
def add_outer_bucket_counts(left, right, table, theta, n_src, max_jump, sizes, out):
    """`add_bucket_counts` for pairs[src + 1, i] = left[src + 1] * right[i] (CVI-1's factorised
    q(a_{j-1}) q(a_j)), without forming the (I + 1) x I matrix; rows with left = 0 are skipped."""
    for r in range(n_src + 1):
        if left[r] != 0.0:
            _add_bucket_row(left[r], right, table[r], theta, r - 1, n_src, max_jump, sizes[r], out)
