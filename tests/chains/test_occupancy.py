"""q(C_jk = 0) (thesis §5.4): the exact algorithm and the three approximations against enumeration."""
import itertools

import numpy as np
import pytest

from cvbayes.chains.occupancy import METHODS, chain_marginals, combine, no_transition, occupied


def _random_chain(rng, n_states, n_steps, sharpness=1.0):
    first = rng.dirichlet(np.full(n_states, sharpness))
    conditionals = rng.dirichlet(np.full(n_states, sharpness), size=(n_steps - 1, n_states))
    return first, conditionals


def _enumerate_zero(weight_of_path, n_states, n_steps):
    """sum over paths of q(path) [no j -> k transition], for every (j, k)."""
    zero = np.zeros((n_states, n_states))
    for path in itertools.product(range(n_states), repeat=n_steps):
        p = weight_of_path(path)
        present = {(path[t - 1], path[t]) for t in range(1, n_steps)}
        for j in range(n_states):
            for k in range(n_states):
                if (j, k) not in present:
                    zero[j, k] += p
    return zero


def _markov_weight(first, conditionals):
    return lambda path: first[path[0]] * np.prod([conditionals[t - 1, path[t - 1], path[t]]
                                                  for t in range(1, len(path))])


@pytest.mark.parametrize("n_states,n_steps", [(2, 1), (2, 4), (3, 3), (3, 5), (4, 4)])
def test_exact_equals_enumeration(n_states, n_steps):
    rng = np.random.default_rng(n_states * 7 + n_steps)
    first, conditionals = _random_chain(rng, n_states, n_steps, sharpness=0.5)
    start_zero, zero = no_transition(first, conditionals, "exact")
    expected = _enumerate_zero(_markov_weight(first, conditionals), n_states, n_steps)
    np.testing.assert_allclose(zero, expected, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(start_zero, 1.0 - first)  # eq. 5.51


@pytest.mark.parametrize("n_states,n_steps", [(2, 3), (3, 4)])
def test_mean_field_is_exact_for_the_factorised_chain(n_states, n_steps):
    """Eq. 5.58-5.64 compute q(C = 0) exactly under q(z) = prod_t q(z_t)."""
    rng = np.random.default_rng(1)
    first, conditionals = _random_chain(rng, n_states, n_steps)
    marginals = chain_marginals(first, conditionals)
    expected = _enumerate_zero(lambda path: np.prod([marginals[t, z] for t, z in enumerate(path)]),
                               n_states, n_steps)
    _, zero = no_transition(first, conditionals, "mean_field")
    np.testing.assert_allclose(zero, expected, rtol=1e-12)


def test_heuristic_is_the_product_over_pairs_and_exact_for_one_transition():
    rng = np.random.default_rng(2)
    first, conditionals = _random_chain(rng, 3, 5)
    marginals = chain_marginals(first, conditionals)
    pairs = marginals[:-1, :, None] * conditionals
    _, zero = no_transition(first, conditionals, "heuristic")
    np.testing.assert_allclose(zero, np.prod(1.0 - pairs, axis=0), rtol=1e-12)
    first, conditionals = _random_chain(rng, 3, 2)
    np.testing.assert_allclose(no_transition(first, conditionals, "heuristic")[1],
                               no_transition(first, conditionals, "exact")[1], rtol=1e-12)


def test_sampling_agrees_with_exact_within_its_standard_error():
    rng = np.random.default_rng(3)
    first, conditionals = _random_chain(rng, 3, 6)
    exact = no_transition(first, conditionals, "exact")[1]
    n = 20_000
    sampled = no_transition(first, conditionals, "sampling", n_samples=n, seed=5)[1]
    standard_error = np.sqrt(np.maximum(exact * (1 - exact), 1e-12) / n)
    assert np.all(np.abs(sampled - exact) <= 5 * standard_error + 1e-12)


def test_marginals_of_the_chain():
    rng = np.random.default_rng(4)
    first, conditionals = _random_chain(rng, 3, 3)
    marginals = chain_marginals(first, conditionals)
    brute = np.zeros((3, 3))
    weight = _markov_weight(first, conditionals)
    for path in itertools.product(range(3), repeat=3):
        for t, z in enumerate(path):
            brute[t, z] += weight(path)
    np.testing.assert_allclose(marginals, brute, rtol=1e-12)


def test_combining_sequences_multiplies_their_zero_probabilities():
    """q(C > 0) = 1 - prod_i q(C^i = 0) (eq. 5.46), including certain transitions."""
    rng = np.random.default_rng(5)
    log_zero = np.zeros((3, 3))
    product = np.ones((3, 3))
    for _ in range(4):
        zero = no_transition(*_random_chain(rng, 3, 4), "exact")[1]
        zero[0, 0] = 0.0
        combine(log_zero, zero)
        product *= zero
    np.testing.assert_allclose(occupied(log_zero), 1.0 - product, rtol=1e-12)
    assert occupied(log_zero)[0, 0] == 1.0


def test_unknown_method_is_refused():
    with pytest.raises(ValueError, match="unknown method 'gibbs'"):
        no_transition(np.array([1.0]), np.ones((1, 1, 1)), "gibbs")
    assert METHODS == ("exact", "mean_field", "sampling", "heuristic")


def _enumerate_no_exit(first, conditionals):
    """sum over paths of q(path) [state j never occurs before the last token]."""
    n_states = first.shape[0]
    n_steps = conditionals.shape[0] + 1
    weight = _markov_weight(first, conditionals)
    zero = np.zeros(n_states)
    for path in itertools.product(range(n_states), repeat=n_steps):
        for j in range(n_states):
            if j not in path[:-1]:
                zero[j] += weight(path)
    return zero


@pytest.mark.parametrize("n_states,n_steps", [(2, 1), (2, 3), (3, 4)])
def test_exits_equal_enumeration(n_states, n_steps):
    """q(C_j. = 0) (eq. 5.44-5.45): exact by enumeration, sampling within its error,
    mean field and heuristic as the product of 1 - q(z_t = j)."""
    from cvbayes.chains.occupancy import no_exit
    rng = np.random.default_rng(10 + n_states + n_steps)
    first, conditionals = _random_chain(rng, n_states, n_steps, sharpness=0.7)
    expected = _enumerate_no_exit(first, conditionals)
    np.testing.assert_allclose(no_exit(first, conditionals, "exact"), expected, rtol=1e-12, atol=1e-14)
    marginals = chain_marginals(first, conditionals)
    factorised = np.prod(1.0 - marginals[:-1], axis=0)
    for method in ("mean_field", "heuristic"):
        np.testing.assert_allclose(no_exit(first, conditionals, method), factorised, rtol=1e-12)
    n = 20_000
    sampled = no_exit(first, conditionals, "sampling", n_samples=n, seed=3)
    assert np.all(np.abs(sampled - expected) <= 5 * np.sqrt(np.maximum(expected * (1 - expected), 1e-12) / n) + 1e-12)
