"""DMV kernels against brute-force enumeration of projective trees (Klein and Manning 2004)."""
import math

import numpy as np
import pytest
from scipy import stats

from brute_dmv import exact_posterior, projective_trees, tree_counts, tree_log_weight
from cvbayes.trees.dmv import (CONTINUE, HAS_DEPENDENT, NO_DEPENDENT, STOP, DMVCounts, LocalPosteriors,
                               add_posterior_counts, add_tree_counts, dmv_batch_sample, dmv_buffers,
                               dmv_expected_counts, dmv_inside, dmv_inside_outside, dmv_log_evidence, dmv_parse,
                               dmv_sample, sentence_weights)
from cvbayes.trees.dmv import tree_log_weight as kernel_tree_log_weight
from cvbayes.trees.dmv_init import dmv_harmonic_counts, dmv_random_counts


def random_log_tables(rng, n_types, concentration=1.0, normalised=True):
    """Log tables; unnormalised ones (rows not summing to 1) stand for VB/CVI weights."""
    if normalised:
        root = rng.dirichlet(np.full(n_types, concentration))
        stop = rng.dirichlet(np.full(2, concentration), size=(n_types, 2, 2))
        attach = rng.dirichlet(np.full(n_types, concentration), size=(n_types, 2))
    else:
        root = rng.uniform(0.01, 2.0, n_types)
        stop = rng.uniform(0.01, 2.0, (n_types, 2, 2, 2))
        attach = rng.uniform(0.01, 2.0, (n_types, 2, n_types))
    return np.log(root), np.log(stop), np.log(attach)


def one_sentence(tags):
    return np.asarray(tags, dtype=np.int32), np.array([0, len(tags)], dtype=np.int64)


def random_corpus(rng, n_sentences, n_types, longest):
    lengths = rng.integers(1, longest + 1, n_sentences)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    return rng.integers(0, n_types, offsets[-1]).astype(np.int32), offsets


def sentence_posteriors(tags, tables):
    """Run the per-sentence kernel; return log Z, head marginals and none marginals."""
    n = len(tags)
    w_root, w_stop, w_attach, chart, posterior, terms, hm, none, _, _ = dmv_buffers(n)
    sentence_weights(np.asarray(tags, dtype=np.int32), 0, n, *tables, w_root, w_stop, w_attach)
    log_z = dmv_inside_outside(w_root, w_stop, w_attach, n, chart, posterior, terms, hm, none)
    return log_z, hm[:n, :n + 1].copy(), none[:n].copy()


@pytest.mark.parametrize("n_words,n_types,normalised", [
    (1, 2, True), (2, 1, True), (2, 3, False), (3, 2, True), (4, 3, False), (5, 2, True), (5, 4, False),
    (6, 3, True),
])
def test_inside_outside_matches_enumeration(n_words, n_types, normalised):
    rng = np.random.default_rng(100 * n_words + 10 * n_types + normalised)
    tables = random_log_tables(rng, n_types, 0.7, normalised)
    tags, offsets = one_sentence(rng.integers(0, n_types, n_words))
    counts, log_z = dmv_expected_counts(tags, offsets, *tables)
    want_log_z, trees, prob, want_counts, want_heads, _ = exact_posterior(list(tags), *tables)
    assert log_z == pytest.approx(want_log_z, rel=1e-12, abs=1e-12)
    for got, want in zip(counts, want_counts, strict=True):
        np.testing.assert_allclose(got, want, atol=1e-12)
    _, head_marginals, none = sentence_posteriors(tags, tables)
    np.testing.assert_allclose(head_marginals, want_heads, atol=1e-12)
    for p in range(n_words):
        no_left = sum(q for q, t in zip(prob, trees) if (p + 1) not in t[:p])
        no_right = sum(q for q, t in zip(prob, trees) if (p + 1) not in t[p + 1:])
        np.testing.assert_allclose(none[p], [no_left, no_right], atol=1e-12)


