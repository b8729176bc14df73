"""``cvbayes lda``: fit LDA to documents, print or plot its topics, infer the topics of new documents, evaluate
it on held-out documents."""
import json
import sys
from pathlib import Path

import numpy as np

from ..data.documents import read_folder, read_lines, read_tagged_documents
from ..files import write_text
from ..metrics.topics import document_completion, npmi_coherence, top_words
from ..models.lda import ALGORITHMS, LDA, SHARDED_ALGORITHMS
from .options import (add_checkpoint_arguments, add_cluster_arguments, announce_resume, check_writable,
                      cluster_requested, connect, fraction, positive_int, remove_checkpoint)

FORMATS = ("auto", "lines", "folder", "tagged")


def _cleaning(args, vocabulary=None):
    """The reader options of `cvbayes.data.documents` from the command line."""
    options = {"stop_words": None if args.stop_words == "none" else "english", "vocabulary": vocabulary}
    if vocabulary is None:
        options.update(min_count=args.min_count, min_df=args.min_df, max_df=args.max_df, max_words=args.max_words)
    return options


def load_documents(source, document_format="auto", keep_tags=None, **options):
    """Documents from a file (one a line), a folder (one a file), a ``word/TAG`` file or folder
    (``document_format="tagged"``; a folder holds one document a file), or the fetched corpora
    ``news`` (cvbayes data fetch news) and ``brown`` (its 500 files as documents)."""
    if source == "news":
        from ..data.documents import documents_from_texts
        from ..data.news import load_news

        return documents_from_texts([article.document for article in load_news()], source="news", **options)
    if source == "brown":
        from ..data.cache import corpus_folder

        folder = corpus_folder(None, "brown") / "package"
        if not folder.is_dir():
            raise FileNotFoundError(f"the Brown corpus is not in {folder}; run `cvbayes data fetch brown`")
        return read_tagged_documents(folder, pattern="c[a-r][0-9][0-9]", keep_tags=keep_tags, **options)
    path = Path(source)
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist")
    if document_format == "tagged":
        return read_tagged_documents(path, keep_tags=keep_tags, **options)
    if document_format == "folder" or (document_format == "auto" and path.is_dir()):
        return read_folder(path, **options)
    return read_lines(path, **options)


def write_doc_topics(path, doc_topic):
    """MALLET's --output-doc-topics file: a line a document, its number (0-based), its name (here its
    1-based number in the input) and its K topic proportions, tab-separated; ``-`` is standard output."""
    lines = ["#doc\tname\t" + "\t".join(f"topic {k}" for k in range(doc_topic.shape[1]))]
    lines += [f"{d}\t{d + 1}\t" + "\t".join(f"{p:.6g}" for p in row) for d, row in enumerate(doc_topic)]
    text = "\n".join(lines) + "\n"
    if path == "-":
        sys.stdout.write(text)
    else:
        write_text(path, text)


def _topic_lines(model, n_words):
    return [f"topic {k:3d}: {' '.join(map(str, words))}" for k, words in enumerate(model.top_words(n_words))]


def run_lda_fit(args):
    check_writable(args.output_doc_topics)
    sharded = cluster_requested(args, SHARDED_ALGORITHMS, "cvbayes lda fit")
    corpus = load_documents(args.documents, args.format, args.keep_tags, **_cleaning(args))
    heldout = None
    if args.heldout:
        rng = np.random.default_rng(args.seed)
        order = rng.permutation(corpus.n_sequences)
        n_heldout = max(1, int(round(args.heldout * corpus.n_sequences)))
        if n_heldout >= corpus.n_sequences:
            raise ValueError(f"--heldout {args.heldout:g} of {corpus.n_sequences} documents leaves none to train on")
        heldout, corpus = corpus[np.sort(order[:n_heldout])], corpus[np.sort(order[n_heldout:])]
    model = LDA(args.topics, alpha=args.alpha if args.alpha is not None else 0.1, eta=args.eta,
                algorithm=args.algorithm, n_iter=args.iterations, random_state=args.seed, batch_size=args.batch_size,
                kappa=args.kappa, tau0=args.tau0, frozen_counts=args.frozen_counts, learn_alpha=args.learn_alpha,
                n_jobs=args.jobs)
    announce_resume(args.checkpoint, args.iterations or ALGORITHMS[args.algorithm].default_iterations,
                    "cvbayes lda fit", args.quiet or args.json)
    with connect(args.scheduler, args.workers, "cvbayes lda fit") as client:
        model.fit(corpus, progress=not args.quiet, checkpoint=args.checkpoint, checkpoint_every=args.checkpoint_every,
                  **({"client": client} if sharded else {}))
    report = {"documents": corpus.n_sequences, "tokens": corpus.n_tokens, "words": len(corpus.vocabulary),
              "algorithm": args.algorithm, "topics": args.topics, "iterations": model.n_iter_,
              "seconds": round(sum(record.seconds for record in model.history_), 3),
              "objective": model.history_[-1].objective, "top_words": model.top_words(args.words)}
    if heldout is not None:
        completion = document_completion(model.components_, heldout, model.alpha_)
        report.update(heldout_documents=heldout.n_sequences, perplexity=completion.perplexity)
    if args.output_doc_topics:
        # online-vb and scvb0 keep no document proportions: the trained topics fold the documents in
        doc_topic = model.doc_topic_ if model.doc_topic_ is not None else model.transform(corpus)
        write_doc_topics(args.output_doc_topics, doc_topic)
        report["doc_topics"] = args.output_doc_topics
    if args.output:
        model.save(args.output)
        report["model"] = args.output
    saved = [f"model written to {args.output}"] if args.output else []
    if args.output:         # without a model file the complete checkpoint is the run's result: it stays
        remove_checkpoint(args.checkpoint, report, saved)
    if args.json:
        print(json.dumps(report))
        return
    print(f"{report['documents']} documents, {report['tokens']} tokens, {report['words']} words; "
          f"{args.algorithm}, K = {args.topics}, {model.n_iter_} passes in {report['seconds']} s")
    if heldout is not None:
        print(f"held-out document-completion perplexity ({heldout.n_sequences} documents): {report['perplexity']:.1f}")
    print("\n".join(_topic_lines(model, args.words)))
    if saved:
        print("\n".join(saved), file=sys.stderr)


