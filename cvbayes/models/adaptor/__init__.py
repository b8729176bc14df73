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
        customers, in decreasing order; a yield that enters it starts with its expected customers as
        its stick's count.  (The subtrees of the grammaton's atoms are not counted in q(theta); the
        objective, the ELBO, can dip when the grammaton changes and never does while it is fixed.)
``cvi`` Collapsed VI, thesis ch. 4 with the PY adaptor collapsed as well: the unit is an utterance's
        parse, its expected customers are left out and the others' give the PY predictive
        (n_s - a t_s) / (n + b) for the cache at yield s and (b + a T) / (n + b) for the base, the
        MEAN rule (eq. 4.24) for the base rules.  The expected tables are a function of the customers,
        as the HDP's in thesis §5.3 (eq. 5.29-5.35, Teh, Kurihara and Welling 2008):

            E[t_s] = theta_s q(n_s > 0) (psi(theta_s + E_+[n_s]) - psi(theta_s)),
            E_+[n_s] = n_s / q(n_s > 0),   theta_s = b H_X(s),

        the DP's (a = 0) seating of n_s customers of a dish with base mass b H_X(s), where H_X(s) is
        the probability that X's base rules generate s; q(n_s > 0) = 1 - prod_m q(n^m_s = 0) with
        q(n^m_s = 0) = 1 - min(n^m_s, 1) (exact when an utterance has at most one X-node over s in any
        parse).  With a > 0 the same DP formula is used for t_s (an approximation: the PY's seating of
        one dish has no such closed form); only the predictive carries a.  Within a pass t_s and T
        follow every move of the customers (left out per utterance) with theta fixed; after the pass
        theta is recomputed (H_X(s) by inside over every yield s under the current counts) and the
        rules inside adapted subtrees are counted from the tables: a batch inside-outside over the
        yields s of X's cache under X's base rules, yield s weighted by E[t_s], gives X's base rules
        and the plain rules below them, and the customers of the adapted nonterminals used there
        (``Word`` under ``Colloc``; their q(n_s > 0) taken as min(n_s, 1)).  Rules outside every
        adapted subtree (``Sentence -> Word+``) are counted from the utterances, left out as usual.
        CVI needs every nonterminal in one region (top, or one adapted subtree: `adapted_regions`).
        Approximations: the predictive of the expected counts stands for the expected predictive
        (the zeroth-order approximation of §3.3); an utterance's nodes do not see each other's
        customers (as the PCFG's CVI ignores rule reuse within a sentence); the counts from the tables
        are fixed during a pass, so an utterance's own share in them is not left out (nor, for a
        nested adapted nonterminal, in its customers and tables).
``mcmc`` Johnson, Griffiths and Goldwater (2007): Metropolis-Hastings over utterance parses
        (`cvbayes.models.adaptor.sampler`).

Start (``init``)
----------------
All three start from the same state by default: each utterance in a random order gets a tree drawn from
the predictive of the utterances before it (the sampler's initialisation).  VB takes q(theta) and q(v)
from those trees' counts; CVI takes each tree's indicator statistics as the utterance's first local
statistics (the thesis's random start of the local posteriors, footnote 5).  ``init="empty"`` is VB's
E-step under the prior and CVI's first pass over empty counts.

What CVI's approximation does to word segmentation
--------------------------------------------------
The first-order (MEAN) predictive of a yield that other utterances give only a little expected mass is
linear in that mass, far above the base's b H_X(s) / (n + b) (for a long yield H_X(s) is ~1e-20; a yield
with 1e-7 expected customers weighs 1e-11).  A sampler's state has no customer at such a yield, which
costs the base; CVI's has a little, and an utterance repeated k times multiplies the mass of its
whole-string yield by about k / ((n + b) Z) per pass, Z its probability as words: with Z below
k / (n + b) the whole string becomes one word.  So CVI undersegments, more with every pass (on Brent,
`cvbayes experiment wordseg`), and its segmentation is less probable under the exact model than the
sampler's (docs/results/wordseg).  Treating q(n_s = 0) exactly as in thesis
eq. 5.29-5.35 (E[log] split into n_s = 0 and n_s > 0) removes that growth but freezes every yield that
no utterance is sure of, and the segmentation stays where it started; it is not used.

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