def test_chart_counts_each_projective_tree_once():
    # with every weight 1, Z is the number of derivations; there is one per
    # projective single-root tree: C(3n - 2, n - 1) / n of them (OEIS A006013)
    for n in range(1, 13):
        tags, offsets = one_sentence(np.zeros(n))
        (log_z,) = dmv_log_evidence(tags, offsets, np.zeros(1), np.zeros((1, 2, 2, 2)), np.zeros((1, 2, 1)))
        want = math.comb(3 * n - 2, n - 1) // n
        assert np.exp(log_z) == pytest.approx(want, rel=1e-12)
        if n <= 6:
            assert len(projective_trees(n)) == want


def test_viterbi_matches_enumeration():
    rng = np.random.default_rng(3)
    for n_words, n_types in [(1, 2), (2, 2), (3, 3), (4, 2), (5, 3), (6, 2)]:
        tables = random_log_tables(rng, n_types, 0.5)
        tags, offsets = one_sentence(rng.integers(0, n_types, n_words))
        heads, log_best = dmv_parse(tags, offsets, *tables)
        trees = projective_trees(n_words)
        weights = [tree_log_weight(list(tags), t, *tables) for t in trees]
        np.testing.assert_array_equal(heads, trees[int(np.argmax(weights))])
        assert log_best[0] == pytest.approx(max(weights), rel=1e-12)


def test_sampler_matches_exact_tree_probabilities():
    rng = np.random.default_rng(11)
    tables = random_log_tables(rng, 3, 0.5)
    sentence = [1, 0, 2, 0, 1]
    n_draws = 30_000
    tags = np.tile(np.array(sentence, dtype=np.int32), n_draws)
    offsets = np.arange(0, tags.size + 1, len(sentence), dtype=np.int64)
    heads, counts, log_z = dmv_sample(tags, offsets, *tables, seed=5)
    want_log_z, trees, prob, _, _, _ = exact_posterior(sentence, *tables)
    index = {t: k for k, t in enumerate(trees)}
    drawn = heads.reshape(n_draws, len(sentence))
    # every draw is a projective tree (KeyError otherwise)
    freq = np.bincount([index[tuple(row)] for row in drawn.tolist()], minlength=len(trees))

    def chi_square_p(observed):
        # cells expecting fewer than 5 draws are pooled into one
        expected = prob * n_draws
        small = expected < 5
        obs = np.append(observed[~small], observed[small].sum())
        exp = np.append(expected[~small], expected[small].sum())
        return stats.chisquare(obs, exp).pvalue

    assert chi_square_p(freq) > 1e-3
    assert 0.5 * np.abs(freq / n_draws - prob).sum() < 0.02
    # the test rejects a sampler that ignores the weights (uniform trees), and
    # one that draws the root right but then prefers the wrong splits
    assert chi_square_p(np.full(len(trees), n_draws / len(trees))) < 1e-6
    assert chi_square_p(n_draws * (0.9 * prob + 0.1 * prob[::-1])) < 1e-6
    # the returned counts are those of the returned trees
    want = DMVCounts.zeros(3)
    for row in drawn:
        for got, part in zip(want, tree_counts(sentence, tuple(row), 3), strict=True):
            got += part
    for got, part in zip(counts, want, strict=True):
        np.testing.assert_allclose(got, part)
    assert log_z == pytest.approx(n_draws * want_log_z)


def test_sampling_is_seeded_and_independent_of_chunking():
    rng = np.random.default_rng(2)
    tables = random_log_tables(rng, 4)
    tags, offsets = random_corpus(rng, 50, 4, 9)
    first, _, _ = dmv_sample(tags, offsets, *tables, seed=8)
    again, _, _ = dmv_sample(tags, offsets, *tables, seed=8)
    other, _, _ = dmv_sample(tags, offsets, *tables, seed=9)
    np.testing.assert_array_equal(first, again)
    assert np.any(first != other)
    one_chunk = np.zeros_like(first)
    dmv_batch_sample(8, tags, offsets, np.array([0, 50], dtype=np.int64), *tables, one_chunk)
    np.testing.assert_array_equal(first, one_chunk)


