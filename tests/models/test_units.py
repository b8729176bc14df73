"""Acoustic unit discovery (cvbayes.AcousticUnits): the stick-breaking rules and the Gaussian-mixture
tables against their definitions, VB's ELBO never decreasing, CVI's update against the MEAN tables of
the other utterances' counts, the blocked Gibbs sampler against the exact posterior of a two-unit toy,
save/load, checkpoints that resume bit for bit, shards, and bad input refused before any work."""
import itertools

import numpy as np
import pytest
from scipy import integrate, stats as scipy_stats
from scipy.special import digamma

from tests.brute import unit_paths
from cvbayes import AcousticUnits
from cvbayes.chains.composite import unit_forward
from cvbayes.checkpoints import checkpoint_passes
from cvbayes.core import rules
from cvbayes.core.units import ZeroProbabilityError
from cvbayes.families.gaussian import GaussianMixture, quadratic_features
from cvbayes.models.hdp import Sticks
from cvbayes.models.units import ALGORITHMS
from cvbayes.models.units_structures import Segments, UnitCounts, Utterances, unit_expectations, unit_log_evidence
from cvbayes.models.units_kernels import update_utterance
from cvbayes.speech import spectral_change_starts
from cvbayes.synthetic import sample_acoustic_units

from tests.test_checkpoints import Interrupted, stopping_after


@pytest.fixture(scope="module")
def utterances():
    features, labels, starts = sample_acoustic_units(12, n_units=4, n_states=2, n_dims=3, mean_frames=40, seed=3)
    return features


def small(algorithm, **params):
    settings = dict(n_units=6, n_states=2, n_components=2, algorithm=algorithm, n_iter=6, random_state=1,
                    batch_size=4)
    settings.update(params)
    return AcousticUnits(**settings)


# -- the rules and the family ------------------------------------------------------------------------------

def test_stick_tables_are_the_sticks_posterior():
    counts = np.array([4.0, 0.0, 7.0, 2.0, 1.0])
    gamma = 1.7
    u, v = rules.stick_posterior(counts, gamma)
    np.testing.assert_allclose(u, 1.0 + counts[:-1])
    np.testing.assert_allclose(v, gamma + np.array([10.0, 10.0, 3.0, 1.0]))
    # VB: the HDP's geometric expectations of the free sticks (models/hdp.py), the last one the remainder
    vb = rules.stick_table(rules.VB, counts, gamma)
    np.testing.assert_allclose(np.log(vb[:-1]), Sticks(u, v, gamma, 1.0).log_weights())
    mean = rules.stick_table(rules.MEAN, counts, gamma)
    assert mean.sum() == pytest.approx(1.0) and vb.sum() < 1.0
    numba_mean = np.empty(5)
    rules.stick_mean_row(counts, gamma, numba_mean)
    np.testing.assert_allclose(numba_mean, mean)


def test_stick_marginal_is_the_chain_of_predictives():
    """log p(z_1..z_n) of a sequence of draws = sum of the MEAN predictives of each draw given the ones
    before (the sticks are integrated out exactly)."""
    draws = [2, 0, 2, 3, 2, 0, 1]
    gamma = 0.8
    counts = np.zeros(4)
    log_p = 0.0
    for z in draws:
        log_p += np.log(rules.stick_table(rules.MEAN, counts, gamma)[z])
        counts[z] += 1
    assert rules.stick_log_marginal(counts, gamma) == pytest.approx(log_p)


def test_stick_kl_by_quadrature():
    counts = np.array([3.0, 1.0, 0.0])
    gamma = 2.0
    u, v = rules.stick_posterior(counts, gamma)
    expected = 0.0
    for a, b in zip(u, v):
        q, p = scipy_stats.beta(a, b), scipy_stats.beta(1.0, gamma)
        expected += integrate.quad(lambda x: q.pdf(x) * (q.logpdf(x) - p.logpdf(x)), 0, 1)[0]
    assert rules.stick_kl(counts, gamma) == pytest.approx(expected, rel=1e-6)


