"""HDP-HMM with collapsed variational inference (thesis chapter 5; Wang and Blunsom,
Stochastic Collapsed Variational Inference for Sequential Data).

The transitions of every state j (and of the start state, restaurant 0) are
DP(sigma, pi) draws around a top-level stick pi ~ GEM(gamma) (eq. 5.1-5.9).
With the direct-assignment truncation at level K (§5.3), CVI is the finite
HMM's CVI-2 (or CVI-3 on one long sequence) with the symmetric alpha replaced
by sigma G[pi_k] (eq. 5.37-5.39).  The HDP-HMM is the finite HMM with two other
parts (models/hdp.py): the transition part of that prior, and an occupancy
strategy that fills the q(C = 0) blocks of the updates (§5.4) and after every
pass (batch CVI) or minibatch step (SCVI) runs the HDP updates: table counts
(eq. 5.35), the sticks (eq. 5.25-5.26), gamma (eq. 5.17) and sigma (eq. 5.20),
or their gradient steps (eq. 5.40).
"""
import numpy as np

from ..chains.forward_backward import chain_buffers, chain_marginals, fill_rows_from_table
from ..chains.occupancy import METHODS
from ..core.rules import MEAN, VB
from ..schedules import Algorithm, leave_one_out, stochastic
from . import hdp
from .hmm import HMM, SEQUENCE
from .hmm_structures import ChainData

ALGORITHMS = {
    "cvi": Algorithm(leave_one_out, MEAN, SEQUENCE, "thesis eq. 5.37-5.39 (CVI-3 on subchains)"),
    "scvi": Algorithm(stochastic, MEAN, SEQUENCE, "thesis eq. 5.40 (SCVI-2 / SCVI-3)"),
    "svi-p": Algorithm(stochastic, VB, SEQUENCE, "Johnson and Willsky 2014"),
}

# init="perturbed": the sd of the log-normal spread of every state's emission row around the
# corpus's word frequencies (see HDPHMM.perturbed_start)
START_SPREAD = 0.1
# its draws come from the stream (seed, START_STREAM), apart from the seed's other uses
START_STREAM = 51

OBJECTIVES = {
    "cvi": "sum over sequences (or subchains) of log Z under the surrogate parameters of eq. 5.38-5.39: "
           "a leave-one-sequence-out predictive log-likelihood",
    "scvi": "per-token log Z of the pass's minibatch chains under the surrogate parameters (eq. 5.38)",
    "svi-p": "per-token log Z of the pass's minibatch chains under the VB tables exp E[log theta] "
             "(not a bound: no KL term)",
}