def test_tiny_weights_on_long_sentences_stay_finite():
    # every tree of n words has 1 root, n - 1 attachments, n - 1 continues and
    # 2n stops, so scaling every weight by s scales every tree by s^(4n - 1):
    # log Z shifts exactly and the posterior, hence the counts, do not change
    rng = np.random.default_rng(4)
    tables = random_log_tables(rng, 5, 0.3)
    for n, log_scale in [(40, np.log(1e-6)), (60, -100.0)]:
        tags, offsets = one_sentence(rng.integers(0, 5, n))
        counts, log_z = dmv_expected_counts(tags, offsets, *tables)
        scaled = [t + log_scale for t in tables]
        scaled_counts, scaled_log_z = dmv_expected_counts(tags, offsets, *scaled)
        assert np.isfinite(scaled_log_z)
        assert scaled_log_z == pytest.approx(log_z + (4 * n - 1) * log_scale, rel=1e-10)
        for got, want in zip(scaled_counts, counts, strict=True):
            np.testing.assert_allclose(got, want, atol=1e-9)
        _, head_marginals, _ = sentence_posteriors(tags, scaled)
        np.testing.assert_allclose(head_marginals.sum(axis=1), 1.0, atol=1e-10)
        heads, log_best = dmv_parse(tags, offsets, *scaled)
        assert np.isfinite(log_best[0]) and np.sum(heads == 0) == 1


def test_counts_obey_the_tree_identities():
    rng = np.random.default_rng(6)
    n_types = 4
    tables = random_log_tables(rng, n_types)
    tags, offsets = random_corpus(rng, 30, n_types, 12)
    n_sentences, n_tokens = offsets.size - 1, tags.size
    tokens_of_type = np.bincount(tags, minlength=n_types)
    for counts in (dmv_expected_counts(tags, offsets, *tables)[0],
                   dmv_harmonic_counts(tags, offsets, n_types),
                   dmv_harmonic_counts(tags, offsets, n_types, variant="tree"),
                   dmv_random_counts(tags, offsets, n_types, seed=1)):
        assert counts.root.sum() == pytest.approx(n_sentences)
        assert counts.attach.sum() == pytest.approx(n_tokens - n_sentences)
        # one STOP per word and side; CONTINUE at valence 0 = STOP at valence 1
        stops = counts.stop[:, :, NO_DEPENDENT, STOP] + counts.stop[:, :, HAS_DEPENDENT, STOP]
        np.testing.assert_allclose(stops, tokens_of_type[:, None] * np.ones(2), atol=1e-9)
        np.testing.assert_allclose(counts.stop[:, :, NO_DEPENDENT, CONTINUE],
                                   counts.stop[:, :, HAS_DEPENDENT, STOP], atol=1e-9)
        np.testing.assert_allclose(counts.stop[..., CONTINUE].sum(), n_tokens - n_sentences, atol=1e-9)
        assert min(c.min() for c in counts) >= 0.0


def test_stored_local_posteriors_subtract_exactly():
    rng = np.random.default_rng(7)
    n_types = 3
    tables = random_log_tables(rng, n_types)
    tags, offsets = random_corpus(rng, 20, n_types, 6)
    local = LocalPosteriors.empty(offsets)
    counts, _ = dmv_expected_counts(tags, offsets, *tables, local=local)
    plain, _ = dmv_expected_counts(tags, offsets, *tables)
    for got, want in zip(counts, plain, strict=True):
        np.testing.assert_allclose(got, want, atol=1e-5)  # float32 stores
    for i in range(offsets.size - 1):
        head_marginals, none = local.sentence(i, offsets)
        sentence = list(tags[offsets[i]:offsets[i + 1]])
        np.testing.assert_allclose(head_marginals, exact_posterior(sentence, *tables)[4], atol=1e-6)
        add_posterior_counts(tags, offsets[i], len(sentence), head_marginals, none, -1.0, *counts)
    for left in counts:
        np.testing.assert_allclose(left, 0.0, atol=1e-12)


