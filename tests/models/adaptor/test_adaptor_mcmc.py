"""The adaptor grammar sampler's hyperparameter moves: the Pitman-Yor seating probability against the
sequential restaurant, the slice sampler against exact (grid) posteriors, and the moves inside `fit`."""
import math

import numpy as np
import pytest
from scipy.special import gammaln
from scipy.stats import norm

from cvbayes.core import restaurants
from cvbayes.core.restaurants import log_hyperprior, log_seating_probability
from cvbayes.models.adaptor import AdaptorGrammar
from cvbayes.models.adaptor.hyperparameters import resample_py_parameters, slice_sample
from tests.models.adaptor.test_adaptor import started

SIZES = np.array([12, 7, 5, 4, 3, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1])


def sequential_seating(a, b, n, rng):
    """A Pitman-Yor seating of n customers and the log probability of its sequence of choices."""
    sizes, log_p = [], 0.0
    for i in range(n):
        weights = np.array([c - a for c in sizes] + [b + a * len(sizes)]) / (i + b)
        choice = int(rng.choice(len(weights), p=weights / weights.sum()))
        log_p += math.log(weights[choice])
        if choice == len(sizes):
            sizes.append(1)
        else:
            sizes[choice] += 1
    return np.array(sizes), log_p


@pytest.mark.parametrize("a, b", [(0.0, 1.5), (0.3, 0.7), (0.8, 4.0)])
def test_seating_probability_is_the_product_of_the_restaurant_choices(a, b):
    rng = np.random.default_rng(0)
    for n in (1, 5, 40):
        sizes, log_p = sequential_seating(a, b, n, rng)
        assert log_seating_probability(a, b, sizes) == pytest.approx(log_p, rel=1e-10, abs=1e-10)
        assert log_seating_probability(a, b, rng.permutation(sizes)) == pytest.approx(log_p, rel=1e-10)


def test_hyperprior_is_beta_1_1_times_a_vague_gamma():
    # Gamma(b; shape 0.01, scale 100): (0.01 - 1) log(1.5 / 0.5) - (1.5 - 0.5) / 100; Beta(1, 1) is flat
    assert log_hyperprior(0.2, 1.5) - log_hyperprior(0.7, 0.5) == pytest.approx(-0.99 * math.log(3.0) - 0.01)
    assert log_hyperprior(1.0, 1.0) == log_hyperprior(0.5, 0.0) == log_hyperprior(-0.1, 1.0) == -math.inf


def test_slice_sampler_draws_a_normal():
    rng = np.random.default_rng(1)
    x, draws = 3.0, []
    for _ in range(4000):
        x = slice_sample(lambda v: -0.5 * v * v, x, 1.0, rng)
        draws.append(x)
    draws = np.array(draws[100:])
    # the quantiles of N(0, 1); an unshrunk or one-sided bracket misses them by far more
    assert np.abs(np.quantile(draws, [0.1, 0.5, 0.9]) - norm.ppf([0.1, 0.5, 0.9])).max() < 0.08
    assert abs(draws.std() - 1.0) < 0.05


@pytest.fixture
def informative_prior(monkeypatch):
    """b ~ Gamma(shape 10, scale 0.1) for the grid tests of the sampler (the grids below write it out): it keeps
    the posterior of these small seatings on b in (0, 4), where a grid resolves it; the sampler draws from
    whatever `log_hyperprior` says."""
    monkeypatch.setattr(restaurants, "CONCENTRATION_PRIOR", (10.0, 0.1))


def grid_posterior(log_likelihood):
    """p(a, b | seating) on a 200 x 600 grid of cell midpoints (a in (0, 1), b in (0, 4))."""
    a = (np.arange(200) + 0.5) / 200
    b = (np.arange(600) + 0.5) / 150
    grid_a, grid_b = np.meshgrid(a, b, indexing="ij")
    log_p = log_likelihood(grid_a, grid_b) + 9 * np.log(grid_b) - 10 * grid_b
    p = np.exp(log_p - log_p.max())
    return grid_a, grid_b, p / p.sum()


def seating_on_grid(a, b, sizes, rising_tables=0):
    """The seating probability written out on arrays (``rising_tables`` = 1: a wrong one, for contrast)."""
    n, tables = sizes.sum(), sizes.shape[0] + rising_tables
    rising = sum(np.log(b + i * a) for i in range(1, tables))
    return rising - gammaln(b + n) + gammaln(b + 1) + sum(gammaln(c - a) - gammaln(1 - a) for c in sizes)