def run_lda_topics(args):
    model = LDA.load(args.model)
    if args.plot:
        from ..experiments.lda import plot_topics

        plot_topics(model, args.plot, n_words=args.words)
        print(f"plot written to {args.plot}", file=sys.stderr)
    if args.json:
        topic_word = model.topic_word_
        weights = np.take_along_axis(topic_word, top_words(model.components_, args.words), axis=1)
        print(json.dumps({"top_words": model.top_words(args.words), "weights": weights.round(6).tolist(),
                          "alpha": np.broadcast_to(model.alpha_, topic_word.shape[:1]).tolist()}))
    else:
        print("\n".join(_topic_lines(model, args.words)))


def run_lda_infer(args):
    check_writable(args.output_doc_topics)
    model = LDA.load(args.model)
    if model.vocabulary_ is None:
        raise ValueError(f"{args.model} has no vocabulary, so text documents cannot be read against it")
    corpus = load_documents(args.documents, args.format, args.keep_tags, **_cleaning(args, model.vocabulary_))
    write_doc_topics(args.output_doc_topics, model.transform(corpus))
    report = {"model": args.model, "documents": corpus.n_sequences, "tokens": corpus.n_tokens,
              "doc_topics": args.output_doc_topics}
    if args.json:      # on standard error when the proportions took standard output
        print(json.dumps(report), file=sys.stderr if args.output_doc_topics == "-" else sys.stdout)


def run_lda_evaluate(args):
    model = LDA.load(args.model)
    if model.vocabulary_ is None:
        raise ValueError(f"{args.model} has no vocabulary, so text documents cannot be read against it")
    corpus = load_documents(args.documents, args.format, args.keep_tags, **_cleaning(args, model.vocabulary_))
    completion = document_completion(model.components_, corpus, model.alpha_, seed=args.seed)
    coherence = npmi_coherence(model.components_, corpus, n=args.words)
    report = {"documents": corpus.n_sequences, "scored_tokens": completion.n_tokens,
              "perplexity": completion.perplexity, "npmi": float(coherence.mean()),
              "npmi_per_topic": coherence.round(4).tolist()}
    if args.json:
        print(json.dumps(report))
    else:
        print(f"document-completion perplexity {completion.perplexity:.1f} ({completion.n_tokens} tokens scored "
              f"in {corpus.n_sequences} documents); NPMI of the top {args.words} words {coherence.mean():.4f}")


_MODEL_HELP = "model file written by 'cvbayes lda fit -o'"


def _add_reading(parser):
    parser.add_argument("documents", help="a text file (one document a line), a folder (one document a file), "
                                          "'news' or 'brown' (corpora fetched with 'cvbayes data fetch')")
    parser.add_argument("--format", choices=FORMATS, default="auto",
                        help="lines, folder, or tagged (word/TAG sentences: a file is one document, a folder "
                             "one document a file); auto: folder for a folder, else lines")
    parser.add_argument("--keep-tags", nargs="+", default=None,
                        help="tagged input: keep words whose tag starts with one of these (e.g. nn vb jj)")
    parser.add_argument("--stop-words", choices=("english", "none"), default="english",
                        help="drop the built-in English stop words (default) or none")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON instead of text")
    parser.add_argument("--words", type=positive_int, default=10, help="top words a topic (default 10)")


def _add_model_reader(verbs, name, handler, summary, description):
    """A verb that reads documents under a saved model (infer, evaluate)."""
    verb = verbs.add_parser(name, help=summary, description=description)
    verb.add_argument("model", help=_MODEL_HELP)
    _add_reading(verb)
    verb.set_defaults(handler=handler)
    return verb