def normalise(counts):
    """Plain maximum-likelihood tables, rows along the last axis; empty rows uniform."""
    tables = []
    for c in counts:
        total = c.sum(axis=-1, keepdims=True)
        tables.append(np.log(np.where(total > 0, c / np.where(total > 0, total, 1.0), 1.0 / c.shape[-1])))
    return tables


@pytest.mark.parametrize("start", ["harmonic", "harmonic tree", "random"])
def test_em_never_lowers_the_likelihood(start):
    rng = np.random.default_rng(8)
    n_types = 4
    tags, offsets = random_corpus(rng, 25, n_types, 7)
    if start.startswith("harmonic"):
        counts = dmv_harmonic_counts(tags, offsets, n_types, variant="tree" if "tree" in start else "completion")
    else:
        counts = dmv_random_counts(tags, offsets, n_types, seed=3)
    history = []
    for _ in range(20):
        tables = normalise(counts)
        counts, log_lik = dmv_expected_counts(tags, offsets, *tables)
        history.append(log_lik)
    steps = np.diff(history)
    assert np.all(steps >= -1e-9 * np.abs(history[1:]))
    assert history[-1] > history[0] + 1.0


def test_tree_counts_and_weights_follow_the_story():
    rng = np.random.default_rng(9)
    n_types = 3
    tables = random_log_tables(rng, n_types, normalised=False)
    sentence = [2, 0, 1, 1, 0]
    tags = np.array(sentence, dtype=np.int32)
    for heads in projective_trees(5):
        heads_array = np.array(heads, dtype=np.int32)
        got = DMVCounts.zeros(n_types)
        add_tree_counts(tags, 0, 5, heads_array, 2.0, *got)
        for part, want in zip(got, tree_counts(sentence, heads, n_types), strict=True):
            np.testing.assert_array_equal(part, 2.0 * want)
        assert kernel_tree_log_weight(tags, 0, 5, heads_array, *tables) == pytest.approx(
            tree_log_weight(sentence, heads, *tables), rel=1e-12)


def test_harmonic_counts_by_hand():
    # tags A B A (A = 0, B = 1): root 1/3 each; word 0's head: 2/3 split 1 : 1/2
    # over words 1 and 2; word 1's: 1/3 to each neighbour
    counts = dmv_harmonic_counts(np.array([0, 1, 0]), np.array([0, 3]), 2)
    np.testing.assert_allclose(counts.root, [2 / 3, 1 / 3])
    attach = np.zeros((2, 2, 2))
    attach[1, 0, 0] = 4 / 9   # B takes the first A on its left
    attach[1, 1, 0] = 4 / 9   # B takes the last A on its right
    attach[0, 1, 1] = 1 / 3   # first A takes B
    attach[0, 0, 1] = 1 / 3   # last A takes B
    attach[0, 1, 0] = 2 / 9   # first A takes last A
    attach[0, 0, 0] = 2 / 9   # last A takes first A
    np.testing.assert_allclose(counts.attach, attach)
    # first A, right side: P(no dependent) = (1 - 1/3)(1 - 2/9) = 14/27, E = 5/9;
    # the last A mirrors it on the left; each A's outer side has no words
    stop = np.zeros((2, 2, 2, 2))
    for side in (0, 1):
        stop[0, side, NO_DEPENDENT] = [1 + 14 / 27, 13 / 27]
        stop[0, side, HAS_DEPENDENT] = [13 / 27, 5 / 9 - 13 / 27]
        # B: each side one word attaching with 4/9
        stop[1, side, NO_DEPENDENT] = [5 / 9, 4 / 9]
        stop[1, side, HAS_DEPENDENT] = [4 / 9, 0.0]
    np.testing.assert_allclose(counts.stop, stop, atol=1e-15)
    # a constant c weighs distances as 1 / (c + d): word 0's heads at d = 1, 2
    shifted = dmv_harmonic_counts(np.array([0, 1, 0]), np.array([0, 3]), 2, constant=1.0)
    assert shifted.attach[1, 0, 0] == pytest.approx(2 / 3 * (1 / 2) / (1 / 2 + 1 / 3) / 1)


