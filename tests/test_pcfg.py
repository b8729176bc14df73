"""PCFG learners against brute-force enumeration of every tree of tiny grammars (thesis eq. 4.5-4.24)."""
import itertools
import math
from collections import Counter

import numpy as np
import pytest
from scipy.special import digamma, gammaln
from test_trees import CYCLE, MORPHOLOGY, UNARY_NARY, chi_square_p_value, enumerate_trees, exact_posterior, random_weights

import cvbayes
from cvbayes import PCFG
from cvbayes.data import Corpus
from cvbayes.data.trees import tree_rule_ids
from cvbayes.models.pcfg import (RuleRows, TreeCorpus, TreeSampler, ZeroProbabilityError, has_unary_cycle,
                                 uniform_tree_table)
from cvbayes.trees import GrammarError, make_tables
from cvbayes.trees.grammar import UNARY
from cvbayes.trees.inside_outside import derivation_to_tree

CNF_SENTENCES = [s.split() for s in ["a b a", "b b", "a a b b", "b"]]
SPAN_SENTENCES = [list(w) for w in ["lebona", "bona", "kebona", "lea"]]
NARY_SENTENCES = [s.split() for s in ["the dog sees the big cat", "sees dog too", "dog sees dog"]]

CASES = {
    "cnf": (dict(n_nonterminals=2), CNF_SENTENCES),
    "span": (dict(grammar=MORPHOLOGY), SPAN_SENTENCES),
    "unary-nary": (dict(grammar=UNARY_NARY), NARY_SENTENCES),
}


# ------------------------------------------------------------------ exact references
def row_sums(compiled, values):
    return np.add.reduceat(values, compiled.row_offsets[:-1])


def per_rule(compiled, row_values):
    return np.repeat(row_values, compiled.row_sizes)


def map_table(compiled, counts, alpha):
    """eq. 4.10 with the Dirichlet mode's pseudo-counts (alpha - 1)+; an empty row is uniform."""
    pseudo = max(alpha - 1.0, 0.0)
    totals = per_rule(compiled, row_sums(compiled, counts) + compiled.row_sizes * pseudo)
    with np.errstate(invalid="ignore"):
        return np.where(totals > 0, (counts + pseudo) / totals, 1.0 / per_rule(compiled, compiled.row_sizes))


def vb_table(compiled, counts, alpha):
    """eq. 4.12."""
    totals = per_rule(compiled, row_sums(compiled, counts) + compiled.row_sizes * alpha)
    return np.exp(digamma(counts + alpha) - digamma(totals))


def mean_table(compiled, counts, alpha):
    """eq. 4.16 / 4.24."""
    return (counts + alpha) / per_rule(compiled, row_sums(compiled, counts) + compiled.row_sizes * alpha)


def dirichlet_kl(compiled, counts, alpha):
    """sum_A KL(Dir(C_A + alpha) || Dir(alpha))."""
    totals = row_sums(compiled, counts) + compiled.row_sizes * alpha
    log_geometric = digamma(counts + alpha) - digamma(per_rule(compiled, totals))
    return float((gammaln(totals) - gammaln(compiled.row_sizes * alpha)).sum()
                 - (gammaln(counts + alpha) - gammaln(alpha) - counts * log_geometric).sum())


def collapsed_log_joint(compiled, counts, alpha):
    """log p(x, z | alpha), eq. 4.13."""
    prior = compiled.row_sizes * alpha
    return float((gammaln(prior) - gammaln(prior + row_sums(compiled, counts))).sum()
                 + (gammaln(counts + alpha) - gammaln(alpha)).sum())


def exact_counts(compiled, table, sentences):
    """Every sentence's (log Z, expected counts) by enumeration."""
    return [exact_posterior(compiled, table, words)[:2] for words in sentences]


def setup(case, alpha, seed=0):
    options, sentences = CASES[case]
    model = PCFG(alpha=alpha, **options)
    compiled = model.compile(sentences)
    start = random_weights(compiled, np.random.default_rng(seed))
    return model, compiled, sentences, start


