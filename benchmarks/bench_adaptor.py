"""The unigram adaptor grammar's E-step: cvbayes's CFG chart against torch-struct's semi-Markov CRF.

What is compared
----------------
The unigram adaptor grammar (``AdaptorGrammar("unigram")``: Sentence -> Word+, @Word -> Phon+,
Phon -> <any:1>) on the first ``--utterances`` utterances of the Brent corpus (all 9,790 by default).
For one fixed table of rule weights, both sides compute every utterance's log Z and the expected
number of Word nodes over every span (the word marginals), summed by yield into the expected
customers of every yield of Word's cache:

* cvbayes: `cvbayes.models.adaptor.kernels.batch_expectations`, VB's E-step (``_fit_vb``): the
  general CFG chart of `cvbayes.trees.inside_outside` on the compiled grammar (with the ``Word ->
  <any>`` cache family), parallel over chunks of utterances.  It also returns the expected count of
  every rule (Word+, Phon+, Phon), which torch-struct's side does not compute.
* torch-struct: the same quantity is a semi-Markov segmentation.  An utterance is a sequence of
  words; the weight of a word over phonemes i..k-1 is the inside score of Word over that span alone,
  cache_W(s) + w(Word -> Phon+) w(Phon+ -> Phon Phon+)^(L-1) w(Phon+ -> Phon) prod w(Phon -> x),
  computed here from the rule weights (not from the cvbayes chart), times w(Word+ -> Word Word+).
  ``SemiMarkovCRF`` (C = 1 label, log potentials (batch, T, T + 1, 1, 1)) gives log Z up to the
  constant log w(Sentence -> Word+) + log w(Word+ -> Word) - log w(Word+ -> Word Word+), which is
  added back, and its segment marginals, scattered into the yields' customers (``index_add_``).
  Utterances are batched by length, with K = T + 1 for a batch of length T: every segment length
  is allowed (no cap on either side).  Two variants are timed: the public API (``.partition`` then
  ``.marginals``: two forward passes, the second with ``create_graph=True`` as torch-struct does) and
  one forward pass (``SemiMarkov(LogSemiring).logpartition``) with ``torch.autograd.grad`` for the
  marginals.  The potentials and the yield ids are built outside the timed region.

The table: the Dirichlet-process predictive of the gold segmentation of the same utterances (a = 0,
b = ``--concentration``): cache_W(s) = n_s / (n + b) for every gold word type s with n_s tokens, base
mass b / (n + b); Word+ and Phon+ continue/stop and Phon -> x are the gold relative frequencies.
Every substring has a positive Word weight (cache or base), and any positive table costs cvbayes's
chart and torch-struct the same.

The two are checked to agree before timing: log Z per utterance (relative), the expected number of
words per utterance, every per-span word marginal (cvbayes's from
`cvbayes.models.adaptor.kernels.sentence_expectations` on each utterance), and the customers of every
yield.  Timing: cvbayes after a warm-up call (numba's compile or cache load), NUMBA and torch both
with ``--threads`` threads (default 1); the median of ``--repeats`` (>= 3) runs over all utterances.

Second table: seconds per pass of the three learners, ``AdaptorGrammar("unigram", algorithm=a,
n_iter=--passes).fit(utterances)`` on the first ``--learner-utterances`` (2,000) utterances after a
warm-up fit on 50, the median of ``history_[i].seconds``.  There is no packaged adaptor-grammar
peer to run beside them (Johnson's py-cfg is a C++ program, not a package), so that table has no
ratio.

What it does and does not show
------------------------------
The semi-Markov model is the right algorithm for this one grammar: O(T K) segments an utterance
(here K = T + 1, so O(T^2)), while cvbayes's chart is a general CFG chart, cubic in the utterance
length (every split of every span for Word+ and Phon+), and would run any adaptor grammar (colloc,
syllable structure) unchanged; torch-struct's semi-Markov CRF needs the grammar to be a segmentation.
torch-struct's CPU path (no ``genbmm``) is a parallel linear scan: log N log-space matrix products
of (K - 1) x (K - 1) matrices over ~N positions, O(N K^3) work an utterance, and it is written for
batches on a GPU.  So the ratio is the cost of cvbayes's generality and of torch-struct's CPU
implementation on this problem, not a verdict on either algorithm: a numba semi-Markov forward-backward
(O(T^2) an utterance) would beat both.  cvbayes's figure includes the rule counts as well.
Brent's utterances are short (mean 9.8 phonemes, max 53), which favours the cubic chart.
Run ``python benchmarks/bench_adaptor.py --help`` for the options.
"""
import argparse
import datetime
import importlib.metadata
import json
import os
import platform
import statistics
import sys
import time
import warnings
from collections import Counter
from pathlib import Path

