"""``cvbayes induce`` and ``cvbayes parse``: dependency grammar induction with the DMV on CoNLL-U files.

``cvbayes parse MODEL FILE`` writes FILE back with the model's trees: every byte of the file is kept
(comments, multiword ranges, empty nodes, every other column, blank lines, line endings; through
`cvbayes.data.conllu_io`) except the HEAD and DEPREL fields of the ordinary words (``--column head``;
their DEPS too, where the file has an enhanced graph, which would contradict the new HEAD: it becomes
``HEAD:DEPREL``),
or one ``PredHead=`` item added to their MISC field (``--column misc``, which leaves HEAD and DEPREL as
they were, e.g. gold heads to compare with).  DEPREL becomes ``root`` for the root word and ``dep``
(UD's unspecified dependency) for every other word.  Punctuation: when the model was trained without
punctuation, the words whose UPOS is PUNCT are removed before parsing and then attached to the
sentence's root word (`cvbayes.data.dependencies.DependencyCorpus.file_heads`), so every sentence is
still one tree; a sentence of punctuation only gets its first word as the root and the others attached
to it.

``--heads function`` (both commands) scores against the gold trees converted to function heads
(`cvbayes.data.function_heads`: adpositions, subordinators, auxiliaries and copulas head their
content words, as in the WSJ dependencies the DMV was designed on); ``content`` (the default) scores
against the file's own HEAD column.  The summary names the convention.
"""
import json
import sys
import time

import numpy as np

from ..data.conllu_io import read_conllu_document
from ..data.dependencies import read_dependencies, upos_tagset
from ..data.function_heads import CONVENTIONS
from ..files import write_bytes
from ..metrics.dependency import attachment_scores
from ..models.dmv import ALGORITHMS, INITS, SHARDED_ALGORITHMS, DMV
from .options import (add_checkpoint_arguments, add_cluster_arguments, announce_resume, cluster_requested, connect,
                      remove_checkpoint)

PREDICTED_HEAD = "PredHead"


def _report(args, report, lines, to_stdout):
    """The summary: JSON with --json, else text unless --quiet; on stdout unless the trees went there."""
    stream = sys.stdout if to_stdout else sys.stderr
    if args.json:
        print(json.dumps(report), file=stream)
    elif not args.quiet:
        print("\n".join(lines), file=stream)


def _scores(model, corpus, report, key):
    """Directed and undirected accuracy of the model's Viterbi trees against the corpus's gold heads."""
    heads, offsets = model.parse_heads(corpus)
    return _score_line(heads, corpus, offsets, report, key, f"{key}:")


def _score_line(heads, corpus, offsets, report, key, what):
    """Score ``heads`` against the corpus's gold (in its convention) into report[key]; the summary line."""
    scores = attachment_scores(heads, corpus.heads, offsets)
    report[key] = {"directed": scores.directed, "undirected": scores.undirected, "words": scores.n_tokens,
                   "heads": corpus.convention}
    return (f"{what} directed {scores.directed:.3f}, undirected {scores.undirected:.3f} ({scores.n_tokens} words, "
            f"{corpus.convention} heads)")


def run_induce(args):
    sharded = cluster_requested(args, SHARDED_ALGORITHMS, "cvbayes induce")
    remove = not args.keep_punctuation
    tagset = upos_tagset(remove) if args.tag == "upos" else None
    train = read_dependencies(args.train, tag=args.tag, tagset=tagset, remove_punctuation=remove,
                              max_length=args.max_length, gold=_has_heads(args.train), heads=args.heads)
    model = DMV(alpha=args.alpha, algorithm=args.algorithm, init=args.init, n_iter=args.iterations,
                random_state=args.seed, n_init=args.restarts, batch_size=args.batch_size, kappa=args.kappa)
    announce_resume(args.checkpoint, args.iterations, "cvbayes induce", args.quiet or args.json)
    with connect(args.scheduler, args.workers, "cvbayes induce") as client:
        model.fit(train, progress=not args.quiet, checkpoint=args.checkpoint, checkpoint_every=args.checkpoint_every,
                  **({"client": client} if sharded else {}))
    model.save(args.output)
    seconds = sum(record.seconds for record in model.history_)
    report = {"model": args.output, "file": args.train, "sentences": train.n_sentences, "words": train.n_tokens,
              "algorithm": args.algorithm, "alpha": args.alpha, "iterations": args.iterations,
              "train_seconds": seconds, "objective": model.history_[-1].objective}
    lines = [f"{args.algorithm}, alpha {args.alpha}: {args.iterations} passes over {train.n_sentences} sentences "
             f"({train.n_tokens} words) in {seconds:.1f} s"]
    if train.heads is not None:
        lines.append(_scores(model, train, report, "train"))
    if args.evaluate:
        heldout = read_dependencies(args.evaluate, tag=args.tag, tagset=model.tagset_, remove_punctuation=remove,
                                    max_length=args.max_length, heads=args.heads)
        lines.append(_scores(model, heldout, report, "evaluate"))
    lines.append(f"model saved to {args.output}")
    remove_checkpoint(args.checkpoint, report, lines)
    _report(args, report, lines, to_stdout=True)