def test_hyperparameter_draws_match_the_grid_posterior(informative_prior):
    grid_a, grid_b, exact = grid_posterior(lambda a, b: seating_on_grid(a, b, SIZES))
    _, _, wrong = grid_posterior(lambda a, b: seating_on_grid(a, b, SIZES, rising_tables=1))
    rng = np.random.default_rng(2)
    a, b, draws = 0.9, 3.0, []
    for _ in range(6000):
        a, b = resample_py_parameters(SIZES, a, b, rng, n_rounds=1)
        draws.append((a, b))
    draws = np.array(draws[50:])
    edges = [np.linspace(0, 1, 6), np.array([0, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 10])]

    def binned(p):
        return np.histogram2d(grid_a.ravel(), grid_b.ravel(), edges, weights=p.ravel())[0]

    seen = np.histogram2d(draws[:, 0], draws[:, 1], edges)[0] / draws.shape[0]
    tv = 0.5 * np.abs(seen - binned(exact)).sum()
    means = draws.mean(0)
    exact_means = np.array([(exact * grid_a).sum(), (exact * grid_b).sum()])
    wrong_means = np.array([(wrong * grid_a).sum(), (wrong * grid_b).sum()])
    # Monte Carlo error: TV about 0.02, means about 0.005 (a) and 0.01 (b); the posterior with T
    # tables' rising factor (one too many) has a's mean 0.024 higher
    assert tv < 0.045, tv
    assert abs(means[0] - exact_means[0]) < 0.012 and abs(means[1] - exact_means[1]) < 0.03, (means, exact_means)
    assert abs(wrong_means[0] - exact_means[0]) > 0.02


def test_dirichlet_process_draws_only_b(informative_prior):
    sizes = np.array([5, 3, 1, 1])
    rng = np.random.default_rng(3)
    b, draws = 1.0, []
    for _ in range(4000):
        a, b = resample_py_parameters(sizes, 0.0, b, rng, sample_discount=False, n_rounds=1)
        assert a == 0.0
        draws.append(b)
    grid = (np.arange(4000) + 0.5) / 1000
    log_p = 3 * np.log(grid) - gammaln(grid + 10) + gammaln(grid + 1) + 9 * np.log(grid) - 10 * grid
    p = np.exp(log_p - log_p.max())
    p /= p.sum()
    cdf = np.cumsum(p)
    quantiles = [grid[np.searchsorted(cdf, q)] for q in (0.1, 0.5, 0.9)]
    assert np.abs(np.quantile(draws, [0.1, 0.5, 0.9]) - quantiles).max() < 0.04


def test_fit_samples_the_hyperparameters_reproducibly():
    utterances = [list(u) for u in ("abcd", "ab", "cd", "abcdab", "cdcd", "ab")]
    fits = [AdaptorGrammar("colloc", a=0.0, estimate_hyperparameters=True, algorithm="mcmc", n_iter=3,
                           random_state=5).fit(utterances) for _ in range(2)]
    model = fits[0]
    assert np.array_equal(model.concentration, fits[1].concentration)
    assert np.array_equal(model.concentration, model.learner_.sampler.state.concentration) and np.all(model.concentration != 1.0)
    assert np.all(model.discount == 0.0) and np.all(model.learner_.sampler.state.discount == 0.0)   # a = 0 stays a DP
    py = AdaptorGrammar("unigram", a=0.5, b=2.0, estimate_hyperparameters=True, algorithm="mcmc", n_iter=3,
                        random_state=5).fit(utterances)
    assert py.discount[0] != 0.5 and py.concentration[0] != 2.0
    assert (py.discount[0], py.concentration[0]) == (py.learner_.sampler.state.discount[0], py.learner_.sampler.state.concentration[0])
    assert np.isfinite(py.history_[-1].objective)


