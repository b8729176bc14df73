"""SVI and SCVI for the aligners: the stochastic schedule on minibatches of sentence pairs."""
import numpy as np
import pytest

from cvbayes.core.rules import MEAN, VB
from cvbayes.core.statistics import DecayingCounts
from cvbayes.models.alignment import Aligner, score_alignment
from cvbayes.models.alignment.index import build_index
from cvbayes.models.alignment.priors import AlignmentPriors, Pseudocounts
from cvbayes.models.alignment.structures import AlignmentStructure, Statistics
from cvbayes.models.alignment.synthetic import sample_parallel_corpus
from cvbayes.schedules import stochastic


@pytest.fixture(scope="module")
def planted():
    return sample_parallel_corpus(300, seed=1)


def uniform_ibm1_counts(data, n_buckets, rng):
    """Counts of random per-cell posteriors, so that the tables differ from row to row."""
    n_cand = np.repeat(np.diff(data.src_offsets) + 1, np.diff(data.tgt_offsets))
    cells = np.concatenate([rng.dirichlet(np.ones(n)) for n in n_cand]).astype(np.float32)
    translation = data.slot_totals(cells)
    return Statistics(translation, data.row_totals(translation), rng.exponential(20.0, size=n_buckets))


def random_priors(corpus, rng, n=40):
    """Lexical priors on random word pairs (most share no sentence pair; some name NULL) and jump priors."""
    source, target = corpus.source_vocabulary.symbols, corpus.target_vocabulary.symbols
    lexical = [(None if rng.random() < 0.1 else str(rng.choice(source)), str(rng.choice(target)),
                float(rng.exponential(3.0))) for _ in range(n)]
    return AlignmentPriors(lexical, {1: 4.0, -9: 2.0, 2: 0.5})


@pytest.mark.parametrize("priors", [False, True])
@pytest.mark.parametrize("rule", [VB, MEAN])
@pytest.mark.parametrize("model", ["ibm1", "hmm"])
def test_a_full_batch_step_with_kappa_zero_is_a_batch_e_step(planted, model, rule, priors):
    """rho = (tau0 + m)^0 = 1 and a minibatch of every pair: N <- E[C] under the tables of N, exactly the
    batch E-step of the same rule (VB: SVI's step is the VB update, thesis §3.7.2; MEAN: SCVI's), with the
    pseudo-counts of a priors file too (the minibatch's own numbering of slots and rows)."""
    corpus, _ = planted
    corpus = corpus[:80]
    data = build_index(corpus)
    max_jump = 3
    rng = np.random.default_rng(2)
    start = uniform_ibm1_counts(data, 2 * max_jump + 1, rng)
    prior = Pseudocounts(data, 0.1, max_jump, random_priors(corpus, rng) if priors else None,
                         (corpus.source_vocabulary, corpus.target_vocabulary))
    assert prior.lexical == priors
    batch_structure = AlignmentStructure(data, model, prior, 0.2, max_jump, np.empty(data.cell_slot.size, np.float32),
                                         "test")
    expected, expected_log_z = batch_structure.expectations(batch_structure.tables(start, rule))
    counts = {"translation": DecayingCounts(start.translation), "rows": DecayingCounts(start.rows)}
    if model == "hmm":
        counts["jumps"] = DecayingCounts(start.jumps)
    structure = AlignmentStructure(data, model, prior, 0.2, max_jump, None, "test", rule, counts)
    records = []
    steps = stochastic(structure, counts, 1, data.n_pairs, 0.0, 1.0, np.random.default_rng(0),
                       lambda *record: records.append(record))
    assert steps == 1
    np.testing.assert_allclose(counts["translation"].values(), expected.translation, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(counts["rows"].values(), expected.rows, rtol=1e-12)
    if model == "hmm":
        np.testing.assert_allclose(counts["jumps"].values(), expected.jumps, rtol=1e-12)
    assert records[0][1] == pytest.approx(expected_log_z / data.n_target_tokens, rel=1e-12)


@pytest.mark.parametrize("algorithm", ["svi", "scvi"])
@pytest.mark.parametrize("model", ["ibm1", "hmm"])
def test_minibatches_learn_the_planted_alignment(planted, model, algorithm):
    corpus, gold = planted
    aligner = Aligner(model, algorithm, n_iter=(5, 5), batch_size=50, kappa=0.6, random_state=3).fit(corpus)
    objective = np.array([h.objective for h in aligner.history_])
    assert objective.size == (5 if model == "ibm1" else 10) and np.all(np.isfinite(objective))
    # the per-token log normalisers improve from the first pass (uniform tables) to the last
    assert objective[-1] > objective[0] + 0.2
    assert [h.stage for h in aligner.history_][-1] == model
    assert score_alignment(aligner.links(), gold)["aer"] < {"ibm1": 0.30, "hmm": 0.12}[model]


def test_minibatches_are_drawn_with_the_seed(planted):
    corpus, _ = planted
    runs = [Aligner("hmm", "scvi", n_iter=2, batch_size=40, random_state=seed).fit(corpus[:100]) for seed in (0, 0, 1)]
    histories = [[h.objective for h in run.history_] for run in runs]
    assert histories[0] == histories[1] and histories[0] != histories[2]