def register(commands):
    """Add ``cvbayes lda fit | topics | infer | evaluate`` to the ``cvbayes`` subcommands."""
    lda = commands.add_parser("lda", help="topic models: fit LDA to documents, show its topics, infer those of new "
                                          "documents, evaluate",
                              description="Latent Dirichlet allocation with six learners: " + ", ".join(
                                  f"{name} ({spec.paper})" for name, spec in ALGORITHMS.items()) + ".")
    verbs = lda.add_subparsers(dest="lda_command", required=True, metavar="ACTION")

    fit = verbs.add_parser("fit", help="fit LDA to documents and save it",
                           description="Read documents, drop stop words and rare or too common words, fit LDA, "
                                       "print each topic's top words and save the model (-o).")
    _add_reading(fit)
    fit.add_argument("--topics", type=positive_int, default=20, help="number of topics K (default 20)")
    fit.add_argument("--algorithm", choices=tuple(ALGORITHMS), default="cvb0", help="learner (default cvb0)")
    fit.add_argument("--iterations", type=positive_int, default=None,
                     help="passes (Gibbs sweeps for cgs); default: 100 for vb, cvb0, cvb; 20 for online-vb, "
                          "scvb0; 1000 for cgs")
    fit.add_argument("--alpha", type=float, default=None, help="document-topic prior (default 0.1)")
    fit.add_argument("--eta", type=float, default=0.01, help="topic-word prior (default 0.01)")
    fit.add_argument("--learn-alpha", action="store_true",
                     help="learn an asymmetric alpha by Minka's fixed point (vb, cvb0, cvb, cgs)")
    fit.add_argument("--frozen-counts", action="store_true",
                     help="cvb0: documents in parallel, topic-word counts frozen for each pass (an approximation)")
    fit.add_argument("--jobs", type=positive_int, default=1,
                     help="cgs: sample this many partitions of the documents and words on as many threads (an "
                          "approximation: each thread sees the others' topic totals once a step; default 1, exact)")
    fit.add_argument("--batch-size", type=positive_int, default=128,
                     help="online-vb, scvb0: documents a minibatch (128)")
    fit.add_argument("--kappa", type=float, default=None,
                     help="online-vb, scvb0: step decay (default 0.7 for online-vb, 0.5 for scvb0)")
    fit.add_argument("--tau0", type=float, default=None,
                     help="online-vb, scvb0: step offset (default 10 for online-vb, 1 for scvb0)")
    fit.add_argument("--min-count", type=int, default=5, help="drop words seen fewer times (default 5)")
    fit.add_argument("--min-df", type=int, default=1, help="drop words in fewer documents (default 1)")
    fit.add_argument("--max-df", type=float, default=0.5,
                     help="drop words in more than this fraction of the documents (default 0.5)")
    fit.add_argument("--max-words", type=int, default=None, help="keep only the most frequent words")
    fit.add_argument("--heldout", type=fraction, default=0.0,
                     help="hold out this fraction (at least 0, below 1) of the documents and report their "
                          "document-completion perplexity (default 0: train on all)")
    fit.add_argument("-o", "--output", default=None, help="write the model here (.npz)")
    fit.add_argument("--output-doc-topics", metavar="FILE", default=None,
                     help="write the training documents' topic proportions to FILE (MALLET's option and format: "
                          "a line a document, its number, its name (its 1-based number in the input) and the K "
                          "proportions, tab-separated; '-' for standard output)")
    fit.add_argument("--quiet", action="store_true", help="no progress bar")
    add_cluster_arguments(fit, "/".join(SHARDED_ALGORITHMS))
    add_checkpoint_arguments(fit)
    fit.set_defaults(handler=run_lda_fit)

    topics = verbs.add_parser("topics", help="print (and plot) the top words of a saved model")
    topics.add_argument("model", help=_MODEL_HELP)
    topics.add_argument("--words", type=positive_int, default=10, help="top words a topic (default 10)")
    topics.add_argument("--plot", default=None, help="also draw the topics' top words to this PNG")
    topics.add_argument("--json", action="store_true",
                        help="print machine-readable JSON instead of text: each topic's top words, their weights "
                             "p(word | topic) and the topic's alpha")
    topics.set_defaults(handler=run_lda_topics)

    infer = _add_model_reader(verbs, "infer", run_lda_infer, "topic proportions of new documents under a saved model",
                      "Read documents with the model's vocabulary (words it never saw are dropped) and fold each "
                      "in on the trained topics (MALLET's infer-topics, gensim's get_document_topics).")
    infer.add_argument("--output-doc-topics", metavar="FILE", default="-",
                       help="where the proportions go, in lda fit's --output-doc-topics format (default: standard "
                            "output)")
    _add_model_reader(verbs, "evaluate", run_lda_evaluate,
                      "document-completion perplexity and NPMI on held-out documents",
                      "Read documents with the model's vocabulary; fold each in on its first half and score its "
                      "second half; NPMI of the top words from the documents' co-occurrences.")
    return lda
