"""The spectral-change candidates (`cvbayes.speech.spectral_change_starts`) alone against the gold phone
boundaries at 20 ms: how many candidates a gold boundary, and how many gold boundaries a candidate lies
near (the recall the units can reach at most).

    python candidates.py           # the trimmed tuning utterances (tune.py's 6001-6300), one JSON line a setting
    python candidates.py slice     # the package's setting and the best alone on the experiment's 500 + 500 trimmed utterances
"""
import json
import sys

from cvbayes.metrics.speech import boundary_scores, frame_boundaries, phone_boundaries
from cvbayes.speech import spectral_change_starts
from tune import dev


def scores(features, gold, first_frames, window=2, n_dims=13, spacing=1):
    # a frame labelling that changes exactly at the candidates (frame 0 is no boundary)
    predicted = [frame_boundaries(spectral_change_starts(x, window, n_dims, spacing).cumsum(), first_frame=f)
                 for x, f in zip(features, first_frames)]
    s = boundary_scores(predicted, [phone_boundaries(g) for g in gold])
    return {"window": window, "n_dims": n_dims, "spacing": spacing,
            "candidates_a_gold_boundary": round(s.predicted / s.gold, 3), "recall": round(s.recall, 4),
            "precision": round(s.precision, 4), "f1": round(s.f1, 4)}


if __name__ == "__main__":
    if sys.argv[1:] == ["slice"]:
        from cvbayes.experiments.units import synthetic_brent_corpus

        corpus = synthetic_brent_corpus("train", 500, heldout="test", trim=True)
        for part in (corpus, corpus.heldout):
            for setting in ((2, 13, 1), (4, 13, 2)):
                print(json.dumps({"corpus": part.name, **scores(part.features, part.phones, part.first_frames,
                                                                 *setting)}))
        sys.exit()
    features, gold, first_frames = dev(6000, 300, trim=True)
    for window in (2, 3, 4):
        for n_dims in (13, 39):
            for spacing in (1, 2):
                print(json.dumps(scores(features, gold, first_frames, window, n_dims, spacing)), flush=True)