def _has_heads(path):
    """True when every ordinary word's HEAD is a number (a file with gold heads)."""
    return all(head.isdigit() for heads in read_conllu_document(path).column("head") for head in heads)


def run_parse(args):
    model = DMV.load(args.model)
    if model.tagset_ is None:
        raise ValueError(f"{args.model} was fitted on integer ids; parsing CoNLL-U needs a model with a tag set")
    started = time.perf_counter()
    document = read_conllu_document(args.file)
    has_heads = all(head.isdigit() for heads in document.column("head") for head in heads)
    remove = model.punctuation_removed_ if args.punctuation == "auto" else args.punctuation == "remove"
    tag = args.tag or model.tag_column_ or "upos"
    corpus = read_dependencies(args.file, tag=tag, tagset=model.tagset_, remove_punctuation=remove, gold=has_heads,
                               heads=args.heads)
    heads, offsets = model.parse_heads(corpus, method=args.method, seed=args.seed)
    file_heads = dict(zip(corpus.sentence_ids.tolist(), corpus.file_heads(heads)))
    values = []
    for index, sentence in enumerate(s for s in document if s.n_words):
        # a sentence of punctuation only: its first word the root, the others attached to it
        values.extend(file_heads.get(index, np.r_[0, np.ones(sentence.n_words - 1, dtype=np.int32)]).tolist())
    if args.column == "head":
        relations = ["root" if head == 0 else "dep" for head in values]
        deps = [field for sentence in document.column("deps") for field in sentence]
        document.replace_column("head", values)
        document.replace_column("deprel", relations)
        # an enhanced graph the file had would now contradict HEAD: it becomes the new tree's
        document.replace_column("deps", ["_" if old == "_" else f"{head}:{relation}"
                                         for old, head, relation in zip(deps, values, relations)])
    else:
        document.set_misc(PREDICTED_HEAD, values)
    text = document.to_text().encode("utf-8")
    to_file = args.output != "-"
    if to_file:
        write_bytes(args.output, text)
    else:
        sys.stdout.buffer.write(text)
        sys.stdout.flush()
    report = {"model": args.model, "file": args.file, "output": args.output,
              "sentences": sum(1 for s in document if s.n_words), "words": len(values),
              "parsed_words": int(offsets[-1]), "method": args.method, "punctuation_removed": remove,
              "heads": args.heads, "seconds": time.perf_counter() - started}
    lines = [f"parsed {report['sentences']} sentences ({len(values)} words, {report['parsed_words']} without "
             f"removed punctuation) in {report['seconds']:.2f} s"]
    if has_heads:
        lines.append(_score_line(heads, corpus, offsets, report, "gold", "against the file's HEAD column:"))
    _report(args, report, lines, to_stdout=to_file)


def _add_common(parser):
    parser.add_argument("--heads", choices=CONVENTIONS, default="content",
                        help="gold convention for the accuracy: content (the file's UD heads, default) or function "
                             "(converted so that adpositions, subordinators, auxiliaries and copulas head, as SUD)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--json", action="store_true", help="print the summary as machine-readable JSON")
    parser.add_argument("--quiet", action="store_true", help="no progress bar and no text summary")


