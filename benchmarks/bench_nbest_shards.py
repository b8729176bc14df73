"""Benchmark of the n-best joint rounds on Dask shards (cvbayes.models.discovery_nbest_shards, issue 31).

The uld experiment's first ``--utterances`` training utterances of the synthetic Brent corpus (``cvbayes data fetch
synthetic-brent``): the pipeline (units by vb, ``--unit-passes``; NoisyWords by vb, ``--word-passes``; seed 0), its
candidates (``n_best=5``, ``n_draws=20``), then ``--rounds`` rounds (step (a), then (b)-(c)) in one process and with
their E-steps on a LocalCluster of ``--workers`` one-thread worker processes (a shard a worker and side), each after
a warm-up round.  Prints every round's seconds and their medians, J1 of both, the largest difference of q(k | u),
and the shards' last two passes (`cvbayes.models.shards.PassTiming`).

    python benchmarks/bench_nbest_shards.py --utterances 500
"""
import argparse
import copy
import statistics
import time

import numpy as np


def timed_rounds(joint, rounds):
    """(seconds of step (a), seconds of the round) of ``rounds`` rounds."""
    out = []
    for _ in range(rounds):
        started = time.perf_counter()
        joint.step_posterior()
        scored = time.perf_counter()
        joint.step_parameters(joint.posterior)
        out.append((scored - started, time.perf_counter() - started))
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--utterances", type=int, default=500)
    parser.add_argument("--unit-passes", type=int, default=30)
    parser.add_argument("--word-passes", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()

    import distributed

    from cvbayes import AcousticUnits
    from cvbayes.experiments.uld import brent_corpus
    from cvbayes.models.discovery import LexiconDiscovery, spoken
    from cvbayes.models.discovery_nbest import NbestJoint, candidate_readings
    from cvbayes.models.discovery_nbest_shards import ShardedNbestJoint

    features = brent_corpus("train", args.utterances)["features"]
    units = AcousticUnits(algorithm="vb", n_iter=args.unit_passes, presegment=True, random_state=0).fit(features)
    pipeline = LexiconDiscovery(algorithm="vb", n_iter=args.word_passes, random_state=0).fit(features, units=units)
    candidates = candidate_readings(pipeline.units_, features, 5, 20, 0)

    def joint(kind, **sharding):
        return kind(copy.deepcopy(pipeline.units_), copy.deepcopy(pipeline.words_), features, candidates,
                    lambda reading: spoken([reading], pipeline.pause_units_)[0][1], **sharding)

    timed_rounds(joint(NbestJoint), 1)
    local = joint(NbestJoint)
    print(f"{len(local.readings)} candidates, {len(local.types)} distinct spoken strings")
    times = {"one process": timed_rounds(local, args.rounds)}
    with distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster, distributed.Client(cluster) as client:
        warm = joint(ShardedNbestJoint, client=client)
        timed_rounds(warm, 1)
        warm.close()
        sharded = joint(ShardedNbestJoint, client=client)
        times["shards"] = timed_rounds(sharded, args.rounds)
        sharded.close()
    for name, rounds in times.items():
        steps, totals = zip(*rounds)
        print(f"{name}: step (a) {' '.join(f'{s:.3f}' for s in steps)} (median {statistics.median(steps):.3f} s), "
              f"round {' '.join(f'{s:.3f}' for s in totals)} (median {statistics.median(totals):.3f} s)")
    print("J1, one process:", local.objective)
    print("J1, shards:     ", sharded.objective)
    print(f"largest |q(k | u) difference|: {np.abs(local.posterior - sharded.posterior).max():.2e}")
    for side, passes in (("units", sharded.unit_shards.passes), ("strings", sharded.type_shards.passes)):
        for timing in passes[-2:]:
            print(side, {key: np.round(value, 3).tolist() for key, value in timing.items()})


if __name__ == "__main__":
    main()
