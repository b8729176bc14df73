"""The colloc grammar over the noisy channel learned by CVI: `NoisyWords(grammar="colloc", algorithm="cvi")`
(issue 31), the collapsed counterpart of `cvbayes.models.noisy_colloc`'s VB as `CollapsedNoisyWords` is of the
unigram's (`cvbayes.models.noisy_words`, CVI).

Collapsed model
---------------
The model of `noisy_colloc` (``Sentence -> Colloc+``, ``@Colloc -> Word+``, ``@Word -> Phon+``, every word token
through the edit channel) with both caches' sticks, the channel's rows and both ``+`` rule pairs integrated out.
Units are utterance *types* (their c_u copies left out and put back together), q(z) = prod_u q(z^u) and the
update q(z^u) ~ exp E_{q(z^-u)}[log p(z^u | z^-u)] (thesis eq. 3.44-3.46), a unit's own pieces not seeing each
other (CVI-2, eq. 3.47).  The chart is `noisy_colloc_chart`'s (eq. K1) on the span scores

    A^-u(a, b) = sum_c pi^C_c p_bar(y_ab | x_c1 ... x_cn),   B = pi^C_0,
    S(a, b)    = sum_k pi^W_k p_bar(y_ab | x_k) + pi^W_0 sum_x P0(x) p_bar(y_ab | x)                      (V1)

with ``Colloc+`` and ``Word+`` weights rho_bar, every weight a predictive:

* the channel p_bar and ``Colloc+``'s rho_bar: posterior means of the other units' expected counts (eq.
  3.49-3.50, MEAN), as in `CollapsedNoisyWords`;
* Colloc's restaurant (eq. C1 on collocations): with n^C_c customers of collocation c (tuple of underlying
  words), t^C_c tables, n^C and T^C in all, pi^C_0 = (b + a T^C) / (n^C + b) and pi^C_c = (exp E[log(n^C_c - a
  t^C_c + theta'_c)] - theta'_c) / (n^C + b), theta'_c = (b + a T^C) H_C(c), the zero-exact step
  (`adaptor.kernels.cache_mass`, eq. 5.30-5.35, log q(n^C_c = 0) = sum_m c_m log(1 - min(E[n^m_c] / c_m, 1)),
  eq. 5.46).  Colloc's base is ``Word+`` over Word's predictive,

      H_C(c) = c_W^(n - 1) e_W prod_i (pi^W_[x_i] + pi^W_0 P0(x_i)),                                      (V2)

  the collocation's share of the base path B's sum (as theta'_k's of P0 in eq. C1); pi^C_c is then the
  Pitman-Yor predictive of c less that share;
* Word's restaurant: *nested* below Colloc (`cvbayes.models.adaptor`'s notes, 'Nested adapted nonterminals').
  Word's customers are the Word nodes of Colloc's tables: a table of c is one draw from Colloc's base, whose
  words are the m_{c,x} copies of x in c exactly (the atom is underlying: no channel, no parse to sum over), so

      n^W_x = sum_c E[t^C_c] m_{c,x},   log q(n^W_x = 0) = sum_{c contains x} log q(n^C_c = 0)               (V3)

  (q(none from c) = q(n_c = 0) + q(n_c > 0) (1 - min(m_{c,x}, 1))^E_+[t_c] with m_{c,x} >= 1), the ``Word+``
  rules E[t^C_c] (n - 1) and E[t^C_c] likewise, T^W from `py_table_count` with Word's base P0 and pi^W as eq. C1.

A unit's statistics are VB's E-step on its type alone under eq. V1 (`expected_colloc_types` with no Colloc atom
of its own): its expected edit counts (of the base collocations' words and of the cached collocations), the
expected customers of each collocation the chart offers, its base collocations read as the identity (each its
tuple of surface words, `base_collocations`, FLOOR) credited as customers of that collocation (new to the lexicon
if need be), and its expected collocations (``Colloc+`` counts: collocations - c_u and c_u).  The words of its
base collocations are *not* also Word customers of the unit: a base collocation opens a table of its reading,
whose words eq. V3 already counts through E[t^C_c]; adding them would count every new table's words twice.

Kept per unit and taken out: its collocations' customers and occupancy, its edit counts, its collocations.
Once a pass, in order: Colloc's E[t^C_c] (`py_table_count`, theta'_c from the last pass's H_C); Word's nested
statistics eq. V3 from them and its E[t^W_x]; the offered collocations (as `CollapsedNoisyWords`' offered words,
eq. C2: the ``truncation`` collocations of most customers above ``min_customers``; ``dropped_mass_`` is Colloc's
D / (n^C + b)) and the offered Words likewise.  The start: one E-step of every unit under `CollocVB`'s start q
(the channel-free colloc grammar's lexicon and collocations, `first_channel`), not a pass.  The objective is the
sum of the units' leave-one-out log Z (times copies).

What is approximate, beyond `CollapsedNoisyWords`' list (the first-order step on n > 0 and on the normalisers
and rule counts, q(n^m > 0) = min(E[n^m] / c_m, 1), the identity reading, FLOOR, offered atoms, the deficient
chart): Word's nested statistics (its customers, tables and ``Word+`` rules) are fixed during a pass and the
unit's own share in them is not left out (as the channel-free adaptor CVI's nested restaurants); H_C of eq. V2
uses the last pass's Word predictive; Colloc's base path B sums over segmentations and per-word channels while
a cached collocation is one lattice over its concatenated words (`noisy_colloc`'s model), so theta'_c is the
collocation's share of B only up to that difference.

Cost and measurements
---------------------
A unit's chart is VB's E-step on one type (both restaurants' lattices on every span, its buffers set up for
the type); the tables and Word's statistics once a pass are linear in the lexicons.  On the first 1,500 Brent
utterances through `cvbayes experiment noisy-words --grammar colloc`'s seed-0 channel (its settings: max_insertions
1, channel priors 0.1, 10 start passes of the channel-free colloc grammar, 10 passes; one seed): token F1 0.418
(boundary 0.546), 52 s a pass (855 s in all), against VB's 0.493 (0.675, 18 s a pass) and the unigram's cvi 0.616
and vb 0.572; without the channel colloc cvi 0.298 and vb 0.443 (cvi below vb there too).  The leave-one-out
objective rose in every pass (-34,112 to -32,490).  Where its errors lie (the first 500 utterances, same settings):
it *under*segments, 1,058 words for the 1,541 gold tokens (precision 0.37, recall 0.25, F1 0.30), where VB
oversegments (1,699 words, 0.36 and 0.40, F1 0.38): many base collocations are read as one long word.  Word's
nested statistics come from Colloc's tables only (eq. V3), a few per collocation type, most of one word, so its
``Word+`` rules favour one-word collocations and its cache is thin against VB's, whose Word draws are every
token's.  Not the cause alone: adding every unit's base-collocation words and ``Word+`` rules to Word's
statistics (VB's bookkeeping, fixed during a pass; the double count above) gave 0.28 on those 500 (1,017 words).
"""
from __future__ import annotations