import numpy as np

RESULTS_DIR = Path(__file__).resolve().parent / "results"
IMPOSSIBLE = -1e9     # log potential of a segment past the utterance's end (torch-struct's own zero)
# torch-struct's linear scan broadcasts (batch, bin_N / 2, K-1, K-1, K-1) log-space products, bin_N the
# length rounded up to a power of two; batches are split to keep about this many copies under --max-batch-mib.
SCAN_COPIES = 4


# ------------------------------------------------------------------ the problem
def gold_table(compiled, segments, concentration):
    """(R,) rule weights: the DP predictive of the gold segmentation (module notes)."""
    kernel = compiled.kernel
    weights = np.zeros(compiled.n_rules)
    word, phon = compiled.nonterminals.index("Word"), compiled.nonterminals.index("Phon")
    word_family = int(np.flatnonzero(kernel.span_parent == word)[0])
    phon_family = int(np.flatnonzero(kernel.span_parent == phon)[0])
    tokens = Counter(w for utterance in segments for w in utterance)
    n_tokens = sum(tokens.values())
    for w, count in tokens.items():
        weights[kernel.span_base[word_family] + compiled.substrings.index(compiled.vocabulary.encode(list(w)))] = \
            count / (n_tokens + concentration)
    phonemes = Counter(x for w in tokens.elements() for x in w)
    for x, count in phonemes.items():
        weights[kernel.span_base[phon_family] + compiled.substrings.index(compiled.vocabulary.encode([x]))] = \
            count / sum(phonemes.values())
    n_words, n_phonemes = n_tokens, sum(phonemes.values())

    class Node:     # rule_id reads children's labels
        def __init__(self, label):
            self.label = label

    def rule(lhs, *rhs):
        return compiled.rule_id(lhs, [Node(name) for name in rhs])

    weights[rule("Sentence", "Word+")] = 1.0
    weights[rule("Word", "Phon+")] = concentration / (n_tokens + concentration)
    weights[rule("Word+", "Word")] = len(segments) / n_words
    weights[rule("Word+", "Word", "Word+")] = 1.0 - len(segments) / n_words
    weights[rule("Phon+", "Phon")] = n_words / n_phonemes
    weights[rule("Phon+", "Phon", "Phon+")] = 1.0 - n_words / n_phonemes
    ids = dict(word_base=int(kernel.span_base[word_family]), word_count=int(kernel.span_count[word_family]),
               phon_base=int(kernel.span_base[phon_family]), word_symbol=word,
               base=rule("Word", "Phon+"), stop=rule("Word+", "Word"), go_on=rule("Word+", "Word", "Word+"),
               phon_stop=rule("Phon+", "Phon"), phon_go_on=rule("Phon+", "Phon", "Phon+"),
               sentence=rule("Sentence", "Word+"))
    return weights, ids


def semi_markov_potentials(batch, members, weights, ids):
    """Log potentials (B, T, T + 1) of the utterances `members` (all of length T), their span ids
    (B, T, T + 1) (-1 past the end) and the constant that turns the semi-Markov log Z into the grammar's."""
    length = int(batch.offsets[members[0] + 1] - batch.offsets[members[0]])
    width = length + 1
    spans = np.stack([batch.span_ids[batch.span_offsets[u]:batch.span_offsets[u + 1]].reshape(width, width)
                      for u in members])                                            # (B, T+1, T+1) by (i, k)
    log_phon = np.log(weights[ids["phon_base"] + spans[:, np.arange(length), np.arange(length) + 1]])   # (B, T)
    cumulative = np.concatenate([np.zeros((len(members), 1)), np.cumsum(log_phon, axis=1)], axis=1)
    start = np.arange(length)[:, None]
    seg = np.arange(width)[None, :]
    end = start + seg
    valid = (seg >= 1) & (end <= length)                                            # (T, T+1)
    end_c = np.minimum(end, length)
    substring = np.where(valid, spans[:, start, end_c], -1)                         # (B, T, T+1)
    in_family = (substring >= 0) & (substring < ids["word_count"])
    cache = np.where(in_family, weights[ids["word_base"] + np.where(in_family, substring, 0)], 0.0)
    log_base = (np.log(weights[ids["base"]]) + (seg - 1) * np.log(weights[ids["phon_go_on"]])
                + np.log(weights[ids["phon_stop"]]) + cumulative[:, end_c] - cumulative[:, start])
    with np.errstate(divide="ignore"):
        log_word = np.logaddexp(np.log(cache), log_base)
    potentials = np.where(valid, log_word + np.log(weights[ids["go_on"]]), IMPOSSIBLE)
    constant = np.log(weights[ids["sentence"]]) + np.log(weights[ids["stop"]]) - np.log(weights[ids["go_on"]])
    return potentials, substring, float(constant)


