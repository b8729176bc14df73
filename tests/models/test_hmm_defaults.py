"""HMM's alpha and beta when none are given: each learner's row of DEFAULT_PRIORS; explicit values win."""
import numpy as np
import pytest
import sklearn.base

from cvbayes import HMM
from cvbayes.models.hmm import ALGORITHMS, DEFAULT_PRIORS, DICTIONARY_PRIORS, default_priors


def test_every_learner_has_defaults_and_the_cvi2_family_shares_cvi2s():
    assert set(DEFAULT_PRIORS) == set(ALGORITHMS)
    assert DEFAULT_PRIORS["cvi3"] == DEFAULT_PRIORS["cvi2-sharded"] == DEFAULT_PRIORS["cvi2"]
    assert all(alpha > 0 and beta > 0 for alpha, beta in DEFAULT_PRIORS.values())


@pytest.mark.parametrize("algorithm", list(ALGORITHMS))
def test_unset_alpha_and_beta_are_the_learners_defaults(algorithm):
    model = HMM(5, algorithm=algorithm)
    alpha, beta = DEFAULT_PRIORS[algorithm]
    assert (model.alpha, model.beta, model.family.beta) == (alpha, beta, beta)
    assert model.transition_prior()[0][0] == alpha
    assert model.get_params()["alpha"] is None and model.get_params()["beta"] is None


def test_a_tag_dictionary_takes_the_dictionary_defaults():
    model = HMM(3, tag_dictionary=np.ones((4, 3)), algorithm="cvi1")
    assert (model.alpha, model.beta) == DICTIONARY_PRIORS
    assert HMM(3, beta=0.2, tag_dictionary=np.ones((4, 3)), algorithm="cvi1").beta == 0.2


def test_explicit_values_override_the_defaults_one_by_one():
    alpha, beta = DEFAULT_PRIORS["vb"]
    assert (HMM(5, 0.7, 0.3, algorithm="vb").alpha, HMM(5, 0.7, 0.3, algorithm="vb").beta) == (0.7, 0.3)
    assert (HMM(5, alpha=0.7, algorithm="vb").alpha, HMM(5, alpha=0.7, algorithm="vb").beta) == (0.7, beta)
    assert (HMM(5, beta=0.3, algorithm="vb").alpha, HMM(5, beta=0.3, algorithm="vb").beta) == (alpha, 0.3)
    assert default_priors("cgs", 2.0, None) == (2.0, DEFAULT_PRIORS["cgs"][1])
    with pytest.raises(ValueError, match="positive"):
        HMM(5, alpha=0.0)


def test_set_params_and_clone_follow_the_learner():
    """Defaults are resolved from the learner each time the model is (re)built, as scikit-learn rebuilds."""
    model = HMM(5, algorithm="em")
    model.set_params(algorithm="cvi1")
    assert (model.alpha, model.beta) == DEFAULT_PRIORS["cvi1"]
    twin = sklearn.base.clone(model.set_params(alpha=0.4))
    assert (twin.alpha, twin.beta) == (0.4, DEFAULT_PRIORS["cvi1"][1])


def test_unknown_learner_is_refused_before_the_priors():
    with pytest.raises(ValueError, match="unknown algorithm"):
        HMM(5, algorithm="nope")