@pytest.mark.parametrize("resample_tables", [False, True])
def test_seating_bookkeeping_drains_to_an_empty_state(monkeypatch, resample_tables):
    """After sweeps with nested adapted nonterminals (colloc: cached collocations hold word tables), the
    tables tile the customers, every utterance's words tile it, and taking every utterance out (with
    the content of every table that empties) leaves zero counts, no tables and no stored parse; so too
    with the table-label move, which splices new contents into copies of the trees."""
    from cvbayes.models.adaptor.sampler import N_FREE, TABLE_CUSTOMERS, TABLE_YIELD, YIELD_HEAD, Sampler
    monkeypatch.setattr(Sampler, "initial_tables", 2)     # the pool grows
    utterances = [list(u) for u in ("abcd", "ab", "cd", "abcdab", "cdcd", "ab", "abab", "cdab", "dcba", "abcdcd")]
    model = AdaptorGrammar("colloc", a=0.3, b=0.5, algorithm="mcmc", n_iter=30, random_state=2,
                           resample_tables=resample_tables).fit(utterances)
    sampler = model.learner_.sampler
    state, pool = sampler.state, sampler.pool
    open_tables = np.flatnonzero(pool[TABLE_CUSTOMERS] > 0)
    per_yield = np.bincount(pool[TABLE_YIELD][open_tables], weights=pool[TABLE_CUSTOMERS][open_tables],
                            minlength=state.customers.shape[0])
    assert np.array_equal(per_yield, state.customers)
    assert np.array_equal(np.bincount(pool[TABLE_YIELD][open_tables], minlength=state.tables.shape[0]), state.tables)
    for x in range(2):
        assert sampler.table_sizes(x).sum() == state.total_customers[x] and sampler.table_sizes(x).shape[0] == state.total_tables[x]
    assert state.total_tables[0] > 0 and any(len(words) > 1 for words in model.segmentation_)
    for utterance, words in zip(utterances, model.segmentation_):
        assert [s for word in words for s in word] == utterance
    for i in range(len(utterances)):
        sampler._remove(i)
    for name in ("counts", "row_totals", "customers", "tables", "total_customers", "total_tables"):
        assert not np.any(getattr(state, name)), name
    assert pool[N_FREE][0] == pool[TABLE_CUSTOMERS].shape[0] and np.all(pool[YIELD_HEAD] == -1)
    assert not sampler.trees and not sampler.references


def test_annealing_schedule_falls_geometrically_to_one():
    from cvbayes.models.adaptor import annealing_temperature
    temperatures = [annealing_temperature(sweep, 8.0, 4) for sweep in range(6)]
    assert temperatures == pytest.approx([8.0, 4.0, 2.0, 1.0, 1.0, 1.0])
    assert annealing_temperature(0, 5.0, 1) == annealing_temperature(3, 1.0, 10) == 1.0


@pytest.mark.parametrize("temperature", [1.0, 3.0])
def test_annealed_steps_target_the_tempered_conditional(temperature):
    """On one utterance (the others' state is then empty) the MH chain at temperature T visits each parse
    with probability proportional to p(parse)^(1/T), p the sequential probability `log_target` (checked
    against enumeration at T = 1 in tests/models/adaptor/test_adaptor.py)."""
    from cvbayes.models.adaptor.sampler import BEGIN, END, SYMBOL, log_target
    model = started(AdaptorGrammar("unigram", a=0.0, b=1.0, alpha=0.5, algorithm="mcmc", random_state=3),
                    [list("abab")])
    sampler = model.learner_.sampler
    word = model.grammar_.nonterminals.index("Word")

    def segmentation(nodes):
        return tuple((int(r[BEGIN]), int(r[END])) for r in nodes if r[SYMBOL] == word)

    sampler._remove(0)
    log_p = {}
    for _ in range(300):    # every parse of "abab" from the (unannealed) proposal on the empty state
        nodes, _ = sampler._propose(0)
        log_p[segmentation(nodes)] = log_target(sampler.state, nodes, sampler.scratch)
    assert len(log_p) == 8
    sampler._commit(0, nodes)
    seen = {}
    n_steps = 4000
    for _ in range(n_steps):
        sampler.step(0, temperature)
        key = segmentation(sampler.trees[int(sampler.current[0])])
        seen[key] = seen.get(key, 0) + 1

    def tempered(power):
        weights = {k: np.exp(v * power) for k, v in log_p.items()}
        total = sum(weights.values())
        return {k: w / total for k, w in weights.items()}

    exact = tempered(1.0 / temperature)
    tv = 0.5 * sum(abs(seen.get(k, 0) / n_steps - p) for k, p in exact.items())
    assert tv < 0.04, (tv, exact, seen)
    if temperature != 1.0:    # far from the untempered conditional (which an unannealed step would give)
        untempered = tempered(1.0)
        assert 0.5 * sum(abs(untempered[k] - p) for k, p in exact.items()) > 0.1


def test_annealed_fit_steps_at_the_schedules_temperatures(monkeypatch):
    from cvbayes.models.adaptor.sampler import Sampler
    seen = []
    step = Sampler.step
    monkeypatch.setattr(Sampler, "step", lambda self, i, temperature=1.0: (
        seen.append(temperature), step(self, i, temperature))[1])
    utterances = [list(u) for u in ("abab", "ab", "ba")]
    AdaptorGrammar("unigram", anneal=(4.0, 3), algorithm="mcmc", n_iter=4).fit(utterances)
    assert seen == [4.0] * 3 + [2.0] * 3 + [1.0] * 6
    with pytest.raises(ValueError, match="anneal"):
        AdaptorGrammar("unigram", anneal=(0.5, 3))


