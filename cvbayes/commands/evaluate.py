"""``cvbayes evaluate``: score a saved HMM on a gold-tagged corpus."""
import numpy as np

from ..models.hmm import HMM
from ..tagging import load_corpus, score_states
from .options import add_common, add_corpus, emit
from .tag import decode_with


def run_evaluate(args):
    model = HMM.load(args.model)
    corpus = load_corpus(args.corpus, args.format, args.tagset, vocabulary=model.vocabulary_)
    if corpus.gold is None:
        raise SystemExit("cvbayes evaluate: the corpus has no gold tags")
    states, tags = decode_with(model, corpus)
    report = {"model": args.model, "corpus": corpus.source, "tokens": corpus.n_tokens,
              **score_states(states, corpus, supervised=False)}
    if model.tag_dictionary is not None:
        gold = corpus.tagset.decode(corpus.gold)
        report["accuracy"] = float(np.mean([t == g for t, g in zip(tags, gold)]))
    emit(args, report, [f"{key:<26}{value:.4f}" for key, value in report.items() if isinstance(value, float)])


def register(commands):
    evaluate = commands.add_parser("evaluate", help="score a saved model on a gold-tagged corpus",
                                   description="Decode a gold-tagged corpus with a saved model and print "
                                               "many-to-one (plain and cross-validated), greedy one-to-one, "
                                               "variation of information (bits) and V-measure, plus accuracy "
                                               "for models trained with a tag dictionary.")
    evaluate.add_argument("model", help="model file written by 'cvbayes fit'")
    add_corpus(evaluate)
    add_common(evaluate, seed=False)
    evaluate.set_defaults(handler=run_evaluate)