# ------------------------------------------------------------------ the two sides
def cvbayes_span_marginals(compiled, tables, batch, word_symbol, adapted_symbol):
    """Per utterance: log Z and the (T + 1, T + 1) expected Word nodes over every span (i, k)."""
    from cvbayes.models.adaptor.kernels import sentence_expectations
    from cvbayes.trees.inside_outside import chart_buffers

    kernel = compiled.kernel
    longest = int(np.diff(batch.offsets).max())
    buffers = chart_buffers(kernel, longest)
    marginals = np.zeros((longest + 1, longest + 1, kernel.n_symbols))
    outer = np.zeros((0, 0))
    counts, customers = np.zeros(compiled.n_rules), np.zeros(compiled.n_rules)
    log_z, spans = np.empty(len(batch)), []
    for u in range(len(batch)):
        tokens, span_ids = batch.sentence(u)
        marginals[:] = 0.0
        log_z[u] = sentence_expectations(kernel, tables, tokens, span_ids, buffers, outer, marginals,
                                         adapted_symbol, counts, customers)
        spans.append(marginals[:tokens.shape[0] + 1, :tokens.shape[0] + 1, word_symbol].copy())
    return log_z, spans


def torch_public(potentials):
    """log Z and segment marginals through the distribution's public API (two forward passes)."""
    from torch_struct import SemiMarkovCRF

    dist = SemiMarkovCRF(potentials)
    return dist.partition.detach(), dist.marginals.detach()


def torch_one_pass(potentials):
    """log Z and segment marginals from one forward pass and its gradient."""
    import torch
    from torch_struct import LogSemiring
    from torch_struct.semimarkov import SemiMarkov

    potentials = potentials.detach().requires_grad_(True)
    log_z, _ = SemiMarkov(LogSemiring).logpartition(potentials)
    log_z = log_z.reshape(-1)
    (marginals,) = torch.autograd.grad(log_z.sum(), potentials)
    return log_z.detach(), marginals


def run_torch(groups, n_yields, method):
    """Every group: log Z (per utterance) and customers summed by yield, as cvbayes returns them."""
    import torch

    customers = torch.zeros(n_yields, dtype=torch.float64)
    log_z = {}
    for members, potentials, yields, keep, constant in groups:
        value, marginals = method(potentials)
        customers.index_add_(0, yields, marginals.reshape(-1)[keep])
        log_z[members] = (value + constant, marginals)
    return customers, log_z


