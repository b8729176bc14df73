"""What did not fix the over-segmentation (README.md, "What was tried"), on tune.py's tuning utterances:

    python tried.py decode-penalty MODEL.npz      # a unit insertion penalty at decoding only (nats a unit)
    python tried.py merge-short MODEL.npz         # decoded units of at most L frames merged into their neighbours
    python tried.py train-penalty '{"algorithm": "vb", "n_iter": 10}' 10   # the penalty in training too
    python tried.py passes '{"algorithm": "cvi", "n_iter": 40, "n_states": 4}'  # scores after 5, 10, 20, 30, 40 passes (trimmed)
    python tried.py passes '{"algorithm": "cvi", "n_iter": 30, "n_states": 4, "n_components": 1, "gamma": 0.5, "random_state": 1}'
                                                  # the fourth round's grid: Gaussians a state, gamma, priors, seeds

MODEL.npz is a model fitted on the untrimmed tuning utterances (`AcousticUnits.save`); every line printed is
one setting's scores.  The penalty is subtracted from every unit's log entry probability (a word insertion
penalty in ASR's sense), in a subclass here, not in the package.
"""
import json
import sys

import numpy as np

from cvbayes import AcousticUnits
from cvbayes.metrics.speech import units_report
from tune import dev

SCORES = ("boundary_precision", "boundary_recall", "boundary_f1", "purity", "nmi")


def scores(units, gold):
    report = units_report(units, gold)
    return {k: round(report[k], 4) for k in SCORES}


class Penalised(AcousticUnits):
    """AcousticUnits whose every table (the start's, every pass's, decoding's) charges ``penalty`` nats a unit."""

    penalty = 0.0

    def _tables(self, counts, rule):
        tables = super()._tables(counts, rule)
        return tables._replace(log_entry=tables.log_entry - self.penalty)

    def _start(self, data, rng):
        tables = super()._start(data, rng)
        return tables._replace(log_entry=tables.log_entry - self.penalty)


def merged(segments, n_frames, longest):
    """Frame units with every decoded unit of at most ``longest`` frames split between its neighbours."""
    units, starts, ends = list(segments.units), list(segments.starts), list(segments.ends)
    while len(units) > 1:
        lengths = [e - b for b, e in zip(starts, ends)]
        k = int(np.argmin(lengths))
        if lengths[k] > longest:
            break
        middle = (starts[k] + ends[k]) // 2
        if k == 0:
            starts[1] = 0
        elif k == len(units) - 1:
            ends[k - 1] = ends[k]
        else:
            ends[k - 1], starts[k + 1] = middle, middle
        del units[k], starts[k], ends[k]
    out = np.empty(n_frames, dtype=int)
    for unit, a, b in zip(units, starts, ends):
        out[a:b] = unit
    return out


def main(what, argument, penalty=None):
    if what == "passes":
        features, gold, first_frames = dev(6000, 300, trim=True)
        settings = json.loads(argument)

        def report(model, iteration):
            if iteration + 1 in (5, 10, 15, 20, 30, 40, 60, 80):
                found = units_report(model.predict(features), gold, first_frames)
                seed = settings.get("random_state", 0)
                print(json.dumps({"tried": f"passes (trimmed tuning utterances, seed {seed}, tried.py passes)",
                                  **settings, "trim": True, "passes": iteration + 1,
                                  **{k: round(found[k], 4) for k in SCORES}}), flush=True)

        AcousticUnits(**settings).fit(features, progress=False, callback=report)
        return
    features, gold, _ = dev(6000, 300)
    if what == "train-penalty":
        Penalised.penalty = float(penalty)
        model = Penalised(**json.loads(argument)).fit(features, progress=False)
        print(json.dumps({"penalty": Penalised.penalty, **scores(model.predict(features), gold)}))
        return
    model = AcousticUnits.load(argument)
    if what == "decode-penalty":
        fitted = Penalised(**model.get_params())
        fitted.__dict__.update(model.__dict__)
        for value in (0, 5, 10, 15, 20, 30, 40, 60):
            fitted.penalty = float(value)
            print(json.dumps({"penalty": value, **scores(fitted.predict(features), gold)}), flush=True)
    elif what == "merge-short":
        segments = model.decode(features)
        for longest in (0, 3, 4, 5, 6):
            units = [merged(s, len(f), longest) for s, f in zip(segments, features)]
            print(json.dumps({"merged_up_to_frames": longest, **scores(units, gold)}), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
