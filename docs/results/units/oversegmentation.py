"""Where the extra boundaries fall: a fitted model (``.npz`` of `AcousticUnits.save`) decodes the tuning
utterances of tune.py (utterances FIRST..FIRST+N of synthetic Brent's train split, outside the experiment's
slice) and every predicted unit change is placed against the gold phones.  Prints one JSON object.

    python docs/results/units/oversegmentation.py MODEL.npz [FIRST N [trim]]
"""
import collections
import json
import sys

import numpy as np

from cvbayes import AcousticUnits
from cvbayes.metrics.speech import TOLERANCE, phone_boundaries, units_report
from tune import dev

VOWELS = set("aa ae ah ao aw ax ay eh er ey ih iy ow oy uh uw".split())
DIPHTHONGS = set("aw ay ey ow oy".split())
HOP, SHIFT = 0.01, 0.0075  # a cut before frame t lies at t HOP + SHIFT s (metrics.speech.frame_boundaries)


def phone_class(label, edge):
    if label == "SIL":
        return "silence at an utterance edge" if edge else "silence inside"
    return "diphthong" if label in DIPHTHONGS else "vowel" if label in VOWELS else "consonant"


def main(path, first=6000, n=300, trim=False):
    model = AcousticUnits.load(path)
    features, gold, first_frames = dev(first, n, trim)
    segments = model.decode(features)
    report = units_report(model.predict(features), gold, first_frames)
    distances, shorter_side, inside = [], [], collections.Counter()
    for i, (segs, phones) in enumerate(zip(segments, gold)):
        offset = first_frames[i] if first_frames is not None else 0
        gold_cuts = phone_boundaries(phones)
        lengths = segs.ends - segs.starts
        for k, cut in enumerate((offset + segs.starts[1:]) * HOP + SHIFT):
            distance = np.abs(gold_cuts - cut).min() if gold_cuts.size else np.inf
            distances.append(distance)
            if distance > TOLERANCE:
                shorter_side.append(min(lengths[k], lengths[k + 1]))
                holder = next(j for j, p in enumerate(phones) if p[0] <= cut < p[1] or j == len(phones) - 1)
                inside[phone_class(phones[holder][2], holder in (0, len(phones) - 1))] += 1
    distances = np.array(distances) * 1000
    shorter_side = np.array(shorter_side)
    extra = int(shorter_side.size)
    bins = [0, 20, 30, 40, 50, 80, np.inf]
    counts = np.histogram(distances, bins=bins)[0]
    segment_ms = np.concatenate([s.ends - s.starts for s in segments]) * HOP * 1000
    phone_ms = np.array([(e - s) * 1000 for p in gold for s, e, _ in p[1:-1]])
    scores = ("boundary_precision", "boundary_recall", "boundary_f1", "purity", "nmi")
    out = {"model": path, "utterances": [first, first + n], "trim": trim,
           **{k: round(report[k], 4) for k in scores},
           "predicted_cuts": len(distances), "extra_cuts": extra,
           "cut_distance_to_nearest_gold_ms": {f"{lo:g}-{hi:g}": int(c)
                                               for lo, hi, c in zip(bins[:-1], bins[1:], counts)},
           "extra_cuts_whose_shorter_neighbour_has_frames": {
               "3": int((shorter_side == 3).sum()), "4": int((shorter_side == 4).sum()),
               "5-6": int(((shorter_side >= 5) & (shorter_side <= 6)).sum()), "7+": int((shorter_side >= 7).sum())},
           "extra_cuts_inside": dict(inside.most_common()),
           "segment_ms_median": float(np.median(segment_ms)),
           "segments_of_3_4_frames": round(float(np.mean(segment_ms <= 40)), 3),
           "gold_interval_ms_percentiles_10_25_50": np.percentile(phone_ms, [10, 25, 50]).round(1).tolist()}
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1], *(int(a) for a in sys.argv[2:4]), *(a == "trim" for a in sys.argv[4:5]))