import numpy as np

from ..core import rules
from ..core.rules import MEAN
from .noisy_colloc import CollocWeights, colloc_log_evidence, expected_colloc_types, packed, unpacked
from .noisy_words import (SLIVER, CollapsedNoisyWords, Weights, base_probability, expected_tables, laid_out,
                          py_log_weights)


class CollapsedNoisyColloc(CollapsedNoisyWords):
    """CVI's state and passes for the colloc grammar (module notes): `CollapsedNoisyWords`' units, channel and
    offered atoms with Colloc's restaurant as the units' (``lexicon``, ``words``, ``customers``, ... hold
    collocations, ``rules`` the ``Colloc+`` pair) and Word's nested below it (eq. V3: ``word_list``,
    ``word_customers``, ``word_log_empty``, ``word_tables``, ``word_rules``)."""

    # -- Colloc's lexicon and the units ------------------------------------------------------------------
    def _seed(self, start):
        """The start's collocations indexed; Word's restaurant empty until the first refresh."""
        self.word_list, self.word_rules = [], np.zeros((1, 2))
        self.word_customers, self.word_log_empty, self.word_tables = np.zeros(0), np.zeros(0), np.zeros(0)
        self.word_table_total = 0.0
        self._word_predictive()
        for colloc in start.collocs:
            self._index(colloc)
        return np.arange(len(start.collocs))

    @staticmethod
    def _key(atom):
        key = tuple(tuple(int(s) for s in word) for word in atom)
        return key, key

    def _chart(self, i, weights, active):
        """Unit i's E-step on its type alone under ``weights`` (`expected_colloc_types`), the offered
        collocations the lexicon rows ``active``: (edit counts, Colloc rows, their expected customers); its
        expected collocations to ``_unit_words``."""
        corpus, w = self.corpus, weights.words
        lo, hi = corpus.offsets[i], corpus.offsets[i + 1]
        words = [w.word_ids[a:b] for a, b in zip(w.word_offsets[:-1], w.word_offsets[1:])]
        statistics, self._evidence = expected_colloc_types(
            weights, [], words, corpus.ids[lo:hi], np.array([0, hi - lo], np.int64), corpus.copies[i:i + 1],
            corpus.first[i:i + 1], *self.model._e_step_settings())
        self._unit_words = float(statistics.colloc_customers.sum() + statistics.bases)
        return (statistics.words.edits, *self._credited(statistics.colloc_customers, statistics.served, active))

    def _log_evidence(self, ids, offsets, weights):
        out = np.empty(offsets.shape[0] - 1)
        colloc_log_evidence(ids, offsets, *weights.chart_arguments(), self.model.max_insertions, self.model.longest,
                            out)
        return out

    # -- the predictive of eq. V1 ----------------------------------------------------------------------------
    def _base_probability(self, k):
        """H_C(c) of eq. V2 under Word's predictive."""
        w, colloc = self.word_weights, self.words[k]
        base = float(np.exp(w.log_base))
        mass = w.go_on ** (len(colloc) - 1) * w.end
        for word in colloc:
            mass *= self.word_probability.get(word, 0.0) + base * base_probability(word, self.phones, w.stop)
        return mass

    def predictive(self):
        """`CollocWeights` of eq. V1 under the current collapsed counts (those of the units not left out)."""
        table = self._channel()
        go_on, end = rules.dirichlet_table(MEAN, np.maximum(self.rules, 0.0), self.model.alpha)[0]
        return CollocWeights(self.word_weights._replace(table=table), self.colloc_ids, self.colloc_offsets,
                             self.word_lengths, self.length_offsets, *self._cache_log_weights(), float(go_on),
                             float(end))

    def _lay_out(self, chosen):
        self.colloc_ids, self.colloc_offsets, self.word_lengths, self.length_offsets = packed(chosen)

    # -- once a pass ---------------------------------------------------------------------------------------------
    def after_pass(self, iteration):
        """Colloc's tables, then Word's nested statistics from them (eq. V3), then the offered collocations."""
        self._refresh_tables()
        self._nest_words()
        self._choose_active()

    def _nest_words(self):
        """Word's customers, occupancy and ``Word+`` rules from Colloc's tables (eq. V3), its tables."""
        n_collocs = len(self.words)
        customers, log_empty, go_on, end = {}, {}, 0.0, 0.0
        for colloc, tables, empty in zip(self.words, self.tables[:n_collocs], self.log_empty[:n_collocs]):
            if tables <= 0.0:
                continue
            for word in colloc:
                customers[word] = customers.get(word, 0.0) + tables
            for word in set(colloc):
                log_empty[word] = log_empty.get(word, 0.0) + min(empty, 0.0)
            go_on += tables * (len(colloc) - 1)
            end += tables
        model = self.model
        self.word_list = list(customers)
        self.word_customers = np.array([customers[w] for w in self.word_list])
        self.word_log_empty = np.array([log_empty[w] for w in self.word_list])
        self.word_tables = expected_tables(self.word_customers, self.word_log_empty,
                                           [base_probability(w, self.phones, model.base_stop) for w in self.word_list],
                                           self.word_table_total, model.a, model.b)
        self.word_table_total = float(self.word_tables.sum())
        self.word_rules = np.array([[go_on, end]])
        self._word_predictive()

    def _word_predictive(self):
        """Word's `Weights` (eq. C1 on eq. V3's statistics, its channel filled in by `predictive`) over the
        offered words (the ``truncation`` of most customers above ``min_customers``, as the offered atoms)."""
        model = self.model
        customers = self.word_customers
        ranked = np.argsort(-customers, kind="stable")[:model.truncation]
        self.word_offered = np.sort(ranked[customers[ranked] > max(model.min_customers, SLIVER)]).astype(np.int64)
        words = [self.word_list[k] for k in self.word_offered]
        log_pi, log_base = py_log_weights(
            customers[self.word_offered], self.word_log_empty[self.word_offered], self.word_tables[self.word_offered],
            [base_probability(w, self.phones, model.base_stop) for w in words], self.word_table_total,
            float(customers.sum()), model.a, model.b)
        go_on, end = rules.dirichlet_table(MEAN, self.word_rules, model.alpha)[0]
        self.word_weights = Weights(*laid_out(words), log_pi, log_base, None, self.phones, model.base_stop,
                                    float(go_on), float(end))
        self.word_probability = dict(zip(words, np.exp(log_pi)))

    # -- what the model reads ---------------------------------------------------------------------------------
    def fitted(self):
        """(edit counts, the offered Words, their nested customers, `CollocWeights` of eq. V1 with no unit
        left out)."""
        return (self.edits.copy(), [np.array(self.word_list[k], np.int64) for k in self.word_offered],
                self.word_customers[self.word_offered].copy(), self.predictive())

    def colloc_counts(self):
        """The offered collocations' expected customers."""
        return self.customers[self.active].copy()

    # -- checkpoints ------------------------------------------------------------------------------------------
    def _flat_atoms(self):
        return dict(zip(("colloc_ids", "colloc_offsets", "word_lengths", "length_offsets"), packed(self.words)))

    def _split_atoms(self, saved):
        return unpacked(*(np.asarray(saved[name], np.int64) for name in
                          ("colloc_ids", "colloc_offsets", "word_lengths", "length_offsets")))

    def state(self):
        words, offsets = laid_out(self.word_list)
        return super().state() | {
            "word_list": words, "word_list_offsets": offsets, "word_customers": self.word_customers.copy(),
            "word_log_empty": self.word_log_empty.copy(), "word_tables": self.word_tables.copy(),
            "word_rules": self.word_rules.copy(), "word_table_total": self.word_table_total}

    def restore(self, saved):
        words, offsets = np.asarray(saved["word_list"], np.int64), saved["word_list_offsets"]
        self.word_list = [tuple(words[offsets[k]:offsets[k + 1]].tolist()) for k in range(len(offsets) - 1)]
        for name in ("word_customers", "word_log_empty", "word_tables", "word_rules"):
            setattr(self, name, np.array(saved[name]))
        self.word_table_total = float(saved["word_table_total"])
        self._word_predictive()
        super().restore(saved)
