"""Adaptor grammars: the grammar format, the chart, and the VB and CVI updates against brute force."""
import itertools

import numpy as np
import pytest
from scipy.special import digamma, gammaln

from cvbayes.models.adaptor import (BRENT_CONSONANTS, BRENT_VOWELS, BUILT_IN_GRAMMARS, AdaptorGrammar, adapted_regions,
                                    log_rising, parse_adaptor_grammar, syllable_grammar)
from cvbayes.models.adaptor_kernels import batch_expectations, expected_table_count, tree_statistics, update_sentence
from cvbayes.models.hdp import expected_tables
from cvbayes.trees.grammar import LEXICAL, SPAN, GrammarError, Terminal
from cvbayes.trees.inside_outside import chart_buffers, cubic_chunks, make_tables, sentence_sample

UTTERANCES = [list("abab"), list("ab"), list("abb")]
# the colloc-syllable grammar without word edges over UTTERANCES' alphabet: seven adapted nonterminals nested
# five deep; and Johnson and Goldwater's, with word-initial and word-final syllables (the built-in)
SYLLABLE = pytest.param(syllable_grammar(["a"], ["b"], edges=False), id="colloc-syllable")
SYLLABLE_EDGES = pytest.param(syllable_grammar(["a"], ["b"]), id="colloc-syllable-edges")


# ------------------------------------------------------------------ brute force
def derivations(compiled, layout, weights, tokens, symbol, i, k):
    """Every derivation of `symbol` over tokens[i:k]: (weight, rule ids, customers [(rule of the yield)])."""
    out = []
    grammar = compiled.grammar
    kernel = compiled.kernel
    adapted = layout["adapted_of"][symbol]
    substring = compiled.substrings.index(compiled.vocabulary.encode(tokens[i:k]))
    cache_rule = -1
    if adapted >= 0:
        family = int(np.flatnonzero(kernel.span_parent == symbol)[0])
        cache_rule = int(kernel.span_base[family] + substring)
    for rule in range(compiled.row_offsets[symbol], compiled.row_offsets[symbol + 1]):
        kind = compiled.rule_kind[rule]
        if kind == SPAN:
            family = int(np.flatnonzero(kernel.span_parent == symbol)[0])
            if rule - kernel.span_base[family] == substring:
                out.append((weights[rule], [rule], []))
            continue
        rhs = grammar.rules[compiled.rule_source[rule]].rhs
        if kind == LEXICAL:
            if k == i + 1 and tokens[i] == rhs[0].text:
                out.append((weights[rule], [rule], []))
            continue
        if len(rhs) > k - i:
            continue
        for cuts in itertools.combinations(range(i + 1, k), len(rhs) - 1):
            bounds = (i,) + cuts + (k,)
            parts = []
            for child, begin, end in zip(rhs, bounds[:-1], bounds[1:]):
                if isinstance(child, Terminal):
                    parts.append([(1.0, [], [])] if end == begin + 1 and tokens[begin] == child.text else [])
                else:
                    parts.append(derivations(compiled, layout, weights, tokens,
                                             compiled.nonterminals.index(child), begin, end))
            for combo in itertools.product(*parts):
                weight = weights[rule] * np.prod([c[0] for c in combo])
                out.append((weight, [rule] + [r for c in combo for r in c[1]], [x for c in combo for x in c[2]]))
    if adapted >= 0:   # a customer of X at this yield, served by the cache when its only rule is X's cache rule
        out = [(w, rules, customers + [(cache_rule, rules[0] == cache_rule)]) for w, rules, customers in out]
    return out


def brute_expectations(compiled, layout, weights, tokens):
    """log Z, expected rule counts (R,) and expected customers (R,) of one utterance by enumeration."""
    trees = derivations(compiled, layout, weights, tokens, compiled.start, 0, len(tokens))
    z = sum(w for w, _, _ in trees)
    counts = np.zeros(compiled.n_rules)
    customers = np.zeros(compiled.n_rules)
    for w, rules, served in trees:
        np.add.at(counts, rules, w / z)
        np.add.at(customers, [c[0] for c in served], w / z)
    return np.log(z), counts, customers


def chart_expectations(compiled, layout, weights, utterances):
    batch = compiled.prepare(utterances)
    return batch_expectations(compiled.kernel, make_tables(compiled, weights), batch.tokens, batch.offsets,
                              batch.span_ids, batch.span_offsets, cubic_chunks(batch.offsets), compiled.n_rules,
                              layout["adapted_symbol"])