class HDPHMM(HMM):
    """HDP-HMM, truncated at K states, learned by collapsed VI (thesis §5.3).

    Parameters
    ----------
    n_states : int
        Truncation level K (an upper bound on the states used).
    gamma, sigma : float
        Concentrations of the top-level stick pi ~ GEM(gamma) and of every
        transition row ~ DP(sigma, pi); their starting values when learned.
    beta : float
        The symmetric Dirichlet(beta) prior of every categorical emission row;
        with ``learn_emission_prior`` the concentration of Dir(beta tau), tau
        starting uniform (beta / W a word).  Ignored for Gaussian emissions.
    emission : "categorical", "gaussian" or a family instance.  A Gaussian
        HDP-HMM is the DP-HMM of lexicon discovery from speech (Stengel-Eskin 2017).
    occupancy : one of "exact", "mean_field", "sampling", "heuristic"
        How q(C^i_jk = 0) is computed (§5.4); the heuristic (eq. 5.67) is as
        accurate as the others in the thesis's tests and costs O(T K^2).
    n_samples : int
        Samples per sequence of the "sampling" method (eq. 5.65).
    learn_concentrations : bool
        Update gamma and sigma (eq. 5.17, 5.20); the sticks are always updated.
    burn_in : int
        Passes (batch CVI) before gamma and sigma (and beta, tau) are learned.
        From a random start every state's transitions look alike, which the
        data explain best by an ever larger sigma; that would freeze the states
        before they separate, so the concentrations wait until they have.
        SCVI has no burn-in: it moves gamma and sigma from the first minibatch.
    learn_emission_prior : bool
        Update beta and tau (§5.5.3, following Teh et al. 2008), categorical
        emissions only.  Batch CVI updates them after every pass past
        ``burn_in``; SCVI batch-updates them after every pass over the data, as
        the thesis does, from the global emission counts and the running
        prod_t (1 - q(z_t = k)) over every word's tokens (eq. 5.46); svi-p
        does not learn them.
    first_alpha, first_word_prior : float, optional
        Batch CVI only: the transition pseudo-count of every state (instead of
        sigma G[pi_k]) and the emission pseudo-count of every word in the
        first pass; from the second pass on the model's own priors hold.  The
        thesis starts §5.4.4 from G[pi_k] = 1/K (``first_alpha`` = sigma / K)
        and §5.5.3 from the finite HMM's 0.1 "for the first iteration for fair
        comparisons".
    merge : {None, "auto"}
        Batch CVI only: "auto" tries moves every ten passes (`cvbayes.models.hdp.MovingSweep`; Hughes,
        Kim and Sudderth 2015): merging the pairs of states whose expected counts are likelier as one
        state's (eq. 5.10 and 3.24 at the expected counts) and deleting the states with the fewest
        expected tokens (their mass to the other states); of the passes run from each moved state, the
        one with the highest collapsed bound (`cvbayes.models.hdp.collapsed_bound`: log p(x, z) at the
        expected counts plus the entropy of q) is kept when it is no lower than the same pass without a
        move, then and three passes later.  Redundant copies of a state then go in a few passes instead
        of hundreds; ``history_`` stays the learner's objective (the sum of log Z), which a kept move
        may lower.
    algorithm : {"cvi", "scvi", "svi-p"}
        "cvi" (the default) is batch CVI (CVI-2 on many sequences, CVI-3 on
        subchains of one long sequence); "scvi" the stochastic version
        (SCVI-2/SCVI-3); "svi-p" the uncollapsed stochastic VB baseline with a
        point estimate of the top-level stick (Johnson and Willsky 2014), whose
        beta (``top_weights_``) moves rho of the way to its optimum each step;
        gamma and sigma stay fixed there.
    init : {"perturbed", "local", "params"}, dict or None
        None (the default) is "perturbed" for batch CVI with categorical
        emissions and the HMM's default otherwise (from nearly equal states,
        15 passes of SCVI or svi-p on small data stay near them).  "perturbed"
        (`perturbed_start`): all states alike but for a small random spread of
        their emission rows, shared by every token of a word.  "local" is the
        thesis's start (footnote 5, §5.5.1: q(z_t | z_{t-1}) ∝ U[0, 1] for every
        token independently); averaged over many tokens its states are nearly
        equal, and CVI needs about 130 passes on Fig. 5.7's data before they
        separate, against about 30 from "perturbed" (issue 15).  "params" (the
        finite HMM's Dirichlet(1) parameters) separates the states at once but
        splits true states into copies that CVI merges only slowly or never.
    n_iter, n_init, random_state, batch_size, kappa, tau0, subchain_length, buffer, vanilla
        As the `HMM`'s.

    Attributes (after fit)
    ----------------------
    gamma_, sigma_ : the learned concentrations; ``sticks_`` the Beta(u, v) of
    every stick; ``n_effective_states_`` the fewest states that decoding
    (``decode``, max posterior marginals) gives 99 % of the training tokens
    (footnote 4's count, on what decoding uses); ``hyper_history_`` one dict a
    pass (gamma, sigma, beta when learned, ``effective_states``: footnote 4's
    count on the expected tokens; batch CVI adds the hyperparameter objective
    before and after its update and ``decoded_states``: the count on the
    states the pass's local marginals q(z_t) put first).
    After every pass the sticks are ordered by the states' expected tokens
    (footnote 4): ``sticks_.order`` lists the states from the most used.
    """

    MODEL_NAME = "hdp-hmm"
    ALGORITHMS = ALGORITHMS
    DEFAULT_SUBCHAIN = {"cvi": 50, "scvi": 10}
    OBJECTIVES = OBJECTIVES
    FIT_OPTIONS = ("lengths",)

    def __init__(self, n_states, gamma=1.0, sigma=1.0, beta=1.0, emission="categorical", occupancy="heuristic",
                 n_samples=1000, learn_concentrations=True, learn_emission_prior=False, burn_in=100,
                 first_alpha=None, first_word_prior=None, merge=None, *, algorithm="cvi", n_iter=50, n_init=1, random_state=0,
                 init=None, batch_size=100, kappa=0.5, tau0=1.0, subchain_length=None, buffer=10, vanilla=False):
        self._keep_params(locals())
        if not gamma > 0 or not sigma > 0:
            raise ValueError("gamma and sigma must be positive")
        if occupancy not in METHODS:
            raise ValueError(f"unknown occupancy method {occupancy!r}; choose one of {', '.join(METHODS)}")
        self._check_chain_params(n_states, beta, emission)
        # the finite HMM's alpha is unused: sigma G[pi] is the transition prior
        self.alpha = self.sigma / self.n_states
        self.tag_dictionary = None
        if not (init is None or isinstance(init, dict) or init in ("perturbed", "params", "local", "random")):
            raise ValueError("init must be 'perturbed', 'params', 'local' (or its alias 'random') or a dict")
        if learn_emission_prior and not self.family.discrete:
            raise ValueError("learn_emission_prior needs categorical emissions")
        if learn_emission_prior and algorithm == "svi-p":
            raise ValueError("learn_emission_prior is supported by batch CVI and SCVI, not svi-p")
        if first_word_prior is not None and not self.family.discrete:
            raise ValueError("first_word_prior needs categorical emissions")
        if init == "perturbed" and not self.family.discrete:
            raise ValueError("init='perturbed' needs categorical emissions")
        if merge not in hdp.MERGES:
            raise ValueError(f"merge must be one of {', '.join(map(repr, hdp.MERGES))}, got {merge!r}")
        if merge is not None and algorithm != "cvi":
            raise ValueError("merge moves are batch CVI's (algorithm='cvi')")
        self.gamma = float(gamma)
        self.sigma = float(sigma)
        self.n_samples = int(n_samples)
        self.burn_in = int(burn_in)
        self.first_alpha = None if first_alpha is None else float(first_alpha)
        self.first_word_prior = None if first_word_prior is None else float(first_word_prior)

    # ------------------------------------------------------------ the HDP's parts
    def _parts(self, run=None):
        """The finite HMM's parts with the HDP's transition part (sigma G[pi_k], eq. 5.38) and, in a run of
        fit, its occupancy strategy (`cvbayes.models.hdp.HDPOccupancy`), from the sticks' prior; outside
        one the transition part of the fitted sticks (``sticks_``, svi-p's ``top_weights_``)."""
        parts = super()._parts()
        if run is None:
            sticks = getattr(self, "sticks_", None) or hdp.Sticks.prior(self.n_states, self.gamma, self.sigma)
            return parts._replace(transitions=hdp.HDPTransitions(self.n_states, sticks, self.sigma,
                                                                 getattr(self, "top_weights_", None)))
        top_weights = hdp.gem_mean(self.n_states, self.gamma) if run.algorithm == "svi-p" else None
        transitions = hdp.HDPTransitions(self.n_states, hdp.Sticks.prior(self.n_states, self.gamma, self.sigma),
                                         self.sigma, top_weights)
        occupancy = hdp.HDPOccupancy(transitions, self.family, self.occupancy, self.n_samples,
                                     self.learn_concentrations, self.learn_emission_prior, self.burn_in, self.beta,
                                     self.first_alpha, self.first_word_prior, first_pass=run.algorithm == "cvi",
                                     gamma=self.gamma)
        occupancy.track(run.checkpoint)
        self.sticks_, self.top_weights_, self.hyper_history_ = transitions.sticks, top_weights, occupancy.history
        return parts._replace(transitions=transitions, occupancy=occupancy)

    def _collapsed(self, training, run):
        """Batch CVI's sweep (the finite HMM's), with merge and delete moves when ``merge`` is "auto"."""
        sweep = super()._collapsed(training, run)
        return sweep if self.merge is None else hdp.MovingSweep(sweep)

    def transition_prior(self):
        """(sigma G[pi_k] (K,), sigma): the surrogate's prior of eq. 5.38; for svi-p,
        sigma beta_k with the point-estimated top level beta."""
        return self._parts().transitions.prior()

    def _start(self, training, seed):
        init = self.init
        if init is None:
            init = "perturbed" if self.family.discrete and self.algorithm == "cvi" else "params"
        if init == "perturbed":
            return self.perturbed_start(training.corpus, seed)
        return self._start_of(init, training, seed)

    def perturbed_start(self, corpus, seed):
        """The parameters of ``fit(init="perturbed")``: start and transition rows uniform, and
        every state's emission row the corpus's word frequencies (add-one smoothed) times
        exp(START_SPREAD e_kw), e_kw ~ N(0, 1), renormalised; drawn from their own stream of
        ``seed``.

        Under uniform transitions the first forward-backward pass gives every token
        q(z_t = k) ∝ phi_kw of its word w (eq. 5.37 with flat theta): nearly equal states, as
        in footnote 5's start, but the spread is shared by all of a word's tokens, so it does
        not average out over the corpus as independent U[0, 1] draws do (their spread falls
        as one over the square root of a state's tokens).
        """
        if not self.family.discrete:
            raise ValueError("init='perturbed' needs categorical emissions")
        rng = np.random.default_rng([seed, START_STREAM])
        k = self.n_states
        frequencies = np.bincount(corpus.observations, minlength=self.family.n_symbols) + 1.0
        emissions = frequencies * np.exp(START_SPREAD * rng.standard_normal((k, frequencies.shape[0])))
        emissions /= emissions.sum(axis=1, keepdims=True)
        return {"startprob": np.full(k, 1.0 / k), "transmat": np.full((k, k), 1.0 / k), "emissionprob": emissions}

    # ------------------------------------------------------------ analysis
    def chain_posteriors(self, X, lengths=None):
        """Every sequence's q(z^i) as a Markov chain (eq. 5.48-5.49): a list of
        (q(z_1) (K,), q(z_t | z_{t-1}) (T-1, K, K)) under the fitted surrogate
        parameters; the input of the §5.4 comparisons (chains/occupancy.py)."""
        corpus = self._prepare_input(X, lengths)
        start, trans, table, offset = self.tables_from_params(self._fitted_params(), corpus)
        data = ChainData(self._parts(), corpus)
        longest = int(np.diff(data.offsets).max(initial=1))
        lik, fwd, bwd, gamma = chain_buffers(longest, self.n_states)
        chains = []
        for begin, end in zip(data.offsets[:-1], data.offsets[1:]):
            n_steps = int(end - begin)
            fill_rows_from_table(table, offset, data.mask, data.index, begin, end, lik)
            chain_marginals(start, trans, lik, n_steps, fwd, bwd, gamma)
            # q(z_t = k | z_{t-1} = j) ∝ theta_jk lik_t(k) beta_t(k): beta holds lik beta / c
            conditionals = trans[None] * bwd[1:n_steps, None, :]
            conditionals /= conditionals.sum(axis=2, keepdims=True)
            chains.append((gamma[0].copy(), conditionals))
        return chains

    # ------------------------------------------------------------- fitted
    def _set_fitted(self, counts, rule, training=None):
        """The finite HMM's estimates, and during fit ``n_effective_states_``: the states that
        decoding (max posterior marginals) gives 99 % of the training tokens (footnote 4's count
        on the decoded states), and the learned ``gamma_`` and ``sigma_``.  Footnote 4 counts expected
        tokens (``hyper_history_``); the two differ while states are still nearly equal: the expected
        tokens then spread over all of them, but decoding takes the same one or few for every token."""
        super()._set_fitted(counts, rule)
        if training is not None:
            states = self._decode_corpus(training.corpus, "mpd")
            self.n_effective_states_ = hdp.effective_states(np.bincount(states, minlength=self.n_states))
            self.gamma_, self.sigma_ = self.sticks_.gamma, self.sticks_.sigma

    def _saved(self):
        meta, arrays = super()._saved()
        meta.update(gamma=self.gamma, sigma=self.sigma, occupancy=self.occupancy, n_samples=self.n_samples,
                    learned=[self.sticks_.gamma, self.sticks_.sigma], n_effective_states=self.n_effective_states_)
        arrays["sticks"] = np.vstack([self.sticks_.u, self.sticks_.v, self.sticks_.order])
        if self.top_weights_ is not None:   # svi-p's point estimate of the top level: the fitted prior
            arrays["top_weights"] = self.top_weights_
        if self.family.discrete and self.family.tau is not None:
            arrays["tau"] = self.family.tau
        return meta, arrays

    @classmethod
    def _from_config(cls, meta, arrays, family):
        model = cls(meta["n_states"], meta["gamma"], meta["sigma"], family.beta if family.discrete else 1.0,
                    emission=family, occupancy=meta["occupancy"], n_samples=meta["n_samples"])
        model.sticks_ = hdp.Sticks(arrays["sticks"][0], arrays["sticks"][1], *meta["learned"],
                                   order=arrays["sticks"][2].astype(np.int64))
        model.top_weights_ = arrays.get("top_weights")
        model.gamma_, model.sigma_ = meta["learned"]
        model.n_effective_states_ = meta.get("n_effective_states")  # None in files saved before issue 15
        if "tau" in arrays:
            family.set_prior(family.beta, arrays["tau"])
        return model
