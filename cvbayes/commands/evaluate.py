"""``cvbayes evaluate``: score a saved HMM on a gold-tagged corpus."""
import sys

import numpy as np

from ..models.hmm import HMM
from ..tagging import load_corpus, score_states
from .options import emit, saved_model_command
from .tag import decode_with


def run_evaluate(args):
    model = HMM.load(args.model)
    corpus = load_corpus(args.corpus, args.format, args.tagset, vocabulary=model.vocabulary_, tag=args.tag)
    if corpus.gold is None:
        raise SystemExit("cvbayes evaluate: the corpus has no gold tags")
    states, tags = decode_with(model, corpus)
    report = {"model": args.model, "corpus": corpus.source, "tokens": corpus.n_tokens,
              **score_states(states, corpus, supervised=False)}
    if model.tag_dictionary is not None:
        gold = corpus.tagset.decode(corpus.gold)
        report["accuracy"] = float(np.mean([t == g for t, g in zip(tags, gold)]))
        _check_tag_sets(args, model, corpus, gold, report)
    emit(args, report, [f"{key:<26}{value:.4f}" for key, value in report.items() if isinstance(value, float)])


def _check_tag_sets(args, model, corpus, gold, report):
    """Say so when the gold tags are not the model's tag set: accuracy compares names, which then differ."""
    known = set(model.tagset_.symbols)
    outside = [tag for tag in gold if tag not in known]
    report["gold_tokens_with_tags_outside_the_model"] = len(outside) / len(gold)
    if outside:
        examples = ", ".join(sorted(set(outside), key=outside.count, reverse=True)[:5])
        print(f"cvbayes evaluate: warning: {len(outside) / len(gold):.0%} of the gold tokens carry tags the model "
              f"cannot give (e.g. {examples}): the model's {len(known)} tags and the {len(corpus.tagset)} tags of "
              f"{args.corpus} are different tag sets, so the accuracy, which compares tag names, means little; the "
              f"clustering metrics do not compare names", file=sys.stderr)


def register(commands):
    saved_model_command(commands, "evaluate", run_evaluate, help="score a saved model on a gold-tagged corpus",
                        description="Decode a gold-tagged corpus with a saved model and print "
                                    "many-to-one (plain and cross-validated), greedy one-to-one, "
                                    "variation of information (bits) and V-measure, plus accuracy "
                                    "for models trained with a tag dictionary.")