# ------------------------------------------------------------------ one update of each learner
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("alpha", [0.5, 2.0])
def test_one_em_update_matches_enumeration(case, alpha):
    model, compiled, sentences, start = setup(case, alpha)
    start_counts = sum(c for _, c in exact_counts(compiled, start, sentences))
    table = map_table(compiled, start_counts, alpha)                     # the M-step (eq. 4.10)
    exact = exact_counts(compiled, table, sentences)                     # the E-step (eq. 4.8-4.9)
    counts = sum(c for _, c in exact)
    model.set_params(algorithm="em", n_iter=1, init=start).fit(sentences)
    np.testing.assert_allclose(model.counts_, counts, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(model.rule_probs_, map_table(compiled, counts, alpha), rtol=1e-9, atol=1e-12)
    log_prior = (alpha - 1.0) * np.log(table).sum() if alpha > 1 else 0.0
    assert model.history_[0].objective == pytest.approx(sum(z for z, _ in exact) + log_prior, rel=1e-10)


@pytest.mark.parametrize("case", list(CASES))
def test_one_vb_update_matches_enumeration(case):
    alpha = 0.3
    model, compiled, sentences, start = setup(case, alpha)
    start_counts = sum(c for _, c in exact_counts(compiled, start, sentences))
    table = vb_table(compiled, start_counts, alpha)                      # eq. 4.12
    exact = exact_counts(compiled, table, sentences)
    counts = sum(c for _, c in exact)
    model.set_params(algorithm="vb", n_iter=1, init=start).fit(sentences)
    np.testing.assert_allclose(model.counts_, counts, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(model.rule_probs_, mean_table(compiled, counts, alpha), rtol=1e-9)
    elbo = sum(z for z, _ in exact) - dirichlet_kl(compiled, start_counts, alpha)
    assert model.history_[0].objective == pytest.approx(elbo, rel=1e-10)
    np.testing.assert_allclose(model._rows.table("vb", start_counts), table, rtol=1e-12)


@pytest.mark.parametrize("case", list(CASES))
def test_one_cvi_pass_matches_enumeration(case):
    alpha = 0.3
    model, compiled, sentences, start = setup(case, alpha)
    local = [c for _, c in exact_counts(compiled, start, sentences)]    # every tree's start (eq. 4.7)
    objective = 0.0
    for i, words in enumerate(sentences):                                # in order, one sentence at a time
        others = sum(local) - local[i]                                   # E[C^{\i}]
        log_z, local[i] = exact_posterior(compiled, mean_table(compiled, others, alpha), words)[:2]   # eq. 4.24
        objective += log_z
    counts = sum(local)
    model.set_params(algorithm="cvi", n_iter=1, init=start).fit(sentences)
    # the local statistics are float32
    np.testing.assert_allclose(model.counts_, counts, rtol=2e-6, atol=1e-6)
    np.testing.assert_allclose(model.rule_probs_, mean_table(compiled, counts, alpha), rtol=2e-6)
    assert model.history_[0].objective == pytest.approx(objective, rel=1e-6)
    assert model.local_memory_bytes_ > 0


@pytest.mark.parametrize("case", ["cnf", "span"])
def test_one_full_step_of_scvi_matches_enumeration(case):
    """With every sentence in the minibatch and kappa = 0 (rho = 1), a step replaces the counts by the
    expected counts under the MEAN table of the old ones (eq. 3.99, 3.103)."""
    alpha = 0.3
    model, compiled, sentences, start = setup(case, alpha)
    start_counts = sum(c for _, c in exact_counts(compiled, start, sentences))
    exact = exact_counts(compiled, mean_table(compiled, start_counts, alpha), sentences)
    model.set_params(algorithm="scvi", n_iter=1, init=start, batch_size=len(sentences), kappa=0.0).fit(sentences)
    np.testing.assert_allclose(model.counts_, sum(c for _, c in exact), rtol=1e-9, atol=1e-12)
    n_tokens = sum(len(s) for s in sentences)
    assert model.history_[0].objective == pytest.approx(sum(z for z, _ in exact) / n_tokens, rel=1e-10)


@pytest.mark.parametrize("case", ["span", "cnf"])
def test_inside_outside_survives_rules_of_tiny_weight(case):
    """Tables of MLE and VB with small priors hold rules of weight 1e-200 beside ordinary ones: a cell
    reachable only through them lies far below its children's scales (it underflowed to NaN or to an
    impossible cell before `_cell_in_logs`)."""
    rng = np.random.default_rng(12)
    if case == "span":
        compiled = PCFG(grammar=MORPHOLOGY).compile(SPAN_SENTENCES)
        words = SPAN_SENTENCES[3]                          # "lea"
        weights = random_weights(compiled, rng)
        # no nonterminal rewrites to the whole word: the top cell holds only what the binary rules build
        whole = compiled.substrings.index(compiled.vocabulary.encode(words))
        kernel = compiled.kernel
        weights[(kernel.span_base + whole)[whole < kernel.span_count]] = 0.0
        word_row = np.arange(compiled.row_offsets[0], compiled.row_offsets[1])
        weights[word_row] = 0.0
        weights[word_row[1]] = 1.0                          # only Word -> V M: one V and one Word rule a tree
        tiny = [word_row[1]] + list(range(compiled.row_offsets[compiled.nonterminals.index("V")],
                                          compiled.row_offsets[compiled.nonterminals.index("V") + 1]))
        uses = 2                                            # tiny rules in every tree
        # V's share of the top cell's @ symbols (1e-250) is below RESCALE_BELOW; Word's (1e-500) is
        # 1e-250 of theirs, representable once the cell is rescaled
        factor = 1e-250
    else:
        compiled = PCFG(n_nonterminals=2).compile(CNF_SENTENCES)
        words = ["a", "b", "a", "b"]
        weights = random_weights(compiled, rng)
        # nonterminal 1 only: S = 0 -> 1 1 at the top, 1 -> 1 1 inside; lexical rules of 0 are zero
        weights[:] = 0.0
        weights[compiled.rule_id("0", [cvbayes.data.trees.Tree("1", []), cvbayes.data.trees.Tree("1", [])])] = 1.0
        row = compiled.row_offsets[1]
        weights[row + 3] = 0.3                               # 1 -> 1 1
        weights[row + 4:compiled.row_offsets[2]] = 0.2        # 1 -> w
        tiny = [row + 3]
        uses = len(words) - 2                               # binary nodes below the root
        factor = 1e-200
    tables = make_tables(compiled, weights)
    small = weights.copy()
    small[tiny] *= factor
    base = cvbayes.trees.inside_outside(compiled, tables, words)
    result = cvbayes.trees.inside_outside(compiled, make_tables(compiled, small), words)
    assert result.log_z == pytest.approx(base.log_z + uses * math.log(factor), rel=1e-12)
    np.testing.assert_allclose(result.counts, base.counts, rtol=1e-9, atol=1e-12)
    probs = exact_posterior(compiled, weights, words)[4]
    assert base.log_z == pytest.approx(exact_posterior(compiled, weights, words)[0], rel=1e-12)
    # and trees are drawn from those cells in proportion (the sampler's splits in logs)
    small_tables = make_tables(compiled, small)
    draws = Counter(derivation_to_tree(compiled, cvbayes.trees.sample_tree(
        compiled, small_tables, words, seed), words) for seed in range(1000))
    assert chi_square_p_value(draws, probs, 1000) > 1e-3


def test_inside_outside_survives_a_subnormal_terminal_weight():
    """MLE tables hold weights down to 5e-324.  Over "ab" only R's (subnormal) rule applies, while
    the quick reference is P(a) Q(b): the cell's peak is subnormal, and x / peak, which fastmath may
    turn into x * (1 / peak), overflowed (NaN charts) until such cells went to the log-space path."""
    grammar = "S -> P Q\nP -> <any>\nQ -> <any>\nR -> <any>\n"
    words = list("abc")
    compiled = PCFG(grammar=grammar).compile([words])
    weights = np.full(compiled.n_rules, 0.3)
    def span_rule(name, text):
        family = list(compiled.kernel.span_parent).index(compiled.nonterminals.index(name))
        return compiled.kernel.span_base[family] + compiled.substrings.index(compiled.vocabulary.encode(list(text)))
    for name in "PQ":
        weights[span_rule(name, "ab")] = 0.0
    weights[span_rule("Q", "b")] = 0.0
    weights[span_rule("R", "ab")] = 3e-322
    result = cvbayes.trees.inside_outside(compiled, make_tables(compiled, weights), words)
    zeroed = weights.copy()
    zeroed[span_rule("R", "ab")] = 0.0
    want = exact_posterior(compiled, zeroed, words)
    assert result.log_z == pytest.approx(want[0], rel=1e-12)
    np.testing.assert_allclose(result.counts, want[1], rtol=1e-12, atol=1e-300)


# ------------------------------------------------------------------ objectives
def random_sentences(rng, n, words="abc", longest=7):
    return [[words[i] for i in rng.integers(0, len(words), size=rng.integers(1, longest + 1))] for _ in range(n)]


MORPH_WORDS = [list(w) for w in ["lebona", "bona", "kebona", "lea", "kea", "lebone", "bone", "kelea"]]


@pytest.mark.parametrize("case", ["cnf", "span"])
@pytest.mark.parametrize("alpha", [0.5, 1.5])
def test_em_objective_never_decreases(case, alpha):
    if case == "cnf":
        model, sentences = PCFG(n_nonterminals=3, alpha=alpha), random_sentences(np.random.default_rng(1), 30)
    else:
        model, sentences = PCFG(grammar=MORPHOLOGY, alpha=alpha), MORPH_WORDS
    model.set_params(algorithm="em", n_iter=25, random_state=2).fit(sentences)
    objectives = np.array([r.objective for r in model.history_])
    assert np.all(np.diff(objectives) >= -1e-9 * np.abs(objectives[1:]))
    assert objectives[-1] > objectives[0] + 1.0   # it learns something


@pytest.mark.parametrize("case", ["cnf", "span"])
def test_vb_elbo_never_decreases(case):
    if case == "cnf":
        model = PCFG(n_nonterminals=3, alpha=0.2)
        sentences = random_sentences(np.random.default_rng(3), 30)
    else:
        model = PCFG(grammar=MORPHOLOGY, alpha=0.01)
        sentences = MORPH_WORDS
    model.set_params(algorithm="vb", n_iter=25, random_state=4).fit(sentences)
    objectives = np.array([r.objective for r in model.history_])
    assert np.all(np.diff(objectives) >= -1e-9 * np.abs(objectives[1:]))
    assert objectives[-1] > objectives[0]


def test_mh_objective_is_the_collapsed_log_joint_of_its_counts():
    sentences = random_sentences(np.random.default_rng(5), 12)
    model = PCFG(n_nonterminals=2, alpha=0.5, algorithm="mh", n_iter=3, random_state=6).fit(sentences)
    assert np.all(model.counts_ == np.round(model.counts_))
    lengths = np.array([len(s) for s in sentences])
    assert model.counts_.sum() == 2 * lengths.sum() - len(sentences)   # a CNF tree has 2T - 1 rules
    assert model.history_[-1].objective == pytest.approx(collapsed_log_joint(model.grammar_, model.counts_, 0.5))
    assert model.acceptance_rates_.shape == (3,) and 0.0 < model.acceptance_rate_ <= 1.0


# ------------------------------------------------------------------ the MH sampler against eq. 4.13
def joint_states(compiled, sentences):
    """Every joint tree assignment: per sentence the trees as preorder rule-id tuples and their counts."""
    per_sentence = []
    for words in sentences:
        trees = enumerate_trees(compiled, np.ones(compiled.n_rules), words)
        per_sentence.append([(tuple(tree_rule_ids(compiled, tree)),
                              np.bincount(tree_rule_ids(compiled, tree), minlength=compiled.n_rules))
                             for tree in trees])
    return per_sentence


def exact_joint_posterior(compiled, per_sentence, alpha):
    """p(z | x, alpha) over joint assignments, from eq. 4.13."""
    keys, logs = [], []
    for choice in itertools.product(*per_sentence):
        keys.append(tuple(key for key, _ in choice))
        logs.append(collapsed_log_joint(compiled, sum(c for _, c in choice), alpha))
    logs = np.array(logs)
    probs = np.exp(logs - logs.max())
    return keys, probs / probs.sum()


def scan_stationary(compiled, per_sentence, keys, alpha, acceptance):
    """The stationary distribution of a systematic-scan MH chain over joint states with proposals from
    theta^H (eq. 4.15-4.16) and acceptance probability ``acceptance(log_target_ratio, log_proposal_ratio)``,
    by building its transition matrix exactly."""
    index = {key: s for s, key in enumerate(keys)}
    counts_of = [dict(trees) for trees in per_sentence]
    n = len(keys)
    scan = np.eye(n)
    for i, trees in enumerate(per_sentence):
        step = np.zeros((n, n))
        conditionals = {}    # (log q, log pi) of sentence i's trees depend only on the other trees
        for s, key in enumerate(keys):
            rest = key[:i] + key[i + 1:]
            if rest not in conditionals:
                others = sum(counts_of[j][key[j]] for j in range(len(key)) if j != i)
                log_theta = np.log(mean_table(compiled, others.astype(float), alpha))
                conditionals[rest] = (np.array([c @ log_theta for _, c in trees]),
                                      np.array([collapsed_log_joint(compiled, others + c, alpha) for _, c in trees]))
            log_q, log_pi = conditionals[rest]
            q = np.exp(log_q - log_q.max())
            q /= q.sum()
            current = [t for t, (tree_key, _) in enumerate(trees) if tree_key == key[i]][0]
            for t, (tree_key, _) in enumerate(trees):
                move = q[t] * acceptance(log_pi[t] - log_pi[current], log_q[current] - log_q[t])
                target = index[key[:i] + (tree_key,) + key[i + 1:]]
                step[s, target] += move
                step[s, s] += q[t] - move
        scan = scan @ step
    values, vectors = np.linalg.eig(scan.T)
    stationary = np.real(vectors[:, np.argmin(np.abs(values - 1.0))])
    return stationary / stationary.sum()


def metropolis_hastings(log_target, log_proposal):
    return min(1.0, math.exp(log_target + log_proposal))


MH_CASES = {
    # full CNF: preterminal rows used several times in one tree, so theta^H is not the exact conditional
    "cnf": (dict(n_nonterminals=2), [s.split() for s in ["a a", "a b a"]], 1.0),
    # span rules, SM V M ... (eq. 4.25-4.29)
    "span": (dict(grammar=MORPHOLOGY), [list("lea"), list("bona"), list("lea")], 0.3),
    # span rules with a row used twice in one tree (Prefix Prefix Stem, as in the experiment's grammar):
    # theta^H is not the exact conditional, so the acceptance step matters
    "span-repeat": (dict(grammar="Word -> Stem\nWord -> Prefix Stem\nWord -> Prefix Prefix Stem\n"
                                 "Prefix -> <any>\nStem -> <any>\n"), [list("aab"), list("ab")], 0.3),
}


@pytest.mark.parametrize("case", list(MH_CASES))
def test_mh_samples_the_exact_collapsed_posterior(case):
    options, sentences, alpha = MH_CASES[case]
    model = PCFG(alpha=alpha, **options)
    compiled = model.compile(sentences)
    per_sentence = joint_states(compiled, sentences)
    keys, exact = exact_joint_posterior(compiled, per_sentence, alpha)
    # the exact chain built from the proposals and eq. 4.14's ratio leaves eq. 4.13 invariant ...
    np.testing.assert_allclose(scan_stationary(compiled, per_sentence, keys, alpha, metropolis_hastings), exact,
                               atol=1e-10)
    # ... and so does the sampler, empirically
    model.grammar_ = compiled
    data = TreeCorpus(compiled, sentences)
    cvbayes.core.sampling.seed_numba(7)
    sampler = TreeSampler(RuleRows(compiled, alpha), data, random_weights(compiled, np.random.default_rng(8)))
    n_sweeps = 10000
    for _ in range(100):
        sampler.draw()
    visits = Counter()
    trail = [tuple(sampler.trees())]
    moves_before = sampler.tally[2]
    for _ in range(n_sweeps):
        sampler.draw()
        trail.append(tuple(sampler.trees()))
        visits[trail[-1]] += 1
    assert np.array_equal(sampler.counts, sum(np.bincount(t, minlength=compiled.n_rules) for t in sampler.trees()))
    # moves: accepted proposals that change the tree, counted against the visits
    changes = sum(a != b for previous, now in zip(trail, trail[1:]) for a, b in zip(previous, now))
    assert 0 < sampler.tally[2] - moves_before == changes <= sampler.tally[0]
    assert chi_square_p_value(visits, dict(zip(keys, exact)), n_sweeps) > 1e-3
    # the check has power: the same visits are rejected against the stationary distributions of chains
    # with wrong acceptance ratios
    wrong = {"no Hastings correction": lambda t, q: min(1.0, math.exp(t)),
             "always accept (theta^H taken for the exact conditional)": lambda t, q: 1.0}
    for name, acceptance in wrong.items():
        off = scan_stationary(compiled, per_sentence, keys, alpha, acceptance)
        if case == "span" and name.startswith("always"):
            # no rule or row is used twice in these trees: theta^H is the exact conditional (eq. 4.22
            # reduces to eq. 4.23), and every proposal is accepted
            np.testing.assert_allclose(off, exact, atol=1e-10)
            assert sampler.tally[0] == sampler.tally[1]
            continue
        assert chi_square_p_value(visits, dict(zip(keys, off)), n_sweeps) < 1e-3, name
    if case == "span-repeat":
        assert 0.5 < sampler.tally[0] / sampler.tally[1] < 1.0
    if case == "cnf":
        assert 0.5 < sampler.tally[0] / sampler.tally[1] < 1.0
        # tempered (anneal=True): proposals from (theta^H)^p and the ratio raised to p target p(z | x)^p
        tempered = exact ** 0.5 / (exact ** 0.5).sum()
        visits = Counter()
        for _ in range(n_sweeps):
            sampler.draw(0.5)
            visits[tuple(sampler.trees())] += 1
        assert chi_square_p_value(visits, dict(zip(keys, tempered)), n_sweeps) > 1e-3
        assert chi_square_p_value(visits, dict(zip(keys, exact)), n_sweeps) < 1e-3


def test_mh_starts_from_trees_drawn_uniformly():
    """MH's default start (`uniform_tree_table`): every tree of a sentence equally likely.  A start
    drawn from `random_table` puts almost every word of an <any> grammar on its one-stem tree, and with
    the 1e-5 prior the chain then never leaves that mode (every proposal is the current tree)."""
    compiled = PCFG(grammar=MORPHOLOGY).compile([list("lea")])
    trees = [tuple(tree_rule_ids(compiled, t)) for t in enumerate_trees(compiled, np.ones(compiled.n_rules),
                                                                          list("lea"))]
    n_draws = 3000
    cvbayes.core.sampling.seed_numba(3)
    sampler = TreeSampler(RuleRows(compiled, 1e-5), TreeCorpus(compiled, [list("lea")] * n_draws),
                          uniform_tree_table(compiled))
    visits = Counter(sampler.trees())
    assert len(trees) > 3 and chi_square_p_value(visits, dict.fromkeys(trees, 1 / len(trees)), n_draws) > 1e-3
    # with a unary cycle there are infinitely many trees: the unary rules are shrunk so that they sum
    assert not has_unary_cycle(compiled) and not has_unary_cycle(PCFG(grammar=UNARY_NARY).compile(NARY_SENTENCES))
    cycle = PCFG(grammar=CYCLE).compile([["x", "y"]])
    assert has_unary_cycle(cycle)
    weights = uniform_tree_table(cycle)
    assert np.all(weights[cycle.rule_kind == UNARY] < 1.0) and np.all(weights[cycle.rule_kind != UNARY] == 1.0)
    assert np.isfinite(cvbayes.trees.log_z(cycle, make_tables(cycle, weights), ["x", "y"]))


# ------------------------------------------------------------------ using a fitted model
def test_parse_and_score_a_span_grammar_with_held_out_terminals():
    train = [list(w) for w in ["lebona", "bona", "kebona", "lea", "kea", "lebone", "bone", "kelea"]]
    heldout = [list("kebone"), list("zebona")]
    model = PCFG(grammar=MORPHOLOGY, alpha=0.01, algorithm="cvi", n_iter=5).fit(train, terminals_from=heldout)
    scores = model.score_sentences(heldout)
    assert np.all(np.isfinite(scores)) and model.score(heldout) == pytest.approx(scores.sum())
    assert model.score([list("qq")]) == -np.inf          # "q" is no terminal
    trees = model.parse(train[:3] + [list("qq")])
    assert trees[-1] is None
    for tree, words in zip(trees[:3], train[:3]):
        assert tree.label == "Word" and tree.leaves() == words
    # trained without the held-out words, their unseen substrings have no rule
    assert PCFG(grammar=MORPHOLOGY, alpha=0.01, n_iter=2).fit(train).score([list("zebona")]) == -np.inf


def test_em_parses_held_out_words_under_its_mle_or_the_posterior_mean():
    """An MLE (alpha <= 1: no pseudo-counts) gives a held-out word's unseen substrings probability zero,
    so its Viterbi parse under `rule_probs_` must be built from seen pieces; under the posterior mean
    (``estimate="mean"``, what the morphology experiment scores and parses with) the same parse is
    compared with the unseen whole word at weight alpha."""
    heldout = [list("kebone")]
    model = PCFG(grammar=MORPHOLOGY, alpha=1e-5, algorithm="em", n_iter=20, random_state=0).fit(MORPH_WORDS,
                                                     terminals_from=heldout)
    compiled = model.grammar_
    whole = compiled.substrings.index(compiled.vocabulary.encode(heldout[0]))
    family = list(compiled.kernel.span_parent).index(compiled.nonterminals.index("V"))
    stem_rule = compiled.kernel.span_base[family] + whole      # V -> kebone, the only whole-word rule
    assert model.rule_probs_[stem_rule] == 0.0 and model.counts_[stem_rule] == 0.0
    fitted, mean = model.parse(heldout)[0], model.parse(heldout, estimate="mean")[0]
    assert mean.leaves() == heldout[0] and np.isfinite(model.score(heldout, estimate="mean"))
    # under the MLE: no tree at all here (every Word rule but Word -> V went to zero), or one of seen pieces
    assert fitted is None or all(len(node.children) < len(heldout[0]) for node in fitted.subtrees()
                                 if node.is_lexical)
    assert (fitted is None) == (model.score(heldout) == -np.inf)
    with pytest.raises(ValueError, match="estimate"):
        model.parse(heldout, estimate="map")


@pytest.mark.parametrize("algorithm", ["em", "vb", "cvi"])
def test_the_seed_chooses_the_start(algorithm):
    first, second = (PCFG(n_nonterminals=2, alpha=0.5, algorithm=algorithm, n_iter=1, random_state=s).fit(CNF_SENTENCES)
                     for s in (0, 1))
    assert first.history_[0].objective != second.history_[0].objective


def test_corpus_input_and_callback():
    sentences = random_sentences(np.random.default_rng(9), 10)
    vocabulary = cvbayes.Vocabulary(["a", "b", "c"])
    corpus = Corpus.from_sequences([vocabulary.encode(s) for s in sentences], vocabulary=vocabulary)
    seen = []
    model = PCFG(n_nonterminals=2, algorithm="vb", n_iter=3).fit(corpus,
                                       callback=lambda m, it: seen.append((it, m.score(sentences))))
    assert [it for it, _ in seen] == [0, 1, 2]
    assert seen[-1][1] == pytest.approx(model.score(sentences))
    assert model.score(corpus) == pytest.approx(model.score(sentences))


def test_restarts_keep_the_best_objective():
    sentences = random_sentences(np.random.default_rng(10), 15)
    model = PCFG(n_nonterminals=3, alpha=0.5, algorithm="em", n_iter=5, random_state=0, n_init=3).fit(sentences)
    assert len(model.restart_objectives_) == 3
    assert model.history_[-1].objective == max(model.restart_objectives_)
    assert model.restart_objectives_[model.best_restart_] == max(model.restart_objectives_)
    single = PCFG(n_nonterminals=3, alpha=0.5, algorithm="em", n_iter=5, random_state=1).fit(sentences)
    assert single.history_[-1].objective == model.restart_objectives_[1]
    assert single.best_restart_ == 0


@pytest.mark.parametrize("algorithm", ["em", "mh"])
@pytest.mark.parametrize("case", ["cnf", "span"])
def test_save_and_load_round_trip(tmp_path, algorithm, case):
    options, sentences = CASES[case]
    heldout = [list("kebone")] if case == "span" else [["a", "c"]]
    model = PCFG(alpha=0.2, max_substring=4 if case == "span" else None, **options)
    model.set_params(algorithm=algorithm, n_iter=3, random_state=1).fit(sentences, terminals_from=heldout)
    path = tmp_path / "model.npz"
    model.save(path)
    loaded = PCFG.load(path)
    np.testing.assert_array_equal(loaded.counts_, model.counts_)
    np.testing.assert_array_equal(loaded.rule_probs_, model.rule_probs_)
    assert loaded.history_ == model.history_ and loaded.algorithm_ == algorithm
    assert loaded.score(sentences + heldout) == model.score(sentences + heldout)
    assert loaded.parse(sentences) == model.parse(sentences)
    assert [loaded.grammar_.describe(r) for r in range(5)] == [model.grammar_.describe(r) for r in range(5)]
    if algorithm == "mh":
        np.testing.assert_array_equal(loaded.acceptance_rates_, model.acceptance_rates_)


# ------------------------------------------------------------------ bad input
def test_bad_input_raises_clear_errors(tmp_path):
    with pytest.raises(ValueError, match="exactly one"):
        PCFG()
    with pytest.raises(ValueError, match="exactly one"):
        PCFG(n_nonterminals=2, grammar=MORPHOLOGY)
    with pytest.raises(ValueError, match="alpha"):
        PCFG(n_nonterminals=2, alpha=0)
    with pytest.raises(ValueError, match="n_nonterminals"):
        PCFG(n_nonterminals=1.5)
    bad = tmp_path / "bad.grammar"
    bad.write_text("Word -> V\nV -> <any\n", encoding="utf-8")
    with pytest.raises(GrammarError, match=r"bad\.grammar.*line 2|line 2.*bad\.grammar"):
        PCFG(grammar=bad)
    with pytest.raises(FileNotFoundError):
        PCFG(grammar=tmp_path / "missing.grammar")
    model = PCFG(n_nonterminals=2)
    with pytest.raises(RuntimeError, match="not fitted"):
        model.score(CNF_SENTENCES)
    with pytest.raises(ValueError, match="unknown algorithm"):
        model.set_params(algorithm="gibbs").fit(CNF_SENTENCES)
    with pytest.raises(ValueError, match="n_iter"):
        model.set_params(n_iter=0).fit(CNF_SENTENCES)
    with pytest.raises(ValueError, match="no sentences"):
        model.fit([])
    with pytest.raises(ValueError, match="sentence 1 is empty"):
        model.fit([["a"], []])
    with pytest.raises(TypeError, match="sentence 0 is a str"):
        model.fit(["a b"])
    with pytest.raises(TypeError, match="sentence 0, token 1"):
        model.fit([["a", 3]])
    with pytest.raises(ValueError, match="init"):
        model.set_params(init=np.ones(3)).fit(CNF_SENTENCES)
    grammar = 'S -> A B\nA -> "a"\nB -> "b"\n'
    for algorithm in PCFG.ALGORITHMS:
        with pytest.raises(ZeroProbabilityError, match=r"sentence 1 \('b a'\) has no tree"):
            PCFG(grammar=grammar, algorithm=algorithm, n_iter=1).fit([["a", "b"], ["b", "a"]])
    not_a_model = tmp_path / "x.npz"
    np.savez(not_a_model, meta=np.array('{"format": "other"}'))
    with pytest.raises(ValueError, match="not a cvbayes model file of format cvbayes-pcfg-1"):
        PCFG.load(not_a_model)
    (tmp_path / "y.npz").write_bytes(b"junk")
    with pytest.raises(ValueError, match="not a cvbayes model file"):
        PCFG.load(tmp_path / "y.npz")


def test_mh_is_reproducible_from_its_seed():
    sentences = random_sentences(np.random.default_rng(11), 10)
    runs = [PCFG(n_nonterminals=2, alpha=0.5, algorithm="mh", n_iter=4, random_state=s).fit(sentences)
            for s in (3, 3, 4)]
    np.testing.assert_array_equal(runs[0].counts_, runs[1].counts_)
    assert not np.array_equal(runs[0].counts_, runs[2].counts_)


# ------------------------------------------------------------------ the experiments' parts
def test_planted_sentences_follow_the_grammar():
    from cvbayes.experiments.pcfg import sample_sentences
    grammar = cvbayes.trees.parse_grammar('0.6 S -> A S\n0.4 S -> "b"\n0.7 A -> "a"\n0.3 A -> "c"\n')
    draws = sample_sentences(grammar, 4000, np.random.default_rng(0), max_length=6)
    assert all(len(s) <= 6 and s[-1] == "b" for s in draws)
    compiled = cvbayes.trees.compile_grammar(grammar, draws)
    tables = make_tables(compiled, compiled.rule_weights())
    observed = Counter(tuple(s) for s in draws)
    probs = {s: math.exp(cvbayes.trees.log_z(compiled, tables, list(s))) for s in observed}
    # redrawn above 6 words: p(x | |x| <= 6)
    kept = 1 - 0.6 ** 6
    for sentence in [("b",), ("a", "b"), ("c", "b"), ("a", "a", "b")]:
        assert observed[sentence] / 4000 == pytest.approx(probs[sentence] / kept, abs=0.02)


def test_morph_boundaries_and_their_scores():
    from cvbayes.data.segmentation import SegmentationData
    from cvbayes.data.trees import Tree
    from cvbayes.experiments.pcfg import boundary_scores, split, stem_families, tree_boundaries
    tree = Tree("Word", [Tree("Prefix", ["l", "e"]), Tree("Stem", list("bona"))])
    assert tree_boundaries(tree) == {2}
    scores = boundary_scores([tree, Tree("Word", [Tree("Stem", list("bo"))]), None], [(2,), (1,), (1, 2)])
    assert scores["precision"] == 1.0 and scores["recall"] == pytest.approx(1 / 4)
    data = SegmentationData([[("l", "e"), tuple("bona")], [tuple("bona")], [tuple("kea")], [("k", "e"), tuple("bona")],
                             [tuple("lea"), ("s",)], [tuple("lea")]])
    sample, drawn, available = stem_families(data, n_types=1, seed=0)
    assert available == 2 and drawn == 1 and len(sample) in (2, 3)
    stems = {"".join(max(parts, key=len)) for parts in sample.segments}
    assert len(stems) == 1
    train, test = split(10)
    assert len(test) == 1 and sorted(np.r_[train, test]) == list(range(10))


def test_morphology_run_records_a_curve(tmp_path):
    from cvbayes.experiments.pcfg import run_morphology
    words = [list(w) for w in ["lebona", "bona", "kebona", "lea", "kea", "lebone", "bone", "kelea", "kebone"]]
    gold = [(2,), (), (2,), (2,), (2,), (2,), (), (2,), (2,)]
    run = run_morphology((words[:7], gold[:7]), (words[7:], gold[7:]), "cvi", 0, 6, evaluations=3)
    assert [p["iteration"] for p in run["curve"]] == [1, 2, 6]
    assert all(np.isfinite(p["perplexity"]) for p in run["curve"])
    assert 0.0 <= run["train"]["f1"] <= 1.0


def test_planted_experiment_writes_its_table(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from cvbayes.experiments import pcfg as experiments
    monkeypatch.setattr(experiments, "PLANTED_SENTENCES", (30, 10))
    monkeypatch.setattr(experiments, "PLANTED_ALGORITHMS", ("em", "mh"))
    experiments.pcfg_planted(SimpleNamespace(out=tmp_path, seeds=1, iterations=2, cgs_iterations=2, quiet=True))
    table = (tmp_path / "pcfg_planted" / "table.md").read_text()
    assert "| true grammar |" in table and "| mh (acceptance" in table
    assert (tmp_path / "pcfg_planted" / "pcfg_planted.png").exists()