# ------------------------------------------------------------------ grammar text
def test_builtin_grammars_parse_with_plus_sugar():
    spec = parse_adaptor_grammar(BUILT_IN_GRAMMARS["colloc"])
    assert set(spec.adapted) == {"Colloc", "Word"}
    rhs = {(r.lhs, r.rhs) for r in spec.grammar.rules}
    assert ("Word+", ("Word", "Word+")) in rhs and ("Word+", ("Word",)) in rhs


def test_syllable_grammar_covers_brent_and_names_symbols_it_cannot_derive():
    spec = parse_adaptor_grammar(BUILT_IN_GRAMMARS["colloc-syllable"])
    assert set(spec.adapted) == {"Colloc", "Word", "Onset", "OnsetI", "Nucleus", "Coda", "CodaF"}
    terminals = {r.lhs: set() for r in spec.grammar.rules}
    for rule in spec.grammar.rules:
        terminals[rule.lhs].update(x.text for x in rule.rhs if isinstance(x, Terminal))
    assert terminals["Vowel"] == set(BRENT_VOWELS)
    for cluster in ("Onset", "OnsetI", "Coda", "CodaF"):
        assert terminals[cluster + "Consonant"] == set(BRENT_CONSONANTS)
    assert len(BRENT_VOWELS) + len(BRENT_CONSONANTS) == 50           # Brent's 50 phonemes, each once
    assert adapted_regions(spec)[1]["CodaF"] == "Word"                # CVI can run it
    words = {r.rhs for r in spec.grammar.rules if r.lhs == "Word"}
    assert words == {("SyllableIF",), ("SyllableI", "SyllableF"), ("SyllableI", "Syllable", "SyllableF"),
                     ("SyllableI", "Syllable", "Syllable", "SyllableF")}
    old = parse_adaptor_grammar(syllable_grammar(BRENT_VOWELS, BRENT_CONSONANTS, edges=False))
    assert set(old.adapted) == {"Colloc", "Word", "Syllable", "Onset", "Rhyme", "Nucleus", "Coda"}
    assert adapted_regions(old)[1]["Nucleus"] == "Rhyme"
    # quoting: a terminal with a quote or a backslash reads back as itself
    odd = parse_adaptor_grammar(syllable_grammar(['"', "a"], ["\\", "b"]))
    assert {x.text for r in odd.grammar.rules for x in r.rhs if isinstance(x, Terminal)} == {'"', "a", "\\", "b"}
    with pytest.raises(ValueError, match="both vowel and consonant: a"):
        syllable_grammar(["a"], ["a", "b"])
    with pytest.raises(ValueError, match="utterance 1 has the symbol 'x'"):
        AdaptorGrammar("colloc-syllable").fit([list("bIg"), list("xIg")], algorithm="vb", n_iter=1)


def test_py_parameters_per_nonterminal():
    spec = parse_adaptor_grammar("@Word a=0.5 b=20\nS -> Word+\n@Word -> P+\nP -> <any:1>\n")
    assert spec.adapted == {"Word": (0.5, 20.0)}
    model = AdaptorGrammar(spec, a=0.1, b=3.0)
    assert model.discount.tolist() == [0.5] and model.concentration.tolist() == [20.0]


@pytest.mark.parametrize("text, line", [
    ("S -> Word+\n@Word -> P+\n@Word a=2\nP -> <any:1>\n", None),      # discount out of range
    ("S -> Word+\n@Word -> P+\n@Word c=2\nP -> <any:1>\n", 3),         # unknown setting
    ("S -> Word+\n@Word -> 'x'\n", 2),                                 # adapted with a terminal
    ("S -> Word+\nWord -> P+\nP -> <any:1>\n", None),                  # nothing adapted
    ("S -> Word+\n@Word -> P+\nP -> Q\n", 3),                          # Q has no rules
    ("S -> Word+\n@Word -> Word\n@Word -> P+\nP -> <any:1>\n", 2),      # adapted, rewrites to itself
    ("S -> C+\n@C -> W+\n@W -> P+\nP -> C\nP -> <any:1>\n", 2),        # ... through other nonterminals
])
def test_grammar_errors_name_the_line(text, line):
    with pytest.raises(GrammarError) as error:
        parse_adaptor_grammar(text, path="g.txt")
    assert "g.txt" in str(error.value)
    if line is not None:
        assert f"line {line}" in str(error.value) or f":{line}" in str(error.value)


