"""Benchmark of learning on shards (cvbayes.models.hmm_shards, issue 21).

The measurements, each a subcommand (results appended to benchmarks/results/distributed.json):

1. ``equality``: EM and VB on a synthetic corpus (default 1M tokens, K = 20, W = 5,000 Zipf-like
   words, sentences of 5 to 40 tokens) in one process and on a Dask LocalCluster of 1, 2 and 4
   worker processes (one shard each): the largest relative difference of the objective trajectories,
   and the seconds per pass (median over the passes after the first), i.e. the throughput and the
   overhead of Dask against the in-process pass;
2. ``memory``: the peak resident memory (ru_maxrss) of one worker process holding one shard of
   1M to 20M tokens, after an EM pass (a fresh cluster per size, so each peak is its own);
3. ``cvi2``: the sharded CVI-2 against sequential CVI-2 on the full Brown corpus (unsupervised,
   K = 45 states scored against its 87-odd tags, the thesis's alpha = beta = 0.1 and footnote 5's random local start): many-to-one
   accuracy and seconds per pass, shards on threads of one process and on 2 Dask workers;
4. ``lda-equality`` (issue 32): LDA's batch VB, online VB and SCVB0 on Brown's 500 documents (or ``news``)
   in one process and on LocalClusters of 1, 2 and 4 workers (processes, and 2 workers as threads of one
   process): the largest relative difference of the objectives and of the topic-word statistics, seconds
   per pass, and the median per-pass breakdown of ``shard_timings_`` (compute per shard, bytes sent and
   returned, broadcast, reduction, overhead);
5. ``lda-cvb0``: the sharded CVB0 (``cvb0-sharded``) with 1, 2 and 4 shards against CVB0: held-out
   document-completion perplexity (a tenth of the documents held out) and seconds per pass;
6. ``tree-equality`` (issue 32): the DMV's and the PCFG's EM and VB on the UPOS tags of UD English EWT's
   training sentences (punctuation removed; the DMV up to ``--max-length`` words, the PCFG, grammar
   induction over ``--nonterminals``, up to ``--pcfg-max-length``) in one process and on LocalClusters of
   1, 2 and 4 worker processes: the largest relative difference of the objectives and of the counts,
   seconds per pass and the median per-pass breakdown of ``shard_timings_``;
7. ``adaptor-equality`` (issue 32): the adaptor grammar's VB (``--grammar``, default unigram) on Brent's
   9,790 utterances (or the first ``--utterances``) in one process and on LocalClusters of 1, 2 and 4
   worker processes: the largest relative difference of the ELBOs, of the expected base rule counts and
   of the expected customers, seconds per pass, the median per-pass breakdown of ``shard_timings_`` and
   the workers' peak resident memory;
8. ``dmv-cvi``: the DMV's sharded CVI with 1, 2, 4 and 8 shards (threads) against CVI on EWT: objective,
   training log-likelihood and attachment accuracy;
9. ``la-equality`` (issue 32): PCFG-LA's EM and VB (``--subtypes`` H) on UD English EWT's training trees
   converted to phrase structure (`cvbayes.data.ud_to_penn`) in one process and on LocalClusters of 1, 2
   and 4 worker processes: the largest relative differences of the objectives and of the annotated
   counts, seconds per pass, the per-pass breakdown;
10. ``pcfg-cvi``: the PCFG's sharded CVI (``cvi-sharded``, shards on threads) with 1, 2, 4 and 8 shards
    against CVI, grammar induction over ``--nonterminals`` on the UPOS sequences of EWT's training
    sentences of at most ``--max-length`` words (punctuation removed): the last objective, the training
    log-likelihood under the posterior mean, and the unlabelled bracket F1 of the Viterbi parses against
    the converted trees (evalb's conventions, punctuation and ROOT deleted; the right-branching trees'
    F1 beside them).

The machine this ran on has 2 cores shared with other jobs: quote medians, expect noise.
``python benchmarks/bench_distributed.py equality --tokens 100000`` is a quick smoke test.
"""
import argparse
import datetime
import json
import os
import resource
import statistics
import time
from pathlib import Path

import numpy as np

from cvbayes import HMM
from cvbayes.data import Corpus
from cvbayes.metrics.tagging import many_to_one

RESULTS = Path(__file__).parent / "results" / "distributed.json"