def register(commands):
    """Add ``cvbayes induce`` and ``cvbayes parse`` to the ``cvbayes`` subcommands."""
    induce = commands.add_parser(
        "induce", help="dependency grammar induction: fit a DMV to the tags of a CoNLL-U file",
        description="Read the UPOS (or XPOS) tags of a CoNLL-U treebank, drop punctuation (as WSJ10 does) "
                    "and sentences longer than --max-length, and fit the Dependency Model with Valence "
                    "(Klein and Manning 2004) with Dirichlet priors by EM, VB, CVI or SCVI (thesis §4.5.2). "
                    "Gold heads, when the file has them, are used only to report accuracy.")
    induce.add_argument("train", help="CoNLL-U file to learn from")
    induce.add_argument("-o", "--output", required=True, help="model file to write (.npz)")
    induce.add_argument("--algorithm", choices=tuple(ALGORITHMS), default="cvi", help="learner (default cvi)")
    induce.add_argument("--alpha", type=float, default=1.0, help="Dirichlet pseudo-count of every row (default 1)")
    induce.add_argument("--iterations", type=int, default=100, help="passes over the sentences (default 100)")
    induce.add_argument("--init", choices=INITS, default="harmonic",
                        help="harmonic (Klein and Manning's initialiser, default) or random tree posteriors")
    induce.add_argument("--restarts", type=int, default=1,
                        help="runs with seeds seed, seed + 1, ...; the best training likelihood is kept (default 1)")
    induce.add_argument("--tag", choices=("upos", "xpos"), default="upos", help="the tag column (default upos)")
    induce.add_argument("--max-length", type=int, default=10,
                        help="train on sentences of at most this many words, after punctuation removal (default 10)")
    induce.add_argument("--keep-punctuation", action="store_true", help="keep the words whose UPOS is PUNCT")
    induce.add_argument("--batch-size", type=int, default=256, help="scvi: sentences a minibatch (default 256)")
    induce.add_argument("--kappa", type=float, default=0.5, help="scvi: step sizes (1 + m)^-kappa (default 0.5)")
    induce.add_argument("--evaluate", default=None,
                        help="also report accuracy on this CoNLL-U file (sentences up to --max-length)")
    add_checkpoint_arguments(induce)
    add_cluster_arguments(induce, "/".join(SHARDED_ALGORITHMS))
    _add_common(induce)
    induce.set_defaults(handler=run_induce)

    parse = commands.add_parser(
        "parse", help="parse a CoNLL-U file with a DMV model: fill HEAD and DEPREL, keep every other byte",
        description="Write FILE back with the model's Viterbi trees: HEAD and DEPREL ('root' or 'dep') of "
                    "every ordinary word change (and DEPS, where the file has one, becomes HEAD:DEPREL, as the "
                    "old enhanced graph would contradict the new tree), every other byte stays (comments, ranges, empty nodes, other "
                    "columns). Punctuation removed for training is removed before parsing and then attached "
                    "to the sentence's root word. The summary goes to standard output when the trees go to "
                    "a file (-o), else to standard error; it adds the accuracy against the file's own HEAD "
                    "column when that holds numbers.")
    parse.add_argument("model", help="model file written by 'cvbayes induce' or DMV.save")
    parse.add_argument("file", help="CoNLL-U file to parse (its HEAD column may be '_')")
    parse.add_argument("-o", "--output", default="-", help="output file (default: standard output)")
    parse.add_argument("--column", choices=("head", "misc"), default="head",
                       help=f"head: write HEAD and DEPREL (default); misc: add {PREDICTED_HEAD}=N to MISC instead")
    parse.add_argument("--method", choices=("viterbi", "sample"), default="viterbi",
                       help="the most probable tree (default) or one drawn from the posterior (with --seed)")
    parse.add_argument("--punctuation", choices=("auto", "remove", "keep"), default="auto",
                       help="remove PUNCT words before parsing and re-attach them (auto: as the model was trained)")
    parse.add_argument("--tag", choices=("upos", "xpos"), default=None,
                       help="the tag column (default: the one the model was trained on)")
    _add_common(parse)
    parse.set_defaults(handler=run_parse)
    return parse