# ------------------------------------------------------------------ chart
@pytest.mark.parametrize("name", ["unigram", "colloc", SYLLABLE, SYLLABLE_EDGES])
def test_chart_matches_enumeration_of_parses(name):
    model = AdaptorGrammar(name)
    compiled, layout = model._compile(UTTERANCES)
    weights = np.random.default_rng(1).uniform(0.1, 0.6, compiled.n_rules)
    counts, customers, log_z = chart_expectations(compiled, layout, weights, UTTERANCES)
    expected = [brute_expectations(compiled, layout, weights, u) for u in UTTERANCES]
    np.testing.assert_allclose(log_z, [e[0] for e in expected], rtol=1e-10)
    np.testing.assert_allclose(counts, sum(e[1] for e in expected), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(customers, sum(e[2] for e in expected), rtol=1e-9, atol=1e-12)


# the syllable grammar has 73 parse classes of "ab" (8,070 of "abab": too many to check with 4,000 draws)
@pytest.mark.parametrize("name, text", [("unigram", "abab"), ("colloc", "abab"),
                                        pytest.param(SYLLABLE.values[0], "ab", id="colloc-syllable")])
def test_sampled_trees_have_the_statistics_and_frequencies_of_enumerated_parses(name, text):
    """CVI's and VB's sampled start: `tree_statistics` of trees drawn by `sentence_sample` are the rule counts
    and customers of one enumerated parse each, drawn with the parse's probability."""
    model = AdaptorGrammar(name)
    tokens = list(text)
    compiled, layout = model._compile([tokens])
    weights = np.random.default_rng(2).uniform(0.1, 0.6, compiled.n_rules)
    exact = {}
    trees = derivations(compiled, layout, weights, tokens, compiled.start, 0, len(tokens))
    z = sum(w for w, _, _ in trees)
    for w, rules, served in trees:
        key = (tuple(sorted(rules)), tuple(sorted(c[0] for c in served)))
        exact[key] = exact.get(key, 0.0) + w / z
    batch = compiled.prepare([tokens])
    spans = batch.span_ids[batch.span_offsets[0]:batch.span_offsets[1]]
    encoded = batch.tokens[batch.offsets[0]:batch.offsets[1]]
    tables = make_tables(compiled, weights)
    buffers = chart_buffers(compiled.kernel, len(tokens))
    rows = np.empty((200, 5), dtype=np.int64)
    seen, n_draws = {}, 4000
    for seed in range(n_draws):
        counts, customers = np.zeros(compiled.n_rules), np.zeros(compiled.n_rules)
        _, n_rows = sentence_sample(compiled.kernel, tables, encoded, spans, buffers, seed, rows)
        tree_statistics(compiled.kernel, rows, n_rows, spans, len(tokens), layout["adapted_symbol"], counts, customers)
        key = (tuple(np.repeat(np.arange(compiled.n_rules), counts.astype(int))),
               tuple(np.repeat(np.arange(compiled.n_rules), customers.astype(int))))
        seen[key] = seen.get(key, 0) + 1
    assert set(seen) <= set(exact)
    tv = 0.5 * sum(abs(seen.get(k, 0) / n_draws - p) for k, p in exact.items())
    assert tv < 0.04, tv


def test_sampled_start_adds_every_utterance_once():
    """After CVI's sampled start the counts are the sum of the utterances' local statistics (one tree each)."""
    utterances = [list(u) for u in ("abab", "ab", "abb", "ba", "bab")] * 2
    model = AdaptorGrammar("unigram")
    model.fit(utterances, algorithm="cvi", n_iter=0)
    sentences, state, (_, local_customers), _ = model._cvi_state
    cell_offsets, cell_rules = sentences[5], sentences[6]
    customers = np.bincount(cell_rules, weights=local_customers, minlength=model.grammar_.n_rules)
    cache = model._layout["cache_of"] >= 0
    np.testing.assert_allclose(state[8][cache], customers[cache], atol=1e-9)
    assert np.all(local_customers == np.round(local_customers))
    words = [local_customers[cell_offsets[i]:cell_offsets[i + 1]].sum() for i in range(len(utterances))]
    assert all(1 <= w <= len(u) for w, u in zip(words, utterances))


# ------------------------------------------------------------------ CVI
def _predictive(model, compiled, layout, counts, customers, tables):
    """The PY and Dirichlet predictive weights written out from the counts of the other utterances."""
    weights = np.zeros(compiled.n_rules)
    cache_of, base = layout["cache_of"], layout["base"]
    rows = np.bincount(compiled.rule_parent[base], weights=counts[base], minlength=compiled.n_nonterminals)
    for rule in range(compiled.n_rules):
        x = cache_of[rule]
        if x >= 0:
            n = customers[cache_of == x].sum()
            weights[rule] = (customers[rule] - model.discount[x] * tables[rule]) / (n + model.concentration[x])
            continue
        parent = compiled.rule_parent[rule]
        weights[rule] = (counts[rule] + model.alpha) / (rows[parent] + layout["row_prior"][parent])
        owner = layout["adapted_of"][parent]
        if owner >= 0:
            n = customers[cache_of == owner].sum()
            t = tables[cache_of == owner].sum()
            weights[rule] *= (model.concentration[owner] + model.discount[owner] * t) / (n + model.concentration[owner])
    return weights


def _left_out(model, u):
    """The others' statistics as CVI's update of utterance u must see them, written out from the
    utterances' local statistics: customers n^-u, E[t^-u] by thesis eq. 5.35 with q(n^m_s = 0) =
    1 - min(n^m_s, 1), top-level rule counts of the others plus the counts from the tables."""
    sentences, state, local, _ = model._cvi_state
    compiled, layout = model.grammar_, model._layout
    cell_offsets, cell_rules = sentences[5], sentences[6]
    local_counts, local_customers = local
    counts = np.zeros(compiled.n_rules)
    customers = np.zeros(compiled.n_rules)
    log_empty = np.zeros(compiled.n_rules)
    for other in range(len(cell_offsets) - 1):
        if other != u:
            cells = slice(cell_offsets[other], cell_offsets[other + 1])
            np.add.at(counts, cell_rules[cells], local_counts[cells])
            np.add.at(customers, cell_rules[cells], local_customers[cells])
            np.add.at(log_empty, cell_rules[cells], np.log(np.maximum(1 - np.minimum(local_customers[cells], 1), 1e-12)))
    top = np.isin(layout["adapted_symbol"][np.maximum(layout["cache_of"], 0)], state[7]) & (layout["cache_of"] >= 0)
    nested = (layout["cache_of"] >= 0) & ~top
    customers[nested] = state[8][nested]        # from the tables of the pass, not left out
    occupied = 1 - np.exp(log_empty)
    tables = np.zeros(compiled.n_rules)
    ok = top & (customers > 0) & (state[16] > 0)
    tables[ok] = expected_tables(state[16][ok], customers[ok], occupied[ok])
    tables[nested] = state[9][nested]
    counts = np.where(state[15], counts, 0.0) + model._table_counts
    return counts, customers, tables, top


@pytest.mark.parametrize("name, a, b", [("unigram", 0.0, 1.0), ("unigram", 0.4, 2.0), ("colloc", 0.3, 1.5),
                                        pytest.param(SYLLABLE.values[0], 0.3, 1.5, id="colloc-syllable")])
def test_cvi_update_matches_enumeration(name, a, b):
    model = AdaptorGrammar(name, a=a, b=b, alpha=0.7).fit(UTTERANCES, algorithm="cvi", n_iter=2, seed=3)
    sentences, _, local, _ = model._cvi_state
    compiled, layout = model.grammar_, model._layout
    cell_offsets, cell_rules = sentences[5], sentences[6]
    local_counts, local_customers = local
    for u in range(len(UTTERANCES)):
        counts, customers, tables, top = _left_out(model, u)
        weights = _predictive(model, compiled, layout, counts, customers, tables)
        log_z, want_counts, want_customers = brute_expectations(compiled, layout, weights, UTTERANCES[u])
        got = update_sentence(model._cvi_state, u)
        assert got == pytest.approx(log_z, rel=1e-10)
        cells = slice(cell_offsets[u], cell_offsets[u + 1])
        np.testing.assert_allclose(local_counts[cells], want_counts[cell_rules[cells]], rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(local_customers[cells], np.where(top, want_customers, 0.0)[cell_rules[cells]],
                                   rtol=1e-9, atol=1e-12)
        # the global state is the others' plus the utterance's new statistics
        after, _, after_tables, _ = _left_out(model, -1)
        np.testing.assert_allclose(model._model[9], after_tables, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(model._model[0], after, rtol=1e-9, atol=1e-12)


def test_expected_table_count_is_eq_5_35():
    for theta, customers, occupied in [(0.3, 2.0, 1.0), (1e-4, 0.2, 0.15), (5.0, 40.0, 0.9)]:
        assert expected_table_count(theta, customers, occupied) == pytest.approx(
            expected_tables(theta, customers, occupied), rel=1e-12)
        # one customer for sure opens one table; for a tiny base mass E[t] is q(n > 0)
    assert expected_table_count(0.7, 1.0, 1.0) == pytest.approx(1.0, rel=1e-12)
    assert expected_table_count(1e-9, 5.0, 0.3) == pytest.approx(0.3, rel=1e-6)


@pytest.mark.parametrize("name", ["unigram", "colloc", SYLLABLE])
def test_cvi_tables_and_base_counts_match_enumeration(name):
    """After a pass: theta_s = b H_X(s) with H_X the base probability of yield s, E[t_s] by eq. 5.35, and
    the base counts of X's region are the enumerated base derivations of every yield weighted by E[t_s]."""
    a, b = 0.2, 1.5
    model = AdaptorGrammar(name, a=a, b=b, alpha=0.7).fit(UTTERANCES, algorithm="cvi", n_iter=2, seed=1)
    compiled, layout, state = model.grammar_, model._layout, model._model
    cache_of = layout["cache_of"]
    saved = tuple(np.copy(array) if isinstance(array, np.ndarray) else array for array in state)
    weights = _predictive(model, compiled, layout, state[0] - 0.0, state[8], state[9])  # before the refresh
    model._refresh_tables()
    mean = weights.copy()
    rows = np.bincount(compiled.rule_parent[layout["base"]], weights=saved[0][layout["base"]],
                       minlength=compiled.n_nonterminals)
    for rule in np.flatnonzero(layout["base"]):
        parent = compiled.rule_parent[rule]
        mean[rule] = (saved[0][rule] + model.alpha) / (rows[parent] + layout["row_prior"][parent])
    want_counts = np.zeros(compiled.n_rules)
    nested_customers = np.zeros(compiled.n_rules)
    for x in model._order:
        symbol = layout["adapted_symbol"][x]
        family = int(np.flatnonzero(compiled.kernel.span_parent == symbol)[0])
        first = compiled.kernel.span_base[family]
        own_weights = weights.copy()
        own = (compiled.rule_parent == symbol) & layout["base"]
        own_weights[own] = mean[own]                      # X's own base rules without X's base mass
        own_weights[cache_of == x] = 0.0                  # the root is served by the base
        top = x in model._top_adapted
        for rule in np.flatnonzero(cache_of == x):
            tokens = compiled.vocabulary.decode(list(compiled.substrings.substrings[rule - first]))
            trees = [t for t in derivations(compiled, layout, own_weights, tokens, symbol, 0, len(tokens))
                     if t[0] > 0]
            h = sum(w for w, _, _ in trees)
            assert state[16][rule] == pytest.approx(model.concentration[x] * h, rel=1e-9, abs=1e-300)
            n = saved[8][rule] if top else nested_customers[rule]
            occupied = 1 - np.exp(saved[17][rule]) if top else min(n, 1.0)
            t = expected_tables(b * h, n, occupied) if n > 0 and h > 0 else 0.0
            assert state[9][rule] == pytest.approx(t, rel=1e-9, abs=1e-12)
            assert state[8][rule] == pytest.approx(n, rel=1e-9, abs=1e-12)
            for w, rules, served in trees:
                for r in rules:
                    if layout["base"][r] and model._region_of[compiled.rule_parent[r]] == x:
                        want_counts[r] += t * w / h
                for r, _ in served[:-1]:                  # the root's own customer is the last one
                    if model._adapted_parent[model.adapted_names[cache_of[r]]] == model.adapted_names[x]:
                        nested_customers[r] += t * w / h  # customers deeper down come from their parent's tables
    np.testing.assert_allclose(model._table_counts, want_counts, rtol=1e-9, atol=1e-12)
    assert model._table_counts.sum() > 0


def test_cvi_table_count_does_not_decay_over_passes():
    """Left out in turn, every utterance sees the others' tables; counting an utterance's tables as its
    base-served customers made T fall from 3.5 to 0.015 in 10 passes here.  With the tables a function of
    the customers (eq. 5.35) T stays near its value after one pass and the base rules keep their counts."""
    utterances = [list(u) for u in ("ab", "cd", "cdab", "abcdab", "ab", "cd", "abab")] * 4
    totals, base = [], []

    def record(model, iteration):
        totals.append(float(model._model[11][0]))
        base.append(float(model._table_counts.sum()))

    model = AdaptorGrammar("unigram", b=1.0).fit(utterances, algorithm="cvi", n_iter=10, callback=record)
    assert min(totals) > 0.5 * totals[0] and totals[-1] > 2.0, totals
    assert min(base) > 0.5 * base[0], base
    state = model._model
    cells = model._layout["cache_of"] == 0
    occupied = 1 - np.exp(state[17][cells])
    used = state[8][cells] > 0
    final = expected_tables(state[16][cells][used], state[8][cells][used], occupied[used]).sum()
    assert totals[-1] == pytest.approx(final, rel=1e-9)


# ------------------------------------------------------------------ VB
@pytest.mark.parametrize("name, truncation", [("unigram", 2), ("unigram", 50), ("colloc", 3),
                                               pytest.param(SYLLABLE.values[0], 3, id="colloc-syllable")])
def test_vb_weights_and_update_match_the_formulas(name, truncation):
    a, b, alpha = 0.3, 1.5, 0.8
    model = AdaptorGrammar(name, a=a, b=b, alpha=alpha, truncation=truncation)
    model.fit(UTTERANCES, algorithm="vb", n_iter=2)
    compiled, layout = model.grammar_, model._layout
    cache_of, base = layout["cache_of"], layout["base"]
    # weights: exp E[log theta] times the stick mass left, exp E[log pi_k] on the grammaton
    weights = np.zeros(compiled.n_rules)
    rows = np.bincount(compiled.rule_parent[base], weights=model._counts[base], minlength=compiled.n_nonterminals)
    rest = np.zeros(len(model.adapted_names))
    for x, (members, first, second) in enumerate(model._sticks):
        assert len(members) <= truncation
        log_pi = 0.0
        for k, rule in enumerate(members):
            weights[rule] = np.exp(log_pi + digamma(first[k]) - digamma(first[k] + second[k]))
            log_pi += digamma(second[k]) - digamma(first[k] + second[k])
        rest[x] = np.exp(log_pi)
    for rule in np.flatnonzero(base):
        parent = compiled.rule_parent[rule]
        row_total = rows[parent] + layout["row_prior"][parent]
        weights[rule] = np.exp(digamma(model._counts[rule] + alpha) - digamma(row_total))
        if layout["adapted_of"][parent] >= 0:
            weights[rule] *= rest[layout["adapted_of"][parent]]
    np.testing.assert_allclose(model._vb_weights(), weights, rtol=1e-10)
    # E-step against enumeration, then the q(v) update with the grammaton fixed at its members
    expected = [brute_expectations(compiled, layout, weights, u) for u in UTTERANCES]
    uses = sum(e[1] for e in expected)
    customers = sum(e[2] for e in expected)
    counts, got_customers, _ = chart_expectations(compiled, layout, weights, UTTERANCES)
    np.testing.assert_allclose(counts, uses, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(got_customers, customers, rtol=1e-9, atol=1e-12)
    for x, (members, _, _) in enumerate(model._sticks):
        cells = np.flatnonzero(cache_of == x)
        new_members, first, second = model._refresh(x, cells, counts, got_customers)
        ranked = cells[np.argsort(-customers[cells], kind="stable")][:truncation]
        assert set(new_members.tolist()) == set(ranked[customers[ranked] > 1e-9].tolist())
        u = np.where(np.isin(new_members, members), uses[new_members], customers[new_members])
        assert np.all(np.diff(u) <= 1e-12)
        base_uses = customers[cells].sum() - u.sum()
        k = np.arange(1, len(u) + 1)
        np.testing.assert_allclose(first, 1 - a + u)
        np.testing.assert_allclose(second, b + k * a + [u[j + 1:].sum() for j in range(len(u))] + base_uses)


def test_vb_objective_never_decreases_once_the_grammaton_settles():
    model = AdaptorGrammar("unigram", a=0.2, b=1.0, truncation=100).fit(UTTERANCES * 3, algorithm="vb", n_iter=12)
    objective = np.array([r.objective for r in model.history_])
    assert np.all(np.diff(objective[4:]) >= -1e-8 * np.abs(objective[4:-1]))


# ------------------------------------------------------------------ using it
def test_segment_finds_the_repeated_words():
    utterances = [list(u) for u in ("ab", "cd", "cdab", "abcdab", "ab", "cd", "abab")] * 4
    for algorithm in ("vb", "cvi"):
        model = AdaptorGrammar("unigram", b=1.0).fit(utterances, algorithm=algorithm, n_iter=8)
        words = model.segment([list("abcd"), list("cdcd")])
        assert words[1] == [("c", "d"), ("c", "d")], algorithm
        if algorithm == "cvi":   # VB's exp-digamma weights charge every extra node: "abcd" stays one word
            assert words[0] == [("a", "b"), ("c", "d")]
        assert sorted(model.lexicon_, key=model.lexicon_.get)[-2:] in ([("a", "b"), ("c", "d")],
                                                                      [("c", "d"), ("a", "b")])
        assert model.segment(utterances[:2]) == [[("a", "b")], [("c", "d")]]
        assert model.history_ and all(np.isfinite(r.objective) for r in model.history_)


def test_colloc_segments_inside_cached_collocations():
    utterances = [list(u) for u in ("abcd", "ab", "cd", "abcdab")]
    model = AdaptorGrammar("colloc", b=1.0).fit(utterances, algorithm="cvi", n_iter=1)
    compiled, layout = model.grammar_, model._layout
    cache_of = layout["cache_of"]

    def cache_rule(name, text):
        x = model.adapted_names.index(name)
        family = int(np.flatnonzero(compiled.kernel.span_parent == layout["adapted_symbol"][x])[0])
        return compiled.kernel.span_base[family] + compiled.substrings.index(compiled.vocabulary.encode(list(text)))

    weights = np.full(compiled.n_rules, 0.1)
    weights[cache_of >= 0] = 0.0
    weights[cache_rule("Colloc", "abcd")] = 10.0     # the utterance is one cached collocation ...
    weights[cache_rule("Word", "ab")] = 1.0          # ... whose base parse has the words ab and cd
    weights[cache_rule("Word", "cd")] = 1.0
    model.rule_weights_ = weights
    tables = make_tables(compiled, weights)
    from cvbayes.trees.inside_outside import viterbi
    rows = viterbi(compiled, tables, list("abcd")).applications
    assert [tuple(r) for r in rows if r[0] == SPAN and compiled.kernel.span_parent[r[1]] ==
            compiled.nonterminals.index("Colloc")]                  # the best parse uses the cache
    assert model.segment([list("abcd")]) == [[("a", "b"), ("c", "d")]]


# ------------------------------------------------------------------ MCMC
def exact_segmentation_posterior(model, utterances):
    """p(segmentations | utterances) of a unigram adaptor grammar, by enumerating every parse of every
    utterance with its cache/base choices and every seating order (the sequential Chinese restaurant
    with the Dirichlet-multinomial base rules)."""
    compiled, layout = model._compile(utterances)
    ones = np.ones(compiled.n_rules)
    per_utterance = [derivations(compiled, layout, ones, u, compiled.start, 0, len(u)) for u in utterances]
    cache_of, base = layout["cache_of"], layout["base"]
    a, b, alpha = model.discount[0], model.concentration[0], model.alpha
    posterior = {}
    for joint in itertools.product(*per_utterance):
        customers = np.zeros(compiled.n_rules)
        tables = np.zeros(compiled.n_rules)
        log_p = 0.0
        for _, _, served in joint:
            for rule, cached in served:
                n, t = customers[cache_of == 0].sum(), tables[cache_of == 0].sum()
                p = (customers[rule] - a * tables[rule]) if cached else (b + a * t)
                log_p += np.log(p / (n + b)) if p > 0 else -np.inf
                customers[rule] += 1
                tables[rule] += 0 if cached else 1
        counts = np.zeros(compiled.n_rules)
        for _, rules, _ in joint:
            np.add.at(counts, [r for r in rules if base[r]], 1)
        for parent in range(compiled.n_nonterminals):
            row = base & (compiled.rule_parent == parent)
            if row.any():
                log_p += gammaln(row.sum() * alpha) - gammaln(row.sum() * alpha + counts[row].sum())
                log_p += (gammaln(alpha + counts[row]) - gammaln(alpha)).sum()
        key = tuple(tuple(r for r, _ in served) for _, _, served in joint)
        words = tuple(tuple(tuple(compiled.vocabulary.decode(list(compiled.substrings.substrings[
            r - compiled.kernel.span_base[0 if compiled.kernel.span_parent[0] == layout["adapted_symbol"][0] else 1]])))
            for r in k) for k in key)
        posterior[words] = posterior.get(words, 0.0) + np.exp(log_p)
    total = sum(posterior.values())
    return {k: v / total for k, v in posterior.items()}


@pytest.mark.parametrize("a, b", [(0.0, 1.0), (0.5, 0.5)])
def test_sampler_matches_the_exact_posterior(a, b):
    utterances = [list("ab"), list("abab")]
    model = AdaptorGrammar("unigram", a=a, b=b, alpha=0.5)
    exact = exact_segmentation_posterior(model, utterances)
    seen = {}

    def record(fitted, iteration):
        key = tuple(tuple(words) for words in fitted.segmentation_)
        seen[key] = seen.get(key, 0) + 1

    n_sweeps = 1500
    model.fit(utterances, algorithm="mcmc", n_iter=n_sweeps, seed=7, callback=record)
    assert set(seen) <= set(exact)
    # 0.01-0.02 in these runs; accepting every proposal (the PCFG approximation alone) gives 0.09-0.12
    tv = 0.5 * sum(abs(seen.get(k, 0) / n_sweeps - p) for k, p in exact.items())
    assert tv < 0.05, (tv, exact, seen)


def test_log_rising_is_the_product_for_whole_tables_and_smooth_in_a():
    for b, a, tables in [(2.0, 0.3, 7), (5000.0, 0.4, 30), (50.0, 0.004, 12), (1e5, 0.5, 300), (3.0, 1e-9, 20)]:
        exact = sum(np.log(b + i * a) for i in range(1, tables))
        assert log_rising(b, a, float(tables)) == pytest.approx(exact, rel=1e-12, abs=1e-9)
    # real T through Gamma functions, and no jump where the Stirling branch takes over (z = b / a = 1e4)
    z = 2.0 / 0.3
    assert log_rising(2.0, 0.3, 7.5) == pytest.approx(6.5 * np.log(0.3) + gammaln(z + 7.5) - gammaln(z + 1), rel=1e-12)
    assert log_rising(1.0, 1e-4 * (1 + 1e-9), 40.0) == pytest.approx(log_rising(1.0, 1e-4 * (1 - 1e-9), 40.0),
                                                                      abs=1e-9)


def _is_local_maximum(objective, a, b, vary_a=True):
    """objective(a, b) is at least its value at b * 1.01, b / 1.01 and (``vary_a``) a +- 0.01 inside [0, 0.99]."""
    best = objective(a, b)
    neighbours = [(a, b * 1.01), (a, b / 1.01)] + [(a + d, b) for d in (-0.01, 0.01) if vary_a and 0.0 <= a + d <= 0.99]
    return all(best >= objective(*point) - 1e-9 for point in neighbours)


def test_empirical_bayes_hyperparameters_maximise_the_seating_probability():
    from scipy.special import gammaln as lg
    utterances = [list(u) for u in ("ab", "cd", "cdab", "abcdab", "ab", "cd", "abab", "efab")] * 3
    for a in (0.0, 0.4):
        model = AdaptorGrammar("unigram", a=a, b=1.0, estimate_hyperparameters=True).fit(
            utterances, algorithm="cvi", n_iter=2)
        state = model._model
        cells = np.flatnonzero(model._layout["cache_of"] == 0)
        served, seated = state[8][cells], state[9][cells]
        keep = seated > 1e-9
        per_table, seated = np.maximum(served[keep] / seated[keep], 1.0), seated[keep]
        n, t = served.sum(), seated.sum()

        def seating(a, b):   # the PY EPPF of the expected seating (module docs), T real through Gamma functions
            return log_rising(b, a, t) - lg(b + n) + lg(b + 1) + (seated * (lg(per_table - a) - lg(1 - a))).sum()

        a_hat, b_hat = model.discount[0], model.concentration[0]
        assert (a_hat, b_hat) == (state[12][0], state[13][0]) and b_hat != 1.0
        assert a_hat == 0.0 or a > 0.0          # a Dirichlet process stays one; a > 0 is learned
        assert _is_local_maximum(seating, a_hat, b_hat, vary_a=a > 0)
    vb = AdaptorGrammar("unigram", a=0.2, estimate_hyperparameters=True).fit(utterances, algorithm="vb", n_iter=3)
    _, first, second = vb._sticks[0]
    k = np.arange(1, first.shape[0] + 1)
    log_stop = digamma(first) - digamma(first + second)
    log_not = digamma(second) - digamma(first + second)

    def sticks(a, b):     # sum_k E_q[log Beta(v_k; 1 - a, b + k a)]
        p, q = 1 - a, b + k * a
        return (lg(p + q) - lg(p) - lg(q) + (p - 1) * log_stop + (q - 1) * log_not).sum()

    assert _is_local_maximum(sticks, vb.discount[0], vb.concentration[0])
    assert np.isfinite(vb.history_[-1].objective)


def test_grammar_from_a_file_and_unknown_names(tmp_path):
    path = tmp_path / "g.txt"
    path.write_text("S -> Word+\n@Word -> P+\nP -> <any:1>\n")
    assert AdaptorGrammar(str(path)).adapted_names == ("Word",)
    with pytest.raises(ValueError, match="unknown grammar"):
        AdaptorGrammar("colloc-syllables")
    path.write_text("S -> Word+\n@Word -> P+\nP -> Q\n")
    with pytest.raises(GrammarError, match="g.txt"):
        AdaptorGrammar(str(path))


def test_restarts_keep_the_run_with_the_best_objective():
    utterances = [list(u) for u in ("abab", "ab", "abb", "ba", "bab", "abba")] * 2
    runs = [AdaptorGrammar("unigram").fit(utterances, algorithm="vb", n_iter=3, seed=s) for s in (4, 5, 6)]
    best = AdaptorGrammar("unigram").fit(utterances, algorithm="vb", n_iter=3, seed=4, n_init=3)
    finals = [r.history_[-1].objective for r in runs]
    assert len(set(finals)) == 3 and best.restart_objectives_ == finals
    assert best.history_[-1].objective == max(finals)
    assert best.segment(utterances) == runs[int(np.argmax(finals))].segment(utterances)
    with pytest.raises(ValueError, match="n_init"):
        AdaptorGrammar("unigram").fit(utterances, algorithm="vb", n_init=0)
