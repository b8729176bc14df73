"""``cvbayes tag``: tag a corpus with a saved HMM."""
import json
import sys

from ..files import write_bytes
from ..models.hmm import HMM
from ..tagging import (BROWN_NAMES, PREDICTED_TAG, guess_format, load_corpus, map_to_gold, tag_conllu_document,
                       write_tagged)
from .options import saved_model_command
from .states import state_names


def decode_with(model, corpus, method="map"):
    """The model's states for the corpus (``map``: max posterior marginals; ``viterbi``: the most
    probable path) and their names (`state_names`)."""
    states = model.decode(corpus, method={"map": "mpd", "viterbi": "viterbi"}[method])
    names = state_names(model)
    return states, [names[s] for s in states]


def run_tag(args):
    model = HMM.load(args.model)
    fmt = args.format
    if fmt == "auto" and args.corpus not in BROWN_NAMES:
        fmt = guess_format(args.corpus)
    # the file's own words are written back; the model reads them through its vocabulary
    own = load_corpus(args.corpus, fmt, args.tagset, gold=False)
    corpus = own if model.vocabulary_ is None else own.recoded(model.vocabulary_)
    states, tags = decode_with(model, corpus, args.decode)
    if args.map_to_gold:
        tags = map_to_gold(model, states, load_corpus(args.map_to_gold, "auto", args.tagset,
                                                      vocabulary=model.vocabulary_, tag=args.tag))
    to_stdout = args.output == "-"
    if args.output_format == "conllu" and fmt == "conllu":
        data = tag_conllu_document(args.corpus, tags, args.column).encode("utf-8")
        if to_stdout:
            sys.stdout.buffer.write(data)
            sys.stdout.flush()
        else:
            write_bytes(args.output, data)
    else:
        write_tagged(sys.stdout if to_stdout else args.output, own, tags, args.output_format, args.column)
    report = {"model": args.model, "corpus": corpus.source, "output": args.output, "sentences": corpus.n_sequences,
              "tokens": corpus.n_tokens}
    # the summary goes to standard error when the tags took standard output (as 'parse' and 'align' do)
    if args.json:
        print(json.dumps(report), file=sys.stderr if to_stdout else sys.stdout)


def register(commands):
    tag = saved_model_command(commands, "tag", run_tag, help="tag a corpus with a saved model",
                              description="Decode a corpus with a saved model (maximum posterior marginals, or "
                                          "Viterbi with --decode viterbi) and write word/TAG lines or CoNLL-U. "
                                          "States are tag names when the model was trained with a tag "
                                          "dictionary, else numbers.")
    tag.add_argument("--output-format", choices=("tagged", "conllu"), default="tagged",
                     help="word/TAG lines (default) or CoNLL-U: a CoNLL-U input is written back with only "
                          "--column changed (comments, multiword ranges, empty nodes and every other column "
                          "kept byte for byte); other inputs become new CoNLL-U")
    tag.add_argument("--column", choices=("upos", "xpos", "misc"), default="upos",
                     help=f"CoNLL-U column the tags go into (default upos; misc adds {PREDICTED_TAG}=TAG)")
    tag.add_argument("--map-to-gold", metavar="GOLD", default=None,
                     help="write each state's most frequent gold tag on the tagged file GOLD (many-to-one) "
                          "instead of its number: for models trained without a tag dictionary")
    tag.add_argument("--decode", choices=("map", "viterbi"), default="map",
                     help="each token's most probable state (map, maximum posterior marginals; default) or the "
                          "most probable state sequence (viterbi): hmmlearn's algorithm= of decode")
    tag.add_argument("-o", "--output", default="-", help="output file (default: standard output)")
