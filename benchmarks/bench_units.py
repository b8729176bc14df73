"""Speed and memory of `cvbayes.AcousticUnits`, with hmmlearn's GMMHMM on the same composite HMM.

Data: utterances drawn from a known chain-of-units model (`cvbayes.synthetic.sample_acoustic_units`:
50 units of 3 states, 39 dimensions, utterances of about 3 s), ``--minutes`` of audio at 100 frames a
second (60 minutes: 360k frames, the issue's "one hour of audio"), and the 31 TIDIGITS utterances of
Sphinx's test data (13 cepstra, 6,761 frames) when they are installed.  The model: U = 100 units, S = 3
states (``--states``), M = 2 Gaussians a state (600 components at 3 states).

* **A pass**: each learner runs ``--passes`` + 1 passes; the first is dropped (numba compiles in it) and
  the median of the rest of ``history_[i].seconds`` is reported, with the process's CPU seconds over the
  same passes (user + system of every thread) next to it: on a shared machine the wall time depends on
  the other jobs, the CPU time much less.  The start (k-means) and the first E-step are not counted.
* **The peer**: hmmlearn's ``GMMHMM`` (EM, ``implementation="scaling"``, its faster one) with the same 300
  states and 2 diagonal Gaussians each, its transition matrix the composite chain's (dense, 300 x 300),
  one EM iteration on the first ``--peer-minutes`` of the data, timed after a warm-up on the same data
  and scaled per frame.  Its forward-backward is O(T K^2) where ours is O(T U S); its E-step is the same
  computation otherwise (log densities of every component, posteriors, statistics).
* **Memory** (``--memory 10,20,40``): each learner in a fresh process on that many minutes; the peak
  resident memory (ru_maxrss) against the corpus size.  The frames themselves (39 x 8 bytes a frame,
  kept twice: the caller's list and the model's concatenated copy) grow with the corpus for every
  learner; CVI keeps per-utterance and per-frame local statistics, SVI and SCVI only the global counts.

    python benchmarks/bench_units.py                      # 60 minutes; vb, scvi, svi, cvi; peer on 3 minutes
    python benchmarks/bench_units.py --minutes 10 --passes 1 --algorithms vb
    python benchmarks/bench_units.py --states 4 --algorithms vb,cvi --peer-minutes 0   # the experiment's 4 states
    python benchmarks/bench_units.py --memory 10,20,40 --algorithms vb,cvi,scvi
    python benchmarks/bench_units.py --presegment --algorithms vb,cvi --peer-minutes 0   # the fifth round's model
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from cvbayes import AcousticUnits
from cvbayes.synthetic import sample_acoustic_units

N_UNITS, N_STATES, N_COMPONENTS, N_DIMS = 100, 3, 2, 39
FRAMES_PER_MINUTE = 6000
RESULTS = Path(__file__).resolve().parent / "results"


def synthetic(minutes, seed=0):
    """About ``minutes`` of synthetic audio (utterances of about 3 s)."""
    n_utterances = max(1, round(minutes * FRAMES_PER_MINUTE / 300))
    features, _, _ = sample_acoustic_units(n_utterances, n_units=50, n_states=N_STATES, n_dims=N_DIMS,
                                           mean_frames=300, seed=seed)
    return features


def tidigits():
    """The 31 TIDIGITS utterances (13 cepstra, normalised per utterance), or None when not installed."""
    try:
        from cvbayes.data import load_tidigits
    except ImportError:
        return None
    try:
        corpus = load_tidigits().corpus
    except FileNotFoundError:
        return None
    out = []
    for frames in corpus:
        out.append((frames - frames.mean(axis=0)) / frames.std(axis=0))
    return out


def time_learner(features, algorithm, passes, n_states=N_STATES, seed=0, presegment=False):
    """(median wall seconds a pass, CPU seconds a pass, the model) over ``passes`` passes after the first."""
    cpu = []

    def callback(model, iteration):
        cpu.append(time.process_time())

    model = AcousticUnits(n_units=N_UNITS, n_states=n_states, n_components=N_COMPONENTS, algorithm=algorithm,
                          n_iter=passes + 1, random_state=seed, batch_size=32, presegment=presegment)
    model.fit(features, callback=callback)
    wall = [record.seconds for record in model.history_[1:]]
    return statistics.median(wall), (cpu[-1] - cpu[0]) / passes, model


def time_peer(features, model, passes):
    """Seconds and CPU seconds of one hmmlearn GMMHMM EM iteration on ``features``, the composite chain of
    the fitted ``model`` as its dense HMM."""
    from hmmlearn.hmm import GMMHMM

    n_states = model.n_states
    n_composite = N_UNITS * n_states
    stay = model.stay_.ravel()
    transmat = np.zeros((n_composite, n_composite))
    for c in range(n_composite):
        transmat[c, c] = stay[c]
        if c % n_states < n_states - 1:
            transmat[c, c + 1] = 1.0 - stay[c]
        else:
            transmat[c, ::n_states] += (1.0 - stay[c]) * model.weights_
    startprob = np.zeros(n_composite)
    startprob[::n_states] = model.weights_
    peer = GMMHMM(n_components=n_composite, n_mix=N_COMPONENTS, covariance_type="diag", n_iter=1, tol=-np.inf,
                  init_params="", params="stmcw", implementation="scaling")
    peer.startprob_, peer.transmat_ = startprob, transmat
    peer.weights_ = model.mixture_weights_.reshape(n_composite, N_COMPONENTS)
    peer.means_ = model.means_.reshape(n_composite, N_COMPONENTS, -1)
    peer.covars_ = model.covars_.reshape(n_composite, N_COMPONENTS, -1)
    x = np.concatenate(features)
    lengths = [f.shape[0] for f in features]
    peer.fit(x[:lengths[0]], lengths[:1])  # warm-up
    walls, cpus = [], []
    for _ in range(passes):
        wall, cpu = time.perf_counter(), time.process_time()
        peer.fit(x, lengths)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus)


def speed(args):
    rows = []
    corpora = [(f"synthetic {args.minutes:g} min", synthetic(args.minutes))]
    digits = tidigits()
    if digits is not None:
        corpora.append(("TIDIGITS (31 utterances)", digits))
    peer_model = None
    for name, features in corpora:
        n_frames = sum(f.shape[0] for f in features)
        for algorithm in args.algorithms.split(","):
            wall, cpu, model = time_learner(features, algorithm, args.passes, args.states, presegment=args.presegment)
            rows.append({"data": name, "frames": n_frames, "dimensions": features[0].shape[1],
                         "algorithm": algorithm, "states": args.states, "presegment": args.presegment, "seconds_per_pass": wall, "cpu_seconds_per_pass": cpu,
                         "seconds_per_hour_of_audio": wall * 360_000 / n_frames,
                         "units_used": int(model.n_units_used_)})
            print(json.dumps(rows[-1]), flush=True)
            if peer_model is None and algorithm == "vb" and name.startswith("synthetic"):
                peer_model = (model, features)
    peer = None
    if args.peer_minutes > 0 and peer_model is not None:
        model, features = peer_model
        take, frames = [], 0
        for f in features:
            if frames >= args.peer_minutes * FRAMES_PER_MINUTE:
                break
            take.append(f)
            frames += f.shape[0]
        wall, cpu = time_peer(take, model, 1)
        scale = rows[0]["frames"] / frames
        peer = {"peer": "hmmlearn GMMHMM EM iteration (scaling)", "frames": frames, "seconds": wall,
                "cpu_seconds": cpu, "seconds_scaled_to_synthetic": wall * scale,
                "cpu_seconds_scaled_to_synthetic": cpu * scale}
        vb = next(row for row in rows if row["algorithm"] == "vb" and row["data"].startswith("synthetic"))
        peer["ratio_wall"] = peer["seconds_scaled_to_synthetic"] / vb["seconds_per_pass"]
        peer["ratio_cpu"] = peer["cpu_seconds_scaled_to_synthetic"] / vb["cpu_seconds_per_pass"]
        print(json.dumps(peer), flush=True)
    print(f"\n{'data':<26}{'algorithm':>10}{'frames':>9}{'s/pass':>9}{'cpu s/pass':>12}{'s per hour':>12}")
    for row in rows:
        print(f"{row['data']:<26}{row['algorithm']:>10}{row['frames']:>9}{row['seconds_per_pass']:>9.2f}"
              f"{row['cpu_seconds_per_pass']:>12.2f}{row['seconds_per_hour_of_audio']:>12.1f}")
    if peer is not None:
        print(f"hmmlearn GMMHMM, one EM iteration on {peer['frames']} frames: {peer['seconds']:.1f} s "
              f"({peer['cpu_seconds']:.1f} s CPU); scaled to the synthetic corpus {peer['ratio_wall']:.0f}x our vb "
              f"pass ({peer['ratio_cpu']:.0f}x in CPU time)")
    return {"rows": rows, "peer": peer}


def memory_child(minutes, algorithm):
    features = synthetic(minutes)
    model = AcousticUnits(n_units=N_UNITS, n_states=N_STATES, n_components=N_COMPONENTS, algorithm=algorithm,
                          n_iter=1, random_state=0, batch_size=32).fit(features)
    print(json.dumps({"minutes": minutes, "algorithm": algorithm,
                      "frames": sum(f.shape[0] for f in features),
                      "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "frames_mib": sum(f.nbytes for f in features) / 2 ** 20,
                      "local_mib": model.local_memory_bytes_ / 2 ** 20,
                      "global_mib": model.global_memory_bytes_ / 2 ** 20}))


def memory(args):
    rows = []
    for algorithm in args.algorithms.split(","):
        for minutes in map(float, args.memory.split(",")):
            out = subprocess.run([sys.executable, __file__, "--memory-child", f"{minutes},{algorithm}"],
                                 capture_output=True, text=True, check=True, env={**os.environ})
            rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
            print(json.dumps(rows[-1]), flush=True)
    return {"memory": rows}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=60.0, help="synthetic audio to time (default 60)")
    parser.add_argument("--passes", type=int, default=2, help="timed passes a learner (default 2)")
    parser.add_argument("--algorithms", default="vb,scvi,svi,cvi", help="learners (default vb,scvi,svi,cvi)")
    parser.add_argument("--states", type=int, default=N_STATES, help=f"states a unit of the model (default {N_STATES})")
    parser.add_argument("--peer-minutes", type=float, default=3.0,
                        help="audio hmmlearn runs on, scaled per frame (default 3; 0 skips it)")
    parser.add_argument("--presegment", action="store_true",
                        help="unit starts at spectral-change candidates only (the experiment's fifth round)")
    parser.add_argument("--memory", default=None, help="minutes of audio to measure peak memory on, e.g. 10,20,40")
    parser.add_argument("--memory-child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--json", default=None, help="write the report here")
    args = parser.parse_args()
    if args.memory_child:
        minutes, algorithm = args.memory_child.split(",")
        memory_child(float(minutes), algorithm)
        return
    report = memory(args) if args.memory else speed(args)
    report["machine"] = {"cpus": os.cpu_count(), "load_average": os.getloadavg()}
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