def mixture_and_stats(rng, n_mixtures=3, n_components=2, n_dims=4):
    family = GaussianMixture(n_components, weight_prior=0.7, mean=rng.normal(size=n_dims), kappa=0.3, shape=1.5,
                             rate=rng.uniform(0.5, 2.0, n_dims))
    family.components.n_dims = n_dims
    family.n_mixtures = n_mixtures
    x = rng.normal(size=(50, n_dims))
    weights = rng.dirichlet(np.ones(n_mixtures * n_components), size=50) * 3.0
    return family, x, quadratic_features(x).T @ weights


@pytest.mark.parametrize("rule", [rules.VB, rules.MEAN])
def test_mixture_tables_are_the_families_tables(rule):
    """Component log densities of `GaussianMixture.table`: VB's linear form E[log N(x | mu, tau)] and
    MEAN's Student-t predictive (eq. 3.96, with the log taken once per group of dimensions) against
    their definitions (scipy's t density), plus the mixture weights' log table; the mixture rows are
    their sums and the responsibilities their shares."""
    rng = np.random.default_rng(0)
    family, x, stats = mixture_and_stats(rng)
    x[0] *= 1e25  # far out: the product overflows and the kernel falls back to a log a dimension
    table = family.table(stats, rule)
    got = family.component_log_densities(table, x)
    kappa, mu, a, b = family.components.posterior(stats)
    diff = x[:, None, :] - mu[None]
    if rule == rules.VB:
        per_dim = (0.5 * (digamma(a) - np.log(b) - np.log(2 * np.pi)) - 0.5 * a / b * diff ** 2 - 0.5 / kappa)
    else:
        per_dim = scipy_stats.t.logpdf(diff, df=2 * a, scale=np.sqrt(b * (kappa + 1) / (a * kappa)))
    expected = per_dim.sum(axis=2) + family.log_weights(stats, rule)[None]
    np.testing.assert_allclose(got[1:], expected[1:], rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(got[0], expected[0], rtol=1e-7)
    log_lik, responsibility = family.emission_rows(table, x[1:])
    mixture = expected[1:].reshape(49, 3, 2)
    log_b = np.logaddexp(mixture[..., 0], mixture[..., 1])
    np.testing.assert_allclose(log_lik, log_b, rtol=1e-10)
    np.testing.assert_allclose(responsibility.reshape(49, 3, 2), np.exp(mixture - log_b[..., None]), atol=1e-12)


@pytest.mark.parametrize("rule", [rules.VB, rules.MEAN])
def test_grouped_emission_rows_are_the_whole_rows_of_the_group(rule):
    """`GaussianMixture.emission_rows` with frame groups (a reading's unit at every frame): under the mixtures of
    a frame's group, the whole rows' densities, -inf under the others, and the whole rows' responsibilities of
    the group's components, compact; `add_statistics` scatters compact posteriors into their group's columns, the
    statistics of the whole posteriors zero off each frame's group."""
    rng = np.random.default_rng(1)
    family, x, stats = mixture_and_stats(rng, n_mixtures=6, n_components=3)
    table = family.table(stats, rule)
    groups = rng.integers(3, size=x.shape[0])
    groups[:3] = 2      # a group of several frames, and a group no frame is in
    groups[groups == 1] = 0
    log_lik, responsibility = family.emission_rows(table, x, groups, 2)
    whole_log_lik, whole_responsibility = family.emission_rows(table, x)
    mixtures = np.arange(6)[None, :] // 2 == groups[:, None]
    np.testing.assert_allclose(log_lik[mixtures], whole_log_lik[mixtures], rtol=1e-12)
    assert np.all(log_lik[~mixtures] == -np.inf)
    components = np.repeat(mixtures, 3, axis=1)
    assert responsibility.shape == (x.shape[0], 6)
    np.testing.assert_allclose(responsibility.ravel(), whole_responsibility[components], rtol=1e-12)
    posterior = rng.uniform(size=responsibility.shape)
    whole_posterior = np.zeros_like(whole_responsibility)
    whole_posterior[components] = posterior.ravel()
    got = np.ones((family.n_stats(), 18))
    family.add_statistics(got, x, posterior, groups, 2)
    np.testing.assert_allclose(got, 1.0 + quadratic_features(x).T @ whole_posterior, rtol=1e-12)


# -- VB, CVI, the sampler -------------------------------------------------------------------------------------

@pytest.mark.parametrize("n_states,n_components,presegment", [(2, 2, False), (1, 3, False), (3, 1, False),
                                                              (2, 2, True)])
def test_vb_elbo_never_decreases(utterances, n_states, n_components, presegment):
    model = small("vb", n_states=n_states, n_components=n_components, n_iter=25, presegment=presegment)
    model.fit(utterances)
    elbo = np.array([record.objective for record in model.history_])
    assert np.all(np.isfinite(elbo))
    assert np.all(np.diff(elbo) >= -1e-8 * np.abs(elbo[1:])), np.diff(elbo).min()
    assert elbo[-1] > elbo[0]


def test_vb_objective_is_log_z_minus_kl(utterances):
    """The first pass's objective: sum_i log Z_i under VB's tables of the start's counts, minus KL."""
    model = small("vb", n_iter=2).fit(utterances)
    assert model.n_units_used_ <= model.n_units and model.weights_.sum() == pytest.approx(1.0)
    data = Utterances(__import__("cvbayes").data.as_corpus(utterances))
    counts, log_z = unit_expectations(model.family, model.n_states, model._tables(model.counts_, rules.VB), data)
    assert np.isfinite(log_z).all()
    occupancy = counts.trans.sum(axis=1)
    np.testing.assert_allclose(occupancy.sum(), data.n_frames)
    np.testing.assert_allclose(counts.stats[0].reshape(-1, 2).sum(axis=1), occupancy)


@pytest.mark.parametrize("presegment", [False, True])
def test_cvi_update_is_forward_backward_on_the_others_mean_tables(utterances, presegment):
    """One utterance's update in numba equals forward-backward (the chain kernel) on the MEAN tables built
    in NumPy from the global counts minus that utterance's stored local statistics; afterwards the
    global counts are again the sums of the local ones."""
    model = small("cvi", n_iter=2, presegment=presegment).fit(utterances)
    from cvbayes.models.units_structures import CollapsedUnits, presegmented
    corpus = __import__("cvbayes").data.as_corpus(utterances)
    data = Utterances(corpus, presegmented(corpus, presegment))
    state = CollapsedUnits(model, data, model._tables(model.counts_, rules.MEAN), 4)
    state.sweep(0)
    i = 5
    a, b = data.offsets[i], data.offsets[i + 1]
    own = np.zeros_like(state.stats)
    for t in range(a, b):
        for k, w in zip(state.kept[t], state.kept_weight[t]):
            own[:, k] += np.float64(w) * quadratic_features(data.features[t:t + 1])[0]
    others = UnitCounts(state.units - state.local_units[i], state.trans - state.local_trans[i], state.stats - own)
    tables = model._tables(others, rules.MEAN)
    log_lik, _ = model.family.emission_rows(tables.emission, data.features[a:b])
    n = b - a
    expected = unit_forward(*tables[:3], data.log_start[a:b], log_lik, n, model.n_states,
                            np.empty((n, log_lik.shape[1])))
    assert update_utterance(state.state, i) == pytest.approx(expected, rel=1e-9)
    np.testing.assert_allclose(state.units, state.local_units.sum(axis=0, dtype=float), atol=1e-9)
    np.testing.assert_allclose(state.trans, state.local_trans.sum(axis=0, dtype=float), atol=1e-9)
    assert np.all(state.kept_weight.sum(axis=1) == pytest.approx(1.0, abs=1e-6))


@pytest.mark.parametrize("algorithm", ["cvi", "svi", "scvi", "gibbs"])
def test_every_learner_finds_the_planted_units(algorithm):
    """Well-separated planted units are found: every learner's decoded frames map many-to-one onto the
    true units with accuracy above 0.95, and the boundaries mostly agree."""
    from cvbayes.metrics import many_to_one

    features, labels, starts = sample_acoustic_units(30, n_units=5, n_states=3, n_dims=4, mean_frames=60, seed=7)
    model = AcousticUnits(n_units=10, n_states=3, n_components=1, algorithm=algorithm,
                          n_iter=40 if algorithm == "gibbs" else 10, batch_size=8, random_state=0).fit(features)
    assert np.all(np.isfinite([record.objective for record in model.history_]))
    predicted = model.predict(features)
    assert many_to_one(np.concatenate(predicted), np.concatenate(labels)) > 0.95
    segments = model.decode(features)
    for units, frames, first in zip(predicted, segments, starts):
        assert frames.starts[0] == 0 and frames.ends[-1] == units.shape[0]
        np.testing.assert_array_equal(np.repeat(frames.units, frames.ends - frames.starts), units)
    hits = sum(np.isin(np.flatnonzero(first), s.starts).sum() for first, s in zip(starts, segments))
    assert hits / sum(first.sum() for first in starts) > 0.8


@pytest.mark.parametrize("algorithm", ["vb", "cvi", "gibbs", "scvi"])
def test_presegmented_units_begin_only_at_the_candidates(utterances, algorithm):
    """With ``presegment`` a unit begins only where `spectral_change_starts` allows, in training (the
    sampler's paths) and in decoding; the candidates bar some frames, so the constraint is not empty."""
    allowed = [spectral_change_starts(x) for x in utterances]
    assert not np.concatenate(allowed).all()
    model = small(algorithm, presegment=True).fit(utterances)
    assert np.all(np.isfinite([record.objective for record in model.history_]))
    for segments, ok in zip(model.decode(utterances), allowed):
        assert ok[segments.starts].all()
    if algorithm == "gibbs":
        assert np.concatenate(allowed)[model.sample_["starts"]].all()
    unconstrained = small(algorithm).fit(utterances).decode(utterances)
    assert any(not ok[segments.starts].all() for segments, ok in zip(unconstrained, allowed))


def exact_posterior(model, utterances):
    """Every joint configuration (per utterance: composite states, unit starts, components) of a tiny corpus
    with its posterior probability, the parameters integrated out (`AcousticUnits._log_joint`)."""
    n_states, n_components = model.n_states, model.n_components
    n_composite = model.n_units * n_states
    one, ones = np.ones(model.n_units), np.ones(n_composite)
    per_utterance = []
    for x in utterances:
        options = []
        for states, starts, _ in unit_paths(one, ones, ones, np.ones((x.shape[0], n_composite)), n_states):
            for picks in itertools.product(range(n_components), repeat=x.shape[0]):
                options.append((states, starts, tuple(c * n_components + m for c, m in zip(states, picks))))
        per_utterance.append(options)
    features = np.concatenate(utterances)
    configurations, log_p = [], []
    for joint in itertools.product(*per_utterance):
        states = np.concatenate([o[0] for o in joint])
        starts = np.concatenate([o[1] for o in joint]).astype(bool)
        components = np.concatenate([o[2] for o in joint])
        units = np.bincount(states[starts] // n_states, minlength=model.n_units).astype(float)
        occupancy = np.bincount(states, minlength=n_composite).astype(float)
        stats = quadratic_features(features).T @ np.eye(n_composite * n_components)[components]
        from cvbayes.models.units_structures import transition_counts
        configurations.append(joint)
        log_p.append(model._log_joint(UnitCounts(units, transition_counts(occupancy, units, n_states), stats)))
    log_p = np.array(log_p)
    p = np.exp(log_p - log_p.max())
    return configurations, p / p.sum()


def sampled_configurations(model, utterances, n_sweeps):
    lengths = np.cumsum([0] + [x.shape[0] for x in utterances])
    seen = []

    def collect(fitted, iteration):
        sample = fitted.sample_
        seen.append(tuple((tuple(sample["states"][a:b]), tuple(sample["starts"][a:b]),
                           tuple(sample["components"][a:b])) for a, b in zip(lengths[:-1], lengths[1:])))

    model.set_params(n_iter=n_sweeps).fit(utterances, callback=collect)
    return seen


def frame_marginals(configurations, p, n_states, n_components):
    """Per frame (all utterances laid end to end): P(a unit starts there), P(its unit is 0), P(its
    component is the first of its mixture), under the distribution ``p`` over ``configurations``."""
    rows = []
    for joint in configurations:
        states = np.concatenate([o[0] for o in joint])
        starts = np.concatenate([o[1] for o in joint])
        components = np.concatenate([o[2] for o in joint])
        rows.append(np.concatenate([starts, states // n_states == 0, components % n_components == 0]))
    return np.asarray(p) @ np.array(rows, dtype=float)


@pytest.mark.slow
@pytest.mark.parametrize("n_states,n_components,lengths", [(1, 1, (3, 2)), (2, 2, (4, 2))])
def test_gibbs_samples_the_exact_posterior(n_states, n_components, lengths):
    """Two units: the sampler's configurations (every utterance's segmentation, unit labels, states and
    components jointly) after burn-in against the enumerated posterior: the total variation distance of
    the joint (108 configurations) or, when there are too many for 3,000 draws (1,280), every frame's
    marginals (a unit starts, its unit, its component), within 0.05.  The draws are correlated: the joint's
    distance is allowed three times what independent draws would leave on average."""
    rng = np.random.default_rng(2)
    utterances = [rng.normal(size=(n, 1)) + np.array([[1.5]]) * (rng.random((n, 1)) > 0.5) for n in lengths]
    model = AcousticUnits(n_units=2, n_states=n_states, n_components=n_components, algorithm="gibbs", gamma=1.3,
                          transition_prior=0.8, weight_prior=1.2, prior_kappa=0.5, prior_shape=2.0, random_state=4)
    seen = sampled_configurations(model, utterances, 3000)[100:]
    configurations, p = exact_posterior(model, utterances)
    index = {configuration: j for j, configuration in enumerate(configurations)}
    frequency = np.bincount([index[c] for c in seen], minlength=len(configurations)) / len(seen)
    if len(configurations) < 200:
        noise = 0.5 * np.sqrt(2 * p * (1 - p) / (np.pi * len(seen))).sum()
        assert 0.5 * np.abs(frequency - p).sum() < 3 * noise
    np.testing.assert_allclose(frame_marginals(configurations, frequency, n_states, n_components),
                               frame_marginals(configurations, p, n_states, n_components), atol=0.05)


def _reading_paths():
    """A small fitted model, two utterances and a reading of each, and every utterance's enumerated paths kept by
    its reading (those with the reading's unit starts and frames' units, under the posterior-mean tables), as
    (states, probability) pairs with the reading's unit starts (bool over the frames)."""
    rng = np.random.default_rng(5)
    utterances = [rng.normal(size=(5, 1)), rng.normal(size=(4, 1)) + 1.0]
    model = AcousticUnits(n_units=3, n_states=2, n_components=1, algorithm="vb", n_iter=2, random_state=0)
    model.fit(utterances)
    tables = model._fitted_tables()
    readings = [Segments(np.array([2, 0]), np.array([0, 2]), np.array([2, 5])),
                Segments(np.array([1]), np.array([0]), np.array([4]))]
    kept = []
    for x, reading in zip(utterances, readings):
        log_lik, _ = model.family.emission_rows(tables.emission, x)
        frame_units = np.repeat(reading.units, reading.ends - reading.starts)
        starts = np.isin(np.arange(x.shape[0]), reading.starts)
        paths = unit_paths(*(np.exp(table) for table in tables[:3]), np.exp(log_lik), 2)
        kept.append((starts, [(np.array(states), p) for states, begins, p in paths if np.array_equal(begins, starts)
                              and np.array_equal(np.array(states) // 2, frame_units)]))
    return utterances, model, readings, kept


def test_fit_reading_is_the_posterior_given_the_reading():
    """`fit_reading`'s statistics against enumeration: every path of each utterance under the fitted
    posterior-mean tables, kept where its unit starts and frames' units are the reading's, renormalised; the
    expected unit occurrences, state occupancies and first-order statistics of the frames."""
    utterances, model, readings, kept_paths = _reading_paths()
    units, occupancy, sums = np.zeros(3), np.zeros(6), np.zeros(6)
    for x, (starts, kept) in zip(utterances, kept_paths):
        assert len(kept) > 1   # the states within an occurrence are still latent
        total = sum(p for _, p in kept)
        for states, p in kept:
            units += p / total * np.bincount(states[starts] // 2, minlength=3)
            occupancy += p / total * np.bincount(states, minlength=6)
            sums += p / total * np.bincount(states, weights=x[:, 0], minlength=6)
    model.fit_reading(utterances, readings)
    np.testing.assert_allclose(model.counts_.units, units, atol=1e-10)
    np.testing.assert_allclose(model.counts_.trans.sum(axis=1), occupancy, atol=1e-10)
    np.testing.assert_allclose(model.counts_.stats[0], occupancy, atol=1e-10)
    np.testing.assert_allclose(model.counts_.stats[1], sums, atol=1e-10)


def test_reading_log_evidence_is_the_sum_over_the_readings_paths():
    """`reading_log_evidence` against enumeration (log sum of the probabilities of the paths with the reading's
    unit starts and frames' units, under the posterior-mean tables): less than `score_samples`, the sum over
    every path; the same numbers as `reading_expectations`' second value under both rules; -inf for a reading
    with an occurrence shorter than S frames (no path), which `reading_expectations` refuses."""
    utterances, model, readings, kept_paths = _reading_paths()
    expected = [np.log(sum(p for _, p in kept)) for _, kept in kept_paths]
    log_z = model.reading_log_evidence(utterances, readings, rules.MEAN)
    np.testing.assert_allclose(log_z, expected, rtol=1e-12)
    assert np.all(log_z < model.score_samples(utterances) - 0.1)
    for rule in (rules.MEAN, rules.VB):
        np.testing.assert_allclose(model.reading_log_evidence(utterances, readings, rule),
                                   model.reading_expectations(utterances, readings, rule)[1], rtol=0, atol=1e-9)
    impossible = Segments(np.array([2, 0]), np.array([0, 1]), np.array([1, 5]))
    log_z = model.reading_log_evidence(utterances, [impossible, readings[1]], rules.VB)
    assert log_z[0] == -np.inf and log_z[1] == model.reading_log_evidence(utterances, readings, rules.VB)[1]
    with pytest.raises(ZeroProbabilityError, match="utterance 0"):
        model.reading_expectations(utterances, [impossible, readings[1]], rules.VB)


class WholeRowsMasked:
    """A mixture family whose rows are its whole emission rows with every unit off the reading (``frame_units``,
    of every frame at once) set to -inf: `unit_expectations` without frame units on it computes the statistics
    the full-size way, (frames, U S M) component posteriors zero off the reading, the reference of the compact
    ones."""

    def __init__(self, family, frame_units, n_states):
        self.family, self.frame_units, self.n_states = family, frame_units, n_states

    def __getattr__(self, name):
        return getattr(self.family, name)

    def emission_rows(self, table, features, frame_groups=None, group_size=1):
        assert frame_groups is None and features.shape[0] == self.frame_units.shape[0], "one block, whole rows"
        log_lik, responsibility = self.family.emission_rows(table, features)
        log_lik[np.arange(log_lik.shape[1])[None, :] // self.n_states != self.frame_units[:, None]] = -np.inf
        return log_lik, responsibility


def random_readings(rng, utterances, n_units, n_states):
    """A reading of every utterance: occurrences of at least ``n_states`` frames, of units drawn uniformly."""
    readings = []
    for x in utterances:
        n_occurrences = rng.integers(1, x.shape[0] // (2 * n_states) + 1)
        cuts = np.sort(rng.choice(np.arange(1, x.shape[0] // n_states), n_occurrences - 1, replace=False)) * n_states
        starts, ends = np.append(0, cuts), np.append(cuts, x.shape[0])
        readings.append(Segments(rng.integers(n_units, size=n_occurrences), starts, ends))
    return readings


@pytest.mark.parametrize("rule", [rules.VB, rules.MEAN])
def test_reading_rows_give_the_whole_rows_masked(utterances, rule):
    """`reading_expectations` (statistics weighted and log Z) and `reading_log_evidence` from the emission rows and
    the compact component posteriors of the reading's units alone equal those from every unit's rows with the
    others masked to -inf and full-size component posteriors, in one block of utterances and in many (several
    units, states and mixture components, readings across every unit)."""
    rng = np.random.default_rng(7)
    model = small("vb", n_units=6, n_states=2, n_components=3, n_iter=4).fit(utterances)
    readings = random_readings(rng, utterances, 6, 2)
    assert len({int(u) for reading in readings for u in reading.units}) == 6
    weights = rng.uniform(0.1, 1.0, size=len(utterances))
    tables = model._tables(model.counts_, rule)
    data, frame_units = model._reading_data(utterances, readings, None)
    counts, log_z = unit_expectations(WholeRowsMasked(model.family, frame_units, 2), 2, tables, data, None, weights)
    assert np.all(np.isfinite(log_z)) and np.all(counts.units > 0)
    got = model.reading_expectations(utterances, readings, rule, weights)
    np.testing.assert_allclose(got[1], log_z, rtol=1e-9)
    np.testing.assert_allclose(model.reading_log_evidence(utterances, readings, rule), log_z, rtol=1e-9)
    data.blocks = lambda: Utterances.blocks(data, 100)
    assert len(data.blocks()) > 3
    blocked = unit_expectations(model.family, 2, tables, data, frame_units, weights)
    np.testing.assert_allclose(unit_log_evidence(model.family, 2, tables, data, frame_units), log_z, rtol=1e-9)
    for reading_counts in (got[0], blocked[0]):
        for name in UnitCounts._fields:
            np.testing.assert_allclose(getattr(reading_counts, name), getattr(counts, name), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(blocked[1], log_z, rtol=1e-9)


@pytest.mark.parametrize("reading,message", [
    (Segments(np.array([0, 1]), np.array([0, 3]), np.array([2, 5])), "do not tile its 5 frames"),
    (Segments(np.array([0]), np.array([0]), np.array([4])), "do not tile its 5 frames"),
    (Segments(np.array([0, 7]), np.array([0, 2]), np.array([2, 5])), "unit 7, outside units 0..5"),
])
def test_bad_readings_are_refused(utterances, reading, message):
    model = small("vb", n_iter=1).fit(utterances)
    good = model.decode(utterances)
    with pytest.raises(ValueError, match=f"utterance 1: .*{message}"):
        model.fit_reading([utterances[0], utterances[1][:5]], [good[0], reading])
    with pytest.raises(ValueError, match="1 readings for 2 utterances"):
        model.fit_reading(utterances[:2], good[:1])


# -- files, checkpoints, shards, bad input --------------------------------------------------------------------

def test_save_and_load_give_the_same_model(tmp_path, utterances):
    model = small("vb").fit(utterances)
    model.save(tmp_path / "units.npz")
    loaded = AcousticUnits.load(tmp_path / "units.npz")
    assert loaded.get_params() == model.get_params()
    for name in ("weights_", "stay_", "means_", "covars_", "mixture_weights_"):
        np.testing.assert_array_equal(getattr(loaded, name), getattr(model, name))
    assert [r.objective for r in loaded.history_] == [r.objective for r in model.history_]
    assert loaded.score(utterances) == model.score(utterances)
    for a, b in zip(loaded.decode(utterances), model.decode(utterances)):
        np.testing.assert_array_equal(a.units, b.units)
        np.testing.assert_array_equal(a.starts, b.starts)


@pytest.mark.parametrize("algorithm", list(ALGORITHMS))
def test_checkpoints_resume_bit_for_bit(tmp_path, utterances, algorithm):
    path = tmp_path / "run.ckpt"
    reference = small(algorithm).fit(utterances)
    with pytest.raises(Interrupted):
        small(algorithm).fit(utterances, checkpoint=path, callback=stopping_after(3))
    assert checkpoint_passes(path) == (3, False)
    resumed = small(algorithm).fit(utterances, checkpoint=path)
    assert resumed.resumed_from_ == 3
    for name in UnitCounts._fields:
        np.testing.assert_array_equal(getattr(resumed.counts_, name), getattr(reference.counts_, name))
    assert [r.objective for r in resumed.history_] == [r.objective for r in reference.history_]


@pytest.mark.parametrize("presegment", [False, True])
def test_vb_on_dask_shards_equals_one_process(utterances, presegment):
    distributed = pytest.importorskip("distributed")
    reference = small("vb", presegment=presegment).fit(utterances)
    with distributed.Client(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0") as client:
        sharded = small("vb", presegment=presegment).fit(utterances, client=client, n_shards=3)
    np.testing.assert_allclose([r.objective for r in sharded.history_], [r.objective for r in reference.history_],
                               rtol=1e-10)
    np.testing.assert_allclose(sharded.counts_.stats, reference.counts_.stats, rtol=1e-8, atol=1e-8)


@pytest.mark.parametrize("params,message", [
    ({"n_units": 0}, "n_units"), ({"n_states": 2.5}, "n_states"), ({"algorithm": "em"}, "unknown algorithm"),
    ({"gamma": -1.0}, "gamma"), ({"prior_shape": 0.5}, "prior_shape"), ({"kappa": 2.0}, "kappa"),
    ({"tau0": 0.5}, "tau0"), ({"n_iter": 0}, "n_iter"), ({"components_per_frame": 0}, "components_per_frame"),
])
def test_bad_parameters_are_refused(params, message):
    with pytest.raises(ValueError, match=message):
        AcousticUnits(**params)
    with pytest.raises(ValueError, match=message):
        AcousticUnits().set_params(**params)


def test_bad_data_is_refused_before_any_work(utterances):
    model = small("vb", n_states=3)
    with pytest.raises(ValueError, match="utterance 1 has 2 frames"):
        model.fit([np.zeros((5, 3)), np.zeros((2, 3))])
    with pytest.raises(ValueError, match="real-valued"):
        model.fit([np.arange(5)])
    with pytest.raises(ValueError, match="NaN"):
        model.fit([np.full((5, 3), np.nan)])
    with pytest.raises(ValueError, match="lengths sum"):
        model.fit(np.zeros((10, 3)), lengths=[4, 4])
    with pytest.raises(ValueError, match="takes vb"):
        small("cvi").fit(utterances, client=object())
    with pytest.raises(RuntimeError, match="not fitted"):
        model.decode(utterances)
    fitted = small("vb", n_iter=1).fit(utterances)
    with pytest.raises(ValueError, match="fitted on 3-dimensional"):
        fitted.decode([np.zeros((6, 4))])


def test_scikit_learn_clone_and_repr():
    sklearn_base = pytest.importorskip("sklearn.base")
    model = AcousticUnits(n_units=7, algorithm="scvi", kappa=0.7)
    copy = sklearn_base.clone(model)
    assert copy.get_params() == model.get_params() and copy is not model
    assert repr(model) == "AcousticUnits(n_units=7, algorithm='scvi', kappa=0.7)"