# ------------------------------------------------------------------ driver
def timed(function, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        out = function()
        times.append(time.perf_counter() - start)
    return times, out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--utterances", type=int, default=None, help="first N Brent utterances (default all 9,790)")
    parser.add_argument("--repeats", type=int, default=3, help="timed E-step runs per side; the median is kept")
    parser.add_argument("--threads", type=int, default=1, help="numba and torch threads (default 1)")
    parser.add_argument("--concentration", type=float, default=1.0, help="DP b of the gold table (default 1)")
    parser.add_argument("--max-batch-mib", type=float, default=256.0,
                        help="split torch-struct's equal-length batches above this estimated size (default 256)")
    parser.add_argument("--learner-utterances", type=int, default=2000,
                        help="utterances for the learners' seconds per pass (default 2000; 0 skips them)")
    parser.add_argument("--passes", type=int, default=3, help="passes per learner (default 3)")
    parser.add_argument("--algorithms", default="vb,cvi,mcmc")
    parser.add_argument("--json", type=Path, help="output file (default benchmarks/results/adaptor_<date>.json)")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")

    import numba
    import torch

    from cvbayes.data import load_brent
    from cvbayes.models.adaptor import AdaptorGrammar
    from cvbayes.models.adaptor.kernels import batch_expectations
    from cvbayes.models.adaptor.layout import compile_adaptor
    from cvbayes.trees.inside_outside import chart_chunks, make_tables

    warnings.filterwarnings("ignore", message=".*does not define `arg_constraints`")   # torch-struct's
    numba.set_num_threads(args.threads)
    torch.set_num_threads(args.threads)
    corpus = load_brent()
    n = args.utterances or len(corpus)
    utterances = [list(u) for u in corpus.symbols[:n]]
    model = AdaptorGrammar("unigram")
    compiled, layout = compile_adaptor(model.spec, model.alpha, utterances)
    batch = compiled.prepare(utterances)
    weights, ids = gold_table(compiled, corpus.segments[:n], args.concentration)
    tables = make_tables(compiled, weights)
    adapted_symbol = layout.adapted_symbol
    chunks = chart_chunks(compiled.kernel, batch.offsets)
    lengths = np.diff(batch.offsets)
    print(f"{n} utterances, {int(lengths.sum())} phonemes, longest {int(lengths.max())}, "
          f"{compiled.n_rules} rules ({ids['word_count']} Word yields); threads {args.threads}")

    # cvbayes: warm-up, then the timed E-step
    warm = compiled.prepare(utterances[:5])
    batch_expectations(compiled.kernel, tables, warm.tokens, warm.offsets, warm.span_ids, warm.span_offsets,
                       chart_chunks(compiled.kernel, warm.offsets), compiled.n_rules, adapted_symbol)

    def cvbayes_e_step():
        return batch_expectations(compiled.kernel, tables, batch.tokens, batch.offsets, batch.span_ids,
                                  batch.span_offsets, chunks, compiled.n_rules, adapted_symbol)

    cv_times, (cv_counts, cv_customers, cv_log_z) = timed(cvbayes_e_step, args.repeats)

    # torch-struct: potentials and yield ids outside the timed region, batched by length
    groups = []
    for length in np.unique(lengths):
        members_all = np.flatnonzero(lengths == length)
        per_utterance = SCAN_COPIES * 8 * (2 ** int(np.ceil(np.log2(max(length, 2))))) / 2 * length ** 3 / 2 ** 20
        size = max(1, int(args.max_batch_mib // max(per_utterance, 1e-9)))
        for first in range(0, len(members_all), size):
            members = members_all[first:first + size]
            potentials, substring, constant = semi_markov_potentials(batch, members, weights, ids)
            keep = np.flatnonzero(substring.reshape(-1) >= 0)
            groups.append((tuple(members), torch.from_numpy(potentials[..., None, None].copy()),
                           torch.from_numpy(substring.reshape(-1)[keep]), torch.from_numpy(keep), constant))
    n_yields = ids["word_count"]
    torch_results = {}
    for name, method in (("torch-struct", torch_public), ("torch-struct-one-pass", torch_one_pass)):
        run_torch(groups[:1], n_yields, method)                                           # warm-up
        times, out = timed(lambda: run_torch(groups, n_yields, method), args.repeats)
        torch_results[name] = (times, out)

    # agreement: log Z, words per utterance, every span's word marginal, customers per yield
    ref_log_z, ref_spans = cvbayes_span_marginals(compiled, tables, batch, ids["word_symbol"], adapted_symbol)
    cv_yields = cv_customers[ids["word_base"]:ids["word_base"] + n_yields]
    checks = {"cvbayes chart vs batch_expectations max |dlogZ|": float(np.max(np.abs(ref_log_z - cv_log_z)))}
    for name, (_, (customers, per_group)) in torch_results.items():
        rel_log_z, d_words, d_span = 0.0, 0.0, 0.0
        for members, (value, marginals) in per_group.items():
            value, marginals = value.numpy(), marginals.numpy()[..., 0, 0]
            for row, u in enumerate(members):
                rel_log_z = max(rel_log_z, abs(value[row] - cv_log_z[u]) / abs(cv_log_z[u]))
                length = int(lengths[u])
                ours = ref_spans[u]
                theirs = np.zeros_like(ours)
                for start in range(length):
                    theirs[start, start + 1:] = marginals[row, start, 1:length - start + 1]
                d_words = max(d_words, abs(ours.sum() - theirs.sum()))
                d_span = max(d_span, float(np.max(np.abs(ours - theirs))))
        d_customers = float(np.max(np.abs(customers.numpy() - cv_yields)))
        checks[name] = dict(max_relative_log_z=float(rel_log_z), max_abs_words_per_utterance=float(d_words),
                            max_abs_span_marginal=d_span, max_abs_customers=d_customers)
    words_from_counts = cv_counts[ids["stop"]] + cv_counts[ids["go_on"]]
    checks["|sum customers - Word+ rule counts|"] = float(abs(cv_yields.sum() - words_from_counts))
    worst = max(v["max_relative_log_z"] for k, v in checks.items() if isinstance(v, dict))
    agree = worst < 1e-6 and all(v["max_abs_span_marginal"] < 1e-6 and v["max_abs_customers"] < 1e-6
                                 for v in checks.values() if isinstance(v, dict))
    print(f"agreement (log Z to 1e-6 relative, marginals and customers to 1e-6): {'yes' if agree else 'NO'}")
    for key, value in checks.items():
        print(f"  {key}: {value}")

    cv_median = statistics.median(cv_times)
    rows = [dict(side="cvbayes batch_expectations", seconds=cv_median, seconds_all=cv_times, ratio=1.0)]
    for name, (times, _) in torch_results.items():
        rows.append(dict(side=name, seconds=statistics.median(times), seconds_all=times,
                         ratio=statistics.median(times) / cv_median))
    print(f"\nE-step over {n} utterances ({len(groups)} torch-struct batches), median of {args.repeats}:")
    print(f"{'side':<30} {'seconds':>9} {'ratio':>7}   (ratio: seconds / cvbayes's; > 1: cvbayes faster)")
    for row in rows:
        print(f"{row['side']:<30} {row['seconds']:>9.3f} {row['ratio']:>7.2f}")

    learners = []
    if args.learner_utterances:
        subset = [list(u) for u in corpus.symbols[:args.learner_utterances]]
        print(f"\nseconds per pass, {len(subset)} utterances, {args.passes} passes (no packaged peer):")
        print(f"{'algorithm':<10} {'median s':>9} {'min':>7} {'max':>7}")
        for algorithm in args.algorithms.split(","):
            AdaptorGrammar("unigram", algorithm=algorithm, n_iter=1).fit(subset[:50])        # warm-up
            fitted = AdaptorGrammar("unigram", algorithm=algorithm, n_iter=args.passes).fit(subset)
            seconds = [record.seconds for record in fitted.history_]
            learners.append(dict(algorithm=algorithm, seconds=statistics.median(seconds), seconds_all=seconds))
            print(f"{algorithm:<10} {statistics.median(seconds):>9.3f} {min(seconds):>7.3f} {max(seconds):>7.3f}")

    report = dict(
        benchmark="unigram adaptor grammar E-step on Brent: cvbayes CFG chart vs torch-struct SemiMarkovCRF",
        date=datetime.datetime.now().isoformat(timespec="seconds"),
        machine=dict(platform=platform.platform(), processor=platform.processor(), cpus=os.cpu_count(),
                     python=sys.version.split()[0], load_average=os.getloadavg()),
        versions={name: importlib.metadata.version(name) for name in ("numpy", "numba", "torch", "torch-struct")},
        settings=dict(utterances=n, phonemes=int(lengths.sum()), longest=int(lengths.max()), repeats=args.repeats,
                      threads=args.threads, concentration=args.concentration, max_batch_mib=args.max_batch_mib,
                      torch_batches=len(groups), segment_cap="none: K = T + 1 per equal-length batch",
                      learner_utterances=args.learner_utterances, passes=args.passes),
        seconds_are="median wall time of one E-step over all utterances: log Z and Word customers per yield "
                    "(cvbayes: plus every rule's expected count)",
        ratio_is="torch-struct seconds / cvbayes seconds (> 1: cvbayes faster)",
        agreement=dict(ok=agree, **checks),
        e_step=rows,
        learners_seconds_per_pass=learners,
        learners_peer="none: there is no packaged adaptor-grammar implementation to compare with")
    path = args.json or RESULTS_DIR / f"adaptor_{datetime.date.today().isoformat()}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