def test_harmonic_tree_variant_is_the_posterior_under_distance_weights():
    # one type per position turns the position weights 1/(c + d) into tables
    n, c = 5, 0.5
    position = np.arange(n)
    log_attach = np.stack([-np.log(c + np.abs(position[:, None] - position[None, :]))] * 2, axis=1)
    tables = (np.zeros(n), np.zeros((n, 2, 2, 2)), log_attach)
    want = exact_posterior(list(position), *tables)[3]
    got = dmv_harmonic_counts(position, np.array([0, n]), n, constant=c, variant="tree")
    for part, expected in zip(got, want, strict=True):
        np.testing.assert_allclose(part, expected, atol=1e-12)
    with pytest.raises(ValueError, match="variant"):
        dmv_harmonic_counts(position, np.array([0, n]), n, variant="trees")


def test_random_counts_are_seeded_tree_posteriors():
    rng = np.random.default_rng(10)
    tags, offsets = random_corpus(rng, 15, 3, 6)
    local = LocalPosteriors.empty(offsets, dtype=np.float64)
    first = dmv_random_counts(tags, offsets, 3, seed=4, local=local)
    again = dmv_random_counts(tags, offsets, 3, seed=4)
    other = dmv_random_counts(tags, offsets, 3, seed=5)
    for a, b, c in zip(first, again, other, strict=True):
        np.testing.assert_array_equal(a, b)
        assert np.any(a != c)
    for i in range(offsets.size - 1):
        head_marginals, none = local.sentence(i, offsets)
        np.testing.assert_allclose(head_marginals.sum(axis=1), 1.0)
        assert np.all((none >= 0) & (none <= 1))


def test_impossible_sentences_and_bad_tables_are_reported():
    rng = np.random.default_rng(12)
    log_root, log_stop, log_attach = random_log_tables(rng, 2)
    log_root[1] = -np.inf
    log_attach[:, :, 1] = -np.inf  # type 1 can be neither root nor dependent
    tags = np.array([0, 1, 0, 0], dtype=np.int32)
    offsets = np.array([0, 2, 4])
    with pytest.raises(ValueError, match="sentence 0 has no tree"):
        dmv_expected_counts(tags, offsets, log_root, log_stop, log_attach)
    with pytest.raises(ValueError, match="sentence 0 has no tree"):
        dmv_parse(tags, offsets, log_root, log_stop, log_attach)
    log_z = dmv_log_evidence(tags, offsets, log_root, log_stop, log_attach)
    assert log_z[0] == -np.inf and np.isfinite(log_z[1])
    with pytest.raises(ValueError, match="NaN"):
        dmv_expected_counts(tags, offsets, np.full(2, np.nan), log_stop, log_attach)
    with pytest.raises(ValueError, match="log_stop"):
        dmv_expected_counts(tags, offsets, log_root, log_stop[:, 0], log_attach)
    with pytest.raises(ValueError, match=r"\[0, 2\)"):
        dmv_expected_counts(np.array([0, 2]), np.array([0, 2]), log_root, log_stop, log_attach)


def test_counting_semiring_counts_projective_trees():
    """Every weight 1: the sum chart counts the single-root projective trees, C(3n - 2, n - 1) / n
    (as many as the enumerator finds for n <= 6; 1e27 at n = 30), and the max chart's best is 1."""
    for n in (1, 2, 3, 4, 6, 30):
        w_root, w_stop, w_attach, chart, _, terms, _, _, _, _ = dmv_buffers(n)
        w_root[:] = 0.0
        w_stop[:] = 0.0
        w_attach[:] = 0.0
        count = math.comb(3 * n - 2, n - 1) // n
        if n <= 6:
            assert len(projective_trees(n)) == count
        assert dmv_inside(w_root, w_stop, w_attach, n, chart, terms, False) == pytest.approx(math.log(count),
                                                                                            rel=1e-12)
        assert dmv_inside(w_root, w_stop, w_attach, n, chart, terms, True) == 0.0
