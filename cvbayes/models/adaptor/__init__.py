"""Pitman-Yor adaptor grammars (Johnson, Griffiths and Goldwater 2007) by VB, collapsed VI and MCMC.

An adaptor grammar is a PCFG some of whose nonterminals, the *adapted* ones, cache whole subtrees: an
adapted X rewrites either to a subtree it produced before, with the Pitman-Yor (PY) probability of
reuse, or through its own rules (the *base*), which puts a new subtree in the cache.  With one
adapted ``Word`` over phoneme strings this is Goldwater's unigram word segmentation model; with
``Colloc`` above it, the collocation model (Johnson and Goldwater 2009).

The grammar text format and the built-in grammars: `cvbayes.models.adaptor.grammar`.

Approximation shared by every algorithm
---------------------------------------
The cache of X is indexed by *yields*: an X-node over the substring s is served either by the cache
(total weight cache_X(s) for every cached subtree of yield s) or by the base.  This is the PCFG
approximation of Johnson et al. (2007) (one ``X -> s`` rule per cached yield) taken as the model: for
grammars whose adapted nonterminals' subtrees are fixed by their yield (the unigram grammar: ``Word ->
Phon+``) it is the adaptor grammar itself; above that (``Colloc -> Word+``) a cached collocation keeps
its yield but not its inner word boundaries, which `segment` recovers with the best base parse of the
yield.  The chart is `cvbayes.trees.inside_outside` on the compiled grammar with one ``X -> <any>``
family per adapted X (`cvbayes.models.adaptor.kernels`).

Algorithms (``AdaptorGrammar(algorithm=...)``)
----------------------------------------------
``vb``  Cohen, Blei and Smith (2010): truncated PY stick-breaking, v_k ~ Beta(1 - a, b + k a), over a
        *grammaton* of ``truncation`` candidate yields per adapted X, the mass beyond the last stick
        left to the base; q(v_k) = Beta(1 - a + u_k, b + k a + sum_{j > k} u_j + u_base), q(theta) =
        Dir(alpha + base rule counts), inside-outside on the weights exp E[log .] (thesis eq. 4.12).
        Between passes the grammaton is refreshed: the ``truncation`` yields with most expected
        customers and at least one, in decreasing order; a yield that enters it starts with its expected
        customers as its stick's count.  Each atom is one draw from its nonterminal's base: its base
        parse is counted in q(theta) and the nested restaurants and its log Z in the objective, the
        ELBO, which can dip when the grammaton changes and never does while it is fixed
        (`cvbayes.models.adaptor.vb`).
``cvi`` Collapsed VI (thesis ch. 4 and §5.3) with the rule probabilities and the Pitman-Yor restaurants
        integrated out: the derivation follows.
``mcmc`` Johnson, Griffiths and Goldwater (2007): Metropolis-Hastings over utterance parses
        (`cvbayes.models.adaptor.sampler`).

CVI: the derivation
-------------------
*Family and update.*  q(z) = prod_u q(z^u) over units u (an utterance's parse, its adapted nodes served
by the cache or the base), the PCFG's structured mean field (thesis eq. 4.18); each update is
q(z^u) ~ exp E_{q(z^-u)}[log p(z^u | z^-u)] (eq. 4.19), a unit's own nodes not seeing each other (the
approximation from eq. 4.22 to 4.23).

*The predictive of one node.*  With the seating of X's restaurant integrated out, an X-node over the
yield s given the other units' nodes has the probability

    p_X(s) = (n_s - a t_s + theta'_s) / (n + b),        theta'_s = (b + a T) H_X(s),

n_s customers and t_s tables at yield s, n and T their sums over X's yields, a and b X's discount and
concentration, H_X(s) the probability that X's base rules generate s (itself the MEAN predictive of the
base rules, eq. 4.24, whose counts come from the tables).  The chart splits p_X(s) into the cache rule
``X -> s``, (n_s - a t_s) / (n + b), and the base path, (b + a T) / (n + b) times the inside of X's base
rules over s (which is H_X(s)).

*E[log p] with the zero case exact.*  n_s and t_s are random under q(z^-u).  The first-order step
E[log(n_s - a t_s + theta')] ~ log(E[n_s] - a E[t_s] + theta') (eq. 3.32; ``predictive="first-order"``)
fails where it matters: theta'_s is ~1e-20 for a long yield, so a sliver of expected mass (1e-7, the sum
of many units' tiny posteriors) weighs 1e13 times the yield's base mass, and mass snowballs onto whole
utterances (on Brent 57 % of the utterances became one word).  This step is CVB0 (Asuncion, Welling,
Smyth and Teh 2009: the other units' expected counts plugged into the collapsed predictive), which works
for LDA, where every topic has a prior pseudo-count alpha; here the pseudo-count of a yield is theta'_s,
and for a long yield it is nothing.  Measured with the start and unit below (first 1,000 Brent
utterances, unigram, 8 passes, seeds 0-2): CVB0 falls from token F1 51-54 after its first pass to 41-42
(0.62 words per gold word), zero-exact ends at 56.5-62.7 (mean 60.1; 1.05-1.07 words per gold word), VB
(10 passes, 1 start) at 48.9.  log, like psi, diverges at 0 (Teh, Kurihara and Welling 2008), so, as
eq. 5.30-5.35 do for the tables, the case n_s = 0 (then t_s = 0 and the log is log theta'_s) is taken
exactly and the first-order step only on n_s > 0, at E_+[x] = E[x] / q(n_s > 0):

    exp E[log(n_s - a t_s + theta')] ~ theta'^q0 (E_+[n_s - a t_s] + theta')^q+,   q0 = q(n_s = 0), q+ = 1 - q0.

The cache rule carries this minus theta' (the base path carries theta'); ``predictive="zero-exact"``
(`cvbayes.models.adaptor.kernels.cache_mass`).  A yield with q+ << 1 now weighs about theta' (1 + q+
log(E_+[n_s] / theta')), its base mass and a little, instead of E[n_s]; a yield every unit is sure of
keeps E[n_s] - a E[t_s].  The normaliser log(n + b) keeps the first-order step (n is large).
``predictive="second-order"`` adds -Var_+[n_s] / (2 (E_+[n_s - a t_s] + theta')^2) to the log on n_s > 0
(Teh, Newman and Welling 2007's second-order term), Var_+ from sum_m q(n^m_s > 0) q(n^m_s = 0) (the spread
of t_s ignored); it measured no better than the zero case alone, which it contains (the 1,000
utterances above: 62.7, 56.5 and 61.5 against 62.7, 56.5 and 61.1).

*q(n_s = 0).*  n_s = sum_m n^m_s over the units and q factorises over them, so q(n_s = 0) = prod_m
q(n^m_s = 0) (eq. 5.46), with q(n^m_s = 0) = 1 - min(E[n^m_s], 1): exact when a unit has at most one
X-node over s in each parse (a unit with two can only be more often empty than this says).

*Expected tables.*  Given n_s customers, the seating at yield s is a restaurant of its own whose next
customer opens a table with probability theta'_s / (k - a t + theta'_s).  At a = 0 E[t_s] = theta'
(psi(theta' + n_s) - psi(theta')) exactly (eq. 5.29); a > 0 has no closed form, and
`cvbayes.core.restaurants.py_table_count` carries the expected count through the customers (mean field;
2.2 % low at a = 0.7, 0.2 % at a = 0.3).  The random n_s is split at zero as above: E[t_s] = q+
T(E_+[n_s]) (eq. 5.35).  T and n_X in theta' are held at their values at the last table refresh during a
pass, so that each t_s is a function of its own yield's statistics.  At a > 0 the new-table mass b + a T
grew with X's tables while s's customers came: they are spread evenly over X's n_X customers, the k-th of
n_s seeing b + a T g(k / n_s), g the expected growth of a PY(a, b) restaurant's tables (since 2026-11-28;
with b + a T throughout the tables came out a fifth to a third too many on simulated restaurants, and a,
learned from them, rose pass after pass).

*a and b* (``estimate_hyperparameters``).  After each pass's table refresh each adapted X takes the mode of
p(a, log b | its expected table counts) under Johnson and Goldwater's (2009) prior.  CVI knows every yield's
expected customers n_s and tables t_s, not how the customers sit at those tables, so the likelihood sums the
seatings out: prod_{i < T} (b + i a) Gamma(b + 1) / Gamma(b + n) prod_s S_a(n_s, t_s), with S_a the
generalized Stirling numbers (Buntine and Hutter 2012; `cvbayes.core.restaurants.dish_seating_likelihood`),
the counts rounded to whole numbers and a yield of t_s < 1 a dish of weight t_s.  Giving every table of s the
mean size n_s / t_s instead, one seating in place of their sum (the rule until 2026-11-28), sends a to 0: on a
simulated PY(0.4, 400) restaurant of 20,000 customers it found a = 0, b = 1,430 from the true table counts,
the Stirling form a = 0.394, b = 422 (the seating's own estimate 0.393, 424); on Brent's colloc grammar it
ended Colloc at a = 0, b ~ 1,900 where the sampler learns a ~ 0.4, b ~ 430.

*The unit* (``unit``).  "utterance", or "type": identical utterances have identical updates, so all the
copies of an utterance are left out together and put back together, with their statistics times their
number.  A copy then no longer sees its twins; under the collapsed model it would, and the whole
utterance as one word gains most from that (the same pull that makes a sampler's repeated utterances
stick to one parse).  On Brent "type" has 40 % fewer units and segments better (below).

*Nested adapted nonterminals* (Word under Colloc).  Y's customers are the Y-nodes of the tables of the
adapted X above it: a table of X at yield c holds one base parse of c, with m_{c,s} expected Y-nodes over
s, so n^Y_s = sum_c E[t_c] m_{c,s} (a weighted inside-outside over X's yields, once a pass).  Its zero
case: the tables are the units, each without a Y-node at s with probability 1 - p, p = min(m_{c,s}, 1),
and the number of c's tables split at zero as the customers are, q(none from c) = E[(1 - p)^t_c] ~ q(n_c =
0) + q(n_c > 0) (1 - p)^E_+[t_c], so log q(n^Y_s = 0) = sum_c log q(none from c)
(`cvbayes.models.adaptor.cvi.nested_statistics`; it was min(n^Y_s, 1)).  Y's predictive is then the same
as X's.  *A unit's own share* (since 2026-11-28): the statistics are sums over X's yields c of c's share,
a function of c's tables (E[t_c], q(n_c = 0)) and of m_{c,s}, so when a unit moves X's customers at c (taken
out, or put back) and c's tables follow, every Y-yield s of c's parse takes the difference of c's share
(`cvbayes.models.adaptor.kernels.move_nested`, m_{c,s} kept sparse per c from the refresh's table charts).
Left out, a unit then sees Y as the others' tables make it (eq. 3.44), not its own: a unit alone in using a
collocation no longer sees that collocation's words as cached because of itself.  Its share is recomputed
from its new customers when it is put back (not held at the refresh's), so between refreshes Y's statistics
are what the refresh would count from X's current tables; holding each unit's share would store O(L^4)
numbers a unit.  Colloc, a = 0.4, b = 400 learned, 6 passes, seeds 0 and 1, token F1 against Y fixed
during the pass: all of Brent 75.0 and 72.8 against 74.4 and 71.5; its first 2,000 utterances 71.2 and 68.5
against 70.5 and 67.9.  The suffixes split off as words ('s', 'z', 'IN') stay as they were.

*The start* (``init``).  A start of sampled trees ("sample", the sampler's initialisation) is degenerate
for this predictive: every q(n^m_s = 0) is 0 or 1, the zero-exact predictive is then the sampler's of that
state, and a yield the soft updates propose keeps almost only its base mass until the units using it are
sure of it, which needs the others to have taken it first: the updates stay at the start (on 2,000 Brent
utterances token F1 0.178, the start's own, unchanged over 8 passes).  "empty" (the default) adds the
units one by one to empty counts in the first pass with the first-order predictive, which spreads mass
over every yield the units find plausible, without the snowball of later passes (it has no earlier mass to
feed on); the zero-exact passes then prune the slivers (0.620 after the first pass, 0.632 after 8).
During the start every adapted node of a unit's parse counts as a customer of its restaurant, as the
sampler seats the nodes of a table it opens, so that a nested restaurant has customers before its first
table refresh; without them Y's first refresh parses X's yields with Y's base alone, which cuts them into
single symbols (colloc on 300 utterances: Words of one phoneme, token F1 0.44 against 0.56).

*What remains approximate.*  The yield-indexed cache (above); a unit's nodes do not see each other; the
first-order step on n_s > 0 and on the normaliser; q(n^m_s > 0) = min(E[n^m_s], 1); the PY tables'
mean-field recursion.  Counted from the tables once a pass and not left out: the base rules below adapted
nonterminals, H_X(c) and the nested parses m_{c,s} (both under the refresh's predictive, a unit's own share
in), and nested statistics two levels down (colloc-syllable's below Word: only the adapted nonterminals
nested in a top-level one follow its tables during a pass).

Start of vb
-----------
VB's q(theta) and q(v) come from a tree per utterance drawn from the predictive of the utterances before
it (the sampler's initialisation, ``init="sample"``), or from its first E-step under the prior
("empty").

Package layout
--------------
``grammar`` the grammar text and the built-in grammars; ``layout`` the grammar compiled with its cache
families and the rule layout; ``kernels`` the numba kernels and the collapsed learners' named state;
``vb``, ``cvi`` and ``sampler`` the three learners (on `cvbayes.schedules`' batch, leave-one-out and pass
schedules); ``hyperparameters`` the learned a and b; ``decode`` segmenting; ``model`` `AdaptorGrammar`.
"""
from .grammar import (BRENT_CONSONANTS, BRENT_VOWELS, BUILT_IN_GRAMMARS, AdaptorGrammarSpec, adapted_regions,
                      parse_adaptor_grammar, read_grammar_text, syllable_grammar)
from .model import AdaptorGrammar
from .sampler import annealing_temperature, parse_anneal

__all__ = ["AdaptorGrammar", "AdaptorGrammarSpec", "BRENT_CONSONANTS", "BRENT_VOWELS", "BUILT_IN_GRAMMARS",
           "adapted_regions", "annealing_temperature", "parse_adaptor_grammar", "parse_anneal", "read_grammar_text",
           "syllable_grammar"]