def synthetic(n_tokens, n_words=5000, seed=0):
    """Random sentences of 5 to 40 Zipf-distributed word ids (speed and memory need no planted model)."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(5, 41, size=n_tokens // 20 + 1)
    lengths = lengths[:np.searchsorted(np.cumsum(lengths), n_tokens) + 1]
    lengths[-1] -= lengths.sum() - n_tokens
    lengths = lengths[lengths > 0]
    ranks = 1.0 / np.arange(1, n_words + 1)
    words = rng.choice(n_words, size=n_tokens, p=ranks / ranks.sum()).astype(np.int32)
    words[:n_words] = np.arange(n_words)  # every word type occurs
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    return Corpus(words, offsets)


def cluster(n_workers, threads):
    from distributed import Client, LocalCluster
    local = LocalCluster(n_workers=n_workers, threads_per_worker=threads, processes=True, dashboard_address=":0")
    return local, Client(local)


def per_pass(model):
    seconds = [record.seconds for record in model.history_][1:]
    return statistics.median(seconds)


def objectives(model):
    return np.array([record.objective for record in model.history_])


def run_equality(args):
    corpus = synthetic(args.tokens)
    rows = []
    for algorithm in ("em", "vb"):
        fit = dict(algorithm=algorithm, n_iter=args.iterations, seed=0)
        single = HMM(args.states).fit(corpus, **fit)
        rows.append({"algorithm": algorithm, "workers": 0, "seconds_per_pass": per_pass(single), "max_rel_diff": 0.0})
        print(rows[-1], flush=True)
        for n_workers in args.workers:
            local, client = cluster(n_workers, max(1, (os.cpu_count() or 1) // n_workers))
            try:
                HMM(args.states).fit(corpus, client=client, **{**fit, "n_iter": 1})  # warm the workers' numba
                sharded = HMM(args.states).fit(corpus, client=client, **fit)
            finally:
                client.close()
                local.close()
            diff = np.max(np.abs(objectives(sharded) - objectives(single)) / np.abs(objectives(single)))
            rows.append({"algorithm": algorithm, "workers": n_workers, "seconds_per_pass": per_pass(sharded),
                         "max_rel_diff": float(diff)})
            print(rows[-1], flush=True)
    return {"tokens": corpus.n_tokens, "states": args.states, "iterations": args.iterations, "rows": rows}


def _peak_rss_mib():
    """This process's peak resident memory since its exec (VmHWM; ru_maxrss would keep the peak of the
    process the worker was forked from)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_memory(args):
    rows = []
    for millions in args.millions:
        corpus = synthetic(int(millions * 1_000_000))
        local, client = cluster(1, 1)
        try:
            before = list(client.run(_peak_rss_mib).values())[0]
            started = time.perf_counter()
            HMM(args.states, algorithm="em", n_iter=1).fit(corpus, client=client)
            seconds = time.perf_counter() - started
            after = list(client.run(_peak_rss_mib).values())[0]
        finally:
            client.close()
            local.close()
        rows.append({"tokens": corpus.n_tokens, "worker_peak_mib_before": before, "worker_peak_mib_after": after,
                     "shard_file_mib": corpus.n_tokens * 4 / 2**20, "fit_seconds": seconds})
        print(rows[-1], flush=True)
        del corpus
    return {"states": args.states, "rows": rows}


def run_cvi2(args):
    from cvbayes.tagging import load_corpus
    corpus = load_corpus("brown", n_sentences=args.sentences)
    k = args.states
    fit = dict(n_iter=args.iterations, random_state=0, init="local")
    rows = []

    def score(name, model):
        rows.append({"run": name, "seconds_per_pass": per_pass(model),
                     "many_to_one": many_to_one(model.predict(corpus), corpus.gold),
                     "objective": float(objectives(model)[-1])})
        print(rows[-1], flush=True)

    score("cvi2", HMM(k, algorithm="cvi2", **fit).fit(corpus))
    score("cvi2-sharded, 2 threads", HMM(k, algorithm="cvi2-sharded", **fit).fit(corpus, n_shards=2))
    if not args.no_dask:
        local, client = cluster(2, 1)
        try:
            score("cvi2-sharded, 2 Dask workers", HMM(k, algorithm="cvi2-sharded", **fit).fit(corpus, client=client))
        finally:
            client.close()
            local.close()
    return {"tokens": corpus.n_tokens, "states": k, "iterations": args.iterations, "rows": rows}