def test_table_label_move_samples_the_exact_conditional_of_the_content():
    """The table-label move (`Sampler.relabel`) alone, run on the collocation "abc" of a colloc sampler
    on "abc" and "a" (a = 0.5, b = 0.1), visits each content of its table (its words, and whether its
    "a" sits at the other utterance's table) with probability p(state) / sum p, p the exact joint
    (`log_joint`: Dirichlet-multinomial base counts and Pitman-Yor seatings; every content has one
    seating, so p(state) is the probability of its labels).  The proposal's own distribution (every
    draw accepted) is far from it."""
    from cvbayes.models.adaptor.sampler import BEGIN, CACHED, END, SYMBOL, TABLE, content_of, log_proposal
    model = started(AdaptorGrammar("colloc", a=0.5, b=0.1, alpha=0.5, algorithm="mcmc", random_state=4),
                    [list("abc"), list("a")])
    sampler = model.learner_.sampler
    colloc, word = (model.grammar_.nonterminals.index(name) for name in ("Colloc", "Word"))
    while True:      # utterance 0 one collocation at a table of its own
        nodes = sampler.trees[int(sampler.current[0])]
        collocs = np.flatnonzero(nodes[:, SYMBOL] == colloc)
        if collocs.shape[0] == 1 and not nodes[collocs[0], CACHED]:
            break
        sampler.step(0)
    k = int(collocs[0])
    t = int(nodes[k, TABLE])

    def content_key():
        nodes = sampler.trees[int(sampler.current[0])]
        return tuple((int(r[BEGIN]), int(r[END]), int(r[CACHED])) for r in nodes if r[SYMBOL] == word)

    seen, log_p, contents = {}, {}, {}
    n_moves = 6000
    for _ in range(n_moves):
        sampler.relabel(t)
        key = content_key()
        seen[key] = seen.get(key, 0) + 1
        if key not in log_p:
            log_p[key] = sampler.log_joint()
            contents[key] = content_of(sampler.trees[int(sampler.current[0])], k)
    # abc, ab c, a bc, a b c, with the a new or at the other utterance's table
    assert len(seen) == 6 and sum(key[0][2] for key in seen) == 2, seen

    def normalised(log_weights):
        weights = {key: np.exp(v - max(log_weights.values())) for key, v in log_weights.items()}
        return {key: w / sum(weights.values()) for key, w in weights.items()}

    exact = normalised(log_p)
    tv = 0.5 * sum(abs(seen[key] / n_moves - p) for key, p in exact.items())
    assert tv < 0.05, (tv, exact, seen)     # 0.014 in this run
    # the proposal of the same rest (the content taken out): the distribution if every draw were accepted
    tree, s = int(sampler.current[0]), int(sampler.pool[1][t])
    sampler._release(sampler._take_out(tree, k))
    colloc_x = int(sampler.layout.cache_of[s])
    _, table = sampler._draw(sampler._relabelling.rooted[colloc_x], 0, *sampler.batch.sentence(0), s, 1.0, "abc")
    proposal = normalised({key: log_proposal(nodes, table) for key, nodes in contents.items()})
    assert 0.5 * sum(abs(proposal[key] - p) for key, p in exact.items()) > 0.15     # 0.21


def test_table_label_move_is_the_samplers_only():
    with pytest.raises(ValueError, match="resample_tables .*mcmc"):
        AdaptorGrammar("colloc", resample_tables=True)
    model = AdaptorGrammar("colloc", algorithm="mcmc", resample_tables=True)
    assert model.settings()["resample_tables"] is True
    with pytest.raises(ValueError, match="resample_tables"):
        model.set_params(algorithm="vb")


@pytest.mark.parametrize("text, single", [
    ("colloc", {"Word"}), ("colloc-syllable", set()),
    ("S -> Word+\n@Word -> P P\n@Word -> P\nP -> <any:1>\n", {"Word"}),      # the length picks the rule
    ("S -> Word+\n@Word -> P P\n@Word -> P\nP -> <any>\n", set()),          # "abc" is a bc or ab c
    ("S -> Word+\n@Word -> Q\nQ -> P P\nQ -> P+\nP -> <any:1>\n", set()),  # two rules for length 2
])
def test_tables_whose_content_cannot_change_are_known_from_the_grammar(text, single):
    from cvbayes.models.adaptor.grammar import as_spec
    from cvbayes.models.adaptor.layout import augmented_grammar
    from cvbayes.models.adaptor.sampler import single_parse_nonterminals
    spec = as_spec(text)
    assert single_parse_nonterminals(augmented_grammar(spec), set(spec.adapted)) == single