def _lda_documents(args):
    from cvbayes.commands.lda import load_documents
    corpus = load_documents(args.corpus, min_count=5, max_df=0.5, stop_words="english")
    order = np.random.default_rng(0).permutation(corpus.n_sequences)
    n_heldout = corpus.n_sequences // 10
    return corpus[np.sort(order[n_heldout:])], corpus[np.sort(order[:n_heldout])]


def _timing_summary(model):
    """Medians over the passes after the first of a fit's shard_timings_."""
    passes = model.shard_timings_[1:] or model.shard_timings_
    median = lambda values: float(statistics.median(values))
    return {"compute_max": median([max(p["compute"]) for p in passes]),
            "compute_sum": median([sum(p["compute"]) for p in passes]),
            "compute_per_shard": [median(column) for column in zip(*[p["compute"] for p in passes])],
            "compute_cpu_per_shard": [median(column) for column in zip(*[p["compute_cpu"] for p in passes])],
            **{name: median([p[name] for p in passes])
               for name in ("bytes_sent", "bytes_returned", "broadcast", "reduce", "reduce_path", "wall", "overhead",
                            "rounds")}}


def run_lda_equality(args):
    from distributed import Client, LocalCluster
    from cvbayes import LDA
    train, _ = _lda_documents(args)
    rows = []
    settings = [(n, True) for n in args.workers] + [(2, False)]
    for algorithm in args.algorithms:
        options = dict(algorithm=algorithm, n_iter=args.iterations, random_state=0, batch_size=args.batch_size)
        single = LDA(args.topics, **options).fit(train)
        rows.append({"algorithm": algorithm, "workers": 0, "seconds_per_pass": per_pass(single), "max_rel_diff": 0.0})
        print(rows[-1], flush=True)
        for n_workers, processes in settings:
            threads = max(1, (os.cpu_count() or 1) // n_workers) if processes else 1
            with LocalCluster(n_workers=n_workers, threads_per_worker=threads, processes=processes,
                              dashboard_address=":0") as local, Client(local) as client:
                client.wait_for_workers(n_workers)
                LDA(args.topics, **{**options, "n_iter": 1}).fit(train, client=client)   # warm the workers' numba
                sharded = LDA(args.topics, **options).fit(train, client=client)
            diff = np.max(np.abs(objectives(sharded) - objectives(single)) / np.abs(objectives(single)))
            statistics_diff = np.max(np.abs(sharded.components_ - single.components_) / single.components_)
            rows.append({"algorithm": algorithm, "workers": n_workers, "processes": processes,
                         "threads_per_worker": threads, "seconds_per_pass": per_pass(sharded),
                         "max_rel_diff": float(diff), "max_rel_diff_components": float(statistics_diff),
                         "per_pass": _timing_summary(sharded)})
            print(rows[-1], flush=True)
    return {"corpus": args.corpus, "documents": train.n_sequences, "tokens": train.n_tokens, "topics": args.topics,
            "iterations": args.iterations, "batch_size": args.batch_size, "rows": rows}


def run_lda_cvb0(args):
    from cvbayes import LDA
    train, heldout = _lda_documents(args)
    rows = []

    def score(name, model, n_shards):
        rows.append({"run": name, "shards": n_shards, "seconds_per_pass": per_pass(model),
                     "heldout_perplexity": float(model.perplexity(heldout)),
                     "objective": float(objectives(model)[-1])})
        print(rows[-1], flush=True)

    for seed in args.seeds:
        fit = dict(n_iter=args.iterations, random_state=seed)
        score(f"cvb0, seed {seed}", LDA(args.topics, algorithm="cvb0", **fit).fit(train), 0)
        for n_shards in (1, 2, 4):
            model = LDA(args.topics, algorithm="cvb0-sharded", **fit).fit(train, n_shards=n_shards)
            score(f"cvb0-sharded, {n_shards} shards, seed {seed}", model, n_shards)
    return {"corpus": args.corpus, "documents": train.n_sequences, "tokens": train.n_tokens,
            "heldout_documents": heldout.n_sequences, "topics": args.topics, "iterations": args.iterations,
            "rows": rows}


def _ewt_tags(max_length, gold=False):
    from cvbayes.data.dependencies import read_dependencies, upos_tagset
    from cvbayes.data.treebanks import treebank_file
    return read_dependencies(treebank_file("ewt", "train"), tag="upos", tagset=upos_tagset(True), remove_punctuation=True,
                             max_length=max_length, gold=gold)


def _sharded_row(single, make, data, blocks, n_workers):
    """``make()`` fitted on a LocalCluster of ``n_workers`` processes (after a one-pass fit that warms the
    workers' numba) against the in-process ``single``: seconds per pass, the largest relative difference
    of the objectives, of each of the ``blocks`` of statistics over its largest value, the median per-pass
    breakdown of ``shard_timings_`` and the workers' peak resident memory."""
    from distributed import Client, LocalCluster
    threads = max(1, (os.cpu_count() or 1) // n_workers)
    with LocalCluster(n_workers=n_workers, threads_per_worker=threads, processes=True,
                      dashboard_address=":0") as local, Client(local) as client:
        client.wait_for_workers(n_workers)
        make().set_params(n_iter=1).fit(data, client=client)
        sharded = make().fit(data, client=client)
        peaks = sorted(client.run(_peak_rss_mib).values())
    diff = np.max(np.abs(objectives(sharded) - objectives(single)) / np.abs(objectives(single)))
    block_diffs = [float(np.max(np.abs(ours - theirs)) / np.max(np.abs(theirs)))
                   for ours, theirs in zip(blocks(sharded), blocks(single))]
    return {"workers": n_workers, "threads_per_worker": threads, "seconds_per_pass": per_pass(sharded),
            "max_rel_diff": float(diff), "max_diff_counts_over_largest": max(block_diffs),
            "max_diff_over_largest_by_block": block_diffs, "worker_peak_mib": peaks,
            "per_pass": _timing_summary(sharded)}


def run_tree_equality(args):
    from cvbayes import DMV
    from cvbayes.models.pcfg import PCFG
    dependencies = _ewt_tags(args.max_length)
    short = _ewt_tags(args.pcfg_max_length)
    tag_words = [short.tagset.decode(short.tags[a:b]) for a, b in zip(short.offsets[:-1], short.offsets[1:])]
    models = {"dmv": (lambda algorithm: DMV(algorithm=algorithm, n_iter=args.iterations), dependencies,
                      lambda model: model.counts_),
              "pcfg": (lambda algorithm: PCFG(n_nonterminals=args.nonterminals, algorithm=algorithm,
                                              n_iter=args.iterations), tag_words, lambda model: [model.counts_])}
    rows = []
    for name, (make, data, blocks) in models.items():
        for algorithm in ("em", "vb"):
            single = make(algorithm).fit(data)
            rows.append({"model": name, "algorithm": algorithm, "workers": 0, "seconds_per_pass": per_pass(single),
                         "max_rel_diff": 0.0})
            print(rows[-1], flush=True)
            for n_workers in args.workers:
                rows.append({"model": name, "algorithm": algorithm,
                             **_sharded_row(single, lambda: make(algorithm), data, blocks, n_workers)})
                print(rows[-1], flush=True)
    return {"corpus": "ewt-train", "dmv_sentences": dependencies.n_sentences, "dmv_tokens": dependencies.n_tokens,
            "pcfg_sentences": len(tag_words), "pcfg_tokens": short.n_tokens, "nonterminals": args.nonterminals,
            "iterations": args.iterations, "rows": rows}


def run_adaptor_equality(args):
    from cvbayes.data import load_brent
    from cvbayes.models.adaptor import AdaptorGrammar
    from cvbayes.models.adaptor.layout import utterance_types
    utterances = [list(u) for u in load_brent().symbols[:args.utterances]]
    make = lambda: AdaptorGrammar(args.grammar, algorithm="vb", n_iter=args.iterations, random_state=0)
    # this process's CPU seconds at the end of every pass (a pass's also count the last callback's few ms)
    cpu_at = []
    single = make().fit(utterances, callback=lambda model, iteration: cpu_at.append(time.process_time()))
    rows = [{"workers": 0, "seconds_per_pass": per_pass(single), "max_rel_diff": 0.0,
             "cpu_per_pass": statistics.median(np.diff(cpu_at)[1:].tolist() or np.diff(cpu_at).tolist())}]
    print(rows[-1], flush=True)
    for n_workers in args.workers:
        # the blocks: the expected base rule counts, the expected customers
        rows.append(_sharded_row(single, make, utterances, lambda model: (model.learner_.counts, model.learner_.served),
                                 n_workers))
        print(rows[-1], flush=True)
    return {"corpus": "brent", "utterances": len(utterances), "types": len(utterance_types(utterances)[1]),
            "phonemes": sum(map(len, utterances)), "grammar": args.grammar, "iterations": args.iterations,
            "rules": int(single.grammar_.n_rules), "rows": rows}


def run_dmv_cvi(args):
    from cvbayes import DMV
    from cvbayes.metrics.dependency import attachment_scores
    train = _ewt_tags(args.max_length, gold=True)
    rows = []

    def score(name, model, n_shards, seed):
        heads, offsets = model.parse_heads(train)
        accuracy = attachment_scores(heads, train.heads, offsets)
        rows.append({"run": name, "shards": n_shards, "seed": seed, "seconds_per_pass": per_pass(model),
                     "objective": float(objectives(model)[-1]), "log_likelihood": model.score(train),
                     "directed": accuracy.directed, "undirected": accuracy.undirected})
        print(rows[-1], flush=True)

    for seed in args.seeds:
        score("cvi", DMV(algorithm="cvi", n_iter=args.iterations, random_state=seed).fit(train), 0, seed)
        for n_shards in (1, 2, 4, 8):
            model = DMV(algorithm="cvi-sharded", n_iter=args.iterations, random_state=seed).fit(train, n_shards=n_shards)
            score("cvi-sharded", model, n_shards, seed)
    return {"corpus": "ewt-train", "sentences": train.n_sentences, "tokens": train.n_tokens,
            "iterations": args.iterations, "rows": rows}


def run_la_equality(args):
    from cvbayes import PCFGLA
    from cvbayes.data import treebank_file
    from cvbayes.data.ud_to_penn import convert_conllu
    from cvbayes.trees.treebank import prepare_treebank
    prepared = prepare_treebank([sentence.tree for sentence in convert_conllu(treebank_file("ewt", "train"))])
    make = lambda algorithm: PCFGLA(n_subtypes=args.subtypes, algorithm=algorithm, n_iter=args.iterations,
                                    random_state=0)
    rows = []
    for algorithm in ("em", "vb"):
        single = make(algorithm).fit(prepared)
        rows.append({"algorithm": algorithm, "workers": 0, "seconds_per_pass": per_pass(single), "max_rel_diff": 0.0})
        print(rows[-1], flush=True)
        for n_workers in args.workers:
            rows.append({"algorithm": algorithm, **_sharded_row(single, lambda: make(algorithm), prepared,
                                                                lambda model: model.counts_, n_workers)})
            print(rows[-1], flush=True)
    return {"corpus": "ewt-train, converted", "trees": prepared.nodes.n_trees, "nodes": prepared.nodes.n_nodes,
            "subtypes": args.subtypes, "iterations": args.iterations, "rows": rows}


def _ewt_tag_trees(max_length):
    """EWT's training sentences of 1 to ``max_length`` words after punctuation is removed: their UPOS
    sequences and their converted trees (UPOS preterminals; punctuation still in, deleted when scored)."""
    from cvbayes.data import treebank_file
    from cvbayes.data.ud_to_penn import convert_conllu
    sentences, trees = [], []
    for converted in convert_conllu(treebank_file("ewt", "train"), tag="upos"):
        tags = [node.label for node in converted.tree.subtrees() if node.is_preterminal and node.label != "PUNCT"]
        if 1 <= len(tags) <= max_length:
            sentences.append(tags)
            trees.append(converted.tree)
    return sentences, trees


def _right_branching(tags):
    from cvbayes.data.trees import Tree
    tree = Tree(tags[-1], [tags[-1]])
    for tag in reversed(tags[:-1]):
        tree = Tree("X", [Tree(tag, [tag]), tree])
    return tree


def run_pcfg_cvi(args):
    from cvbayes.metrics.parsing import EVALB_DELETE_LABELS, bracket_scores
    from cvbayes.models.pcfg import PCFG
    sentences, gold = _ewt_tag_trees(args.max_length)
    scored = dict(labelled=False, delete_labels=EVALB_DELETE_LABELS | {"PUNCT", "ROOT"})

    def f1(trees):
        return bracket_scores(trees, gold, **scored).f1

    rows = [{"run": "right-branching", "f1": f1([_right_branching(tags) for tags in sentences])}]
    print(rows[-1], flush=True)

    def score(model, n_shards, seed):
        trees = model.parse(sentences)
        missing = sum(tree is None for tree in trees)
        rows.append({"run": model.algorithm, "shards": n_shards, "seed": seed, "seconds_per_pass": per_pass(model),
                     "objective": float(objectives(model)[-1]), "log_likelihood": model.score(sentences, "mean"),
                     "f1": f1([tree or _right_branching(tags) for tree, tags in zip(trees, sentences)]),
                     "no_parse": missing})
        print(rows[-1], flush=True)

    for seed in args.seeds:
        make = lambda algorithm: PCFG(n_nonterminals=args.nonterminals, algorithm=algorithm, n_iter=args.iterations,
                                      random_state=seed)
        score(make("cvi").fit(sentences), 0, seed)
        for n_shards in (1, 2, 4, 8):
            score(make("cvi-sharded").fit(sentences, n_shards=n_shards), n_shards, seed)
    return {"corpus": "ewt-train", "sentences": len(sentences), "tokens": sum(map(len, sentences)),
            "nonterminals": args.nonterminals, "iterations": args.iterations, "rows": rows}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    equality = sub.add_parser("equality")
    equality.add_argument("--tokens", type=int, default=1_000_000)
    equality.add_argument("--states", type=int, default=20)
    equality.add_argument("--iterations", type=int, default=5)
    equality.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    memory = sub.add_parser("memory")
    memory.add_argument("--millions", type=float, nargs="+", default=[1, 5, 20])
    memory.add_argument("--states", type=int, default=20)
    cvi2 = sub.add_parser("cvi2")
    cvi2.add_argument("--sentences", type=int, default=None)
    cvi2.add_argument("--iterations", type=int, default=8)
    cvi2.add_argument("--states", type=int, default=45)
    cvi2.add_argument("--no-dask", action="store_true")
    lda_equality = sub.add_parser("lda-equality")
    lda_cvb0 = sub.add_parser("lda-cvb0")
    for lda in (lda_equality, lda_cvb0):
        lda.add_argument("--corpus", default="brown", help="brown or news (cvbayes data fetch)")
        lda.add_argument("--topics", type=int, default=20)
    lda_equality.add_argument("--iterations", type=int, default=5)
    lda_equality.add_argument("--batch-size", type=int, default=64)
    lda_equality.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    lda_equality.add_argument("--algorithms", nargs="+", default=["vb", "online-vb", "scvb0"])
    lda_cvb0.add_argument("--iterations", type=int, default=50)
    lda_cvb0.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    trees = sub.add_parser("tree-equality")
    trees.add_argument("--max-length", type=int, default=15, help="the DMV's sentences (default 15 words)")
    trees.add_argument("--pcfg-max-length", type=int, default=10, help="the PCFG's sentences (default 10 words)")
    trees.add_argument("--nonterminals", type=int, default=8)
    trees.add_argument("--iterations", type=int, default=5)
    trees.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    adaptor = sub.add_parser("adaptor-equality")
    adaptor.add_argument("--grammar", default="unigram")
    adaptor.add_argument("--utterances", type=int, default=None, help="the first N of Brent's (default all)")
    adaptor.add_argument("--iterations", type=int, default=5)
    adaptor.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    dmv_cvi = sub.add_parser("dmv-cvi")
    dmv_cvi.add_argument("--max-length", type=int, default=10)
    dmv_cvi.add_argument("--iterations", type=int, default=40)
    dmv_cvi.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    la_equality = sub.add_parser("la-equality")
    la_equality.add_argument("--subtypes", type=int, default=4)
    la_equality.add_argument("--iterations", type=int, default=5)
    la_equality.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    pcfg_cvi = sub.add_parser("pcfg-cvi")
    pcfg_cvi.add_argument("--max-length", type=int, default=10)
    pcfg_cvi.add_argument("--nonterminals", type=int, default=8)
    pcfg_cvi.add_argument("--iterations", type=int, default=30)
    pcfg_cvi.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    args = parser.parse_args()
    result = {"equality": run_equality, "memory": run_memory, "cvi2": run_cvi2, "lda-equality": run_lda_equality,
              "lda-cvb0": run_lda_cvb0, "tree-equality": run_tree_equality, "dmv-cvi": run_dmv_cvi,
              "la-equality": run_la_equality, "pcfg-cvi": run_pcfg_cvi,
              "adaptor-equality": run_adaptor_equality}[args.what](args)
    result.update(what=args.what, date=datetime.datetime.now().isoformat(timespec="seconds"),
                  load_average=os.getloadavg(), cpus=os.cpu_count())
    history = json.loads(RESULTS.read_text()) if RESULTS.exists() else []
    RESULTS.write_text(json.dumps(history + [result], indent=1))


if __name__ == "__main__":
    main()
