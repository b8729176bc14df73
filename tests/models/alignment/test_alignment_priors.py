"""eflomal priors files: the reader, the writer, and per-entry Dirichlet pseudo-counts in every learner."""
import numpy as np
import pytest

from cvbayes.core.rules import (MAP, MEAN, VB, dirichlet_kl, dirichlet_log_marginal, dirichlet_log_prior,
                                dirichlet_table)
from cvbayes.data.errors import CorpusFormatError
from cvbayes.models.alignment import ALGORITHMS, Aligner, ParallelCorpus, align
from cvbayes.models.alignment.collapsed import ibm1_state, ibm1_token_update
from cvbayes.models.alignment.index import build_index
from cvbayes.models.alignment.priors import AlignmentPriors, Pseudocounts, make_priors, read_priors, write_priors

from tests.models.alignment.test_alignment_models import counts_without


def write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def test_reader_takes_the_five_kinds_and_the_old_form(tmp_path):
    path = write(tmp_path / "p.priors", "LEX\ta\tx\t2\nb\ty\t0.5\nLEX\t<NULL>\tz\t1\nHMMF\t1\t3\nHMMF\t1\t1\n"
                                        "HMMR\t-2\t4\nFERF\ta\t1\t7\nFERR\tx\t2\t1\n\n")
    priors = read_priors(path)
    assert priors.lexical == [("a", "x", 2.0), ("b", "y", 0.5), (None, "z", 1.0)]
    assert priors.jumps == {1: 4.0} and priors.reverse_jumps == {-2: 4.0}
    assert priors.fertility == [("FERF", "a", 1, 7.0), ("FERR", "x", 2, 1.0)]
    reverse = priors.reversed()
    assert reverse.lexical == [("x", "a", 2.0), ("y", "b", 0.5), ("z", None, 1.0)]
    assert reverse.jumps == {-2: 4.0} and reverse.reverse_jumps == {1: 4.0}


@pytest.mark.parametrize("line", ["LEX\ta\tx", "HMMF\t1.5\t2", "LEX\ta\tx\tmany", "a\tx\t-1", "FERF\ta\tone\t1",
                                  "just words"])
def test_a_bad_line_names_the_file_and_line(tmp_path, line):
    path = write(tmp_path / "bad.priors", f"LEX\ta\tx\t1\nHMMR\t0\t1\n{line}\n")
    with pytest.raises(CorpusFormatError, match=r"bad\.priors, line 3: expected"):
        read_priors(path)


def test_unknown_words_are_counted_and_change_nothing():
    corpus = ParallelCorpus.from_tokens([["a", "b"]], [["x", "y"]])
    priors = AlignmentPriors([("a", "x", 1.0), ("zz", "x", 1.0), ("a", "ww", 1.0), (None, "y", 1.0)])
    assert priors.used(corpus) == 3 - 1 + 0   # "zz" and "ww" are unknown; NULL always is known
    data = build_index(corpus)
    pseudo = Pseudocounts(data, 0.1, 2, AlignmentPriors([("zz", "x", 1.0)]), (corpus.source_vocabulary,
                                                                            corpus.target_vocabulary))
    assert not pseudo.lexical


def test_jumps_outside_the_buckets_go_to_the_bucket_of_their_width():
    corpus = ParallelCorpus.from_tokens([["a", "b"]], [["x", "y"]])
    priors = AlignmentPriors(jumps={12: 1.0, 3: 2.0, -1: 0.5, -9: 4.0})
    pseudo = Pseudocounts(build_index(corpus), 0.1, 3, priors, (corpus.source_vocabulary, corpus.target_vocabulary))
    np.testing.assert_allclose(pseudo.jumps, 0.1 + np.array([4.0, 0, 0.5, 0, 0, 0, 3.0]))
    assert pseudo.jump_total == pytest.approx(7 * 0.1 + 7.5)


# -- the math: per-entry pseudo-counts against dense rows -------------------------------------------

def dense_case():
    """A corpus, its index, per-entry priors (one on a pair that shares no sentence pair, one on NULL) and
    the dense (rows x V_e) pseudo-counts they mean."""
    corpus = ParallelCorpus.from_tokens([["a", "b"], ["b", "c"], ["a", "c", "a"]],
                                        [["x", "y"], ["y", "z", "z"], ["x", "z", "x"]])
    data = build_index(corpus)
    vocabularies = (corpus.source_vocabulary, corpus.target_vocabulary)
    # ("a", "y") never share a pair; ("b", "x") neither; (NULL, "z") does
    priors = AlignmentPriors([("a", "x", 3.0), ("a", "y", 2.5), ("b", "x", 0.7), (None, "z", 1.5), ("a", "x", 1.0)])
    prior = 0.3
    pseudo = Pseudocounts(data, prior, 2, priors, vocabularies)
    dense = np.full((data.n_rows, data.n_target_types), prior)
    for f, e, alpha in priors.lexical:
        row = data.n_source_types if f is None else corpus.source_vocabulary.index(f)
        dense[row, corpus.target_vocabulary.index(e)] += alpha
    return corpus, data, pseudo, dense


def slot_columns(data):
    n_cand = np.repeat(np.diff(data.src_offsets) + 1, np.diff(data.tgt_offsets))
    target = np.empty(data.n_slots, dtype=np.int64)
    target[data.cell_slot] = np.repeat(data.tgt_ids, n_cand)
    return target


def test_the_bound_pseudo_counts_are_the_dense_rows():
    _, data, pseudo, dense = dense_case()
    np.testing.assert_allclose(pseudo.slot, dense[data.slot_row, slot_columns(data)])
    np.testing.assert_allclose(pseudo.row, dense.sum(axis=1))


@pytest.mark.parametrize("rule", [MAP, VB, MEAN])
def test_tables_and_objectives_equal_the_dense_rows(rule):
    """Every stored entry's table and each objective equal the dense Dirichlet functions of
    `cvbayes.core.rules` applied row by row to the whole V_e columns (the unstored entries with no counts)."""
    _, data, pseudo, dense = dense_case()
    rng = np.random.default_rng(0)
    counts = rng.gamma(1.0, 2.0, data.n_slots)
    counts[::4] = 0.0
    rows = data.row_totals(counts)
    dense_counts = np.zeros_like(dense)
    dense_counts[data.slot_row, slot_columns(data)] = counts
    table = pseudo.table(rule, counts, data.slot_row, rows)
    for r in range(data.n_rows):
        expected = dirichlet_table(rule, dense_counts[r], dense[r])
        mine = data.slot_row == r
        np.testing.assert_allclose(table[mine], expected[slot_columns(data)[mine]], rtol=1e-12)
    if rule == MAP:
        expected_prior = sum(dirichlet_log_prior(dirichlet_table(MAP, dense_counts[r], dense[r]), dense[r])
                             for r in range(data.n_rows))
        assert pseudo.log_prior(table, data.slot_row, rows) == pytest.approx(expected_prior, rel=1e-12)
    if rule == VB:
        expected_kl = sum(dirichlet_kl(dense_counts[r], dense[r]) for r in range(data.n_rows))
        assert pseudo.kl(counts, data.slot_row, rows) == pytest.approx(expected_kl, rel=1e-10)
    whole = np.round(counts * 3)
    expected_marginal = sum(dirichlet_log_marginal(np.round(dense_counts[r] * 3), dense[r])
                            for r in range(data.n_rows))
    assert pseudo.log_marginal(whole, data.slot_row, data.row_totals(whole)) == pytest.approx(expected_marginal,
                                                                                             rel=1e-12)


def test_collapsed_predictive_with_per_entry_priors_equals_brute_force():
    """CVI-1's IBM1 token update (the numba kernel reading per-entry arrays): q(a_j = i) is the leave-one-
    token-out predictive (C_fe + a_fe) / (C_f. + A_f), A_f summed over all V_e columns, by hand."""
    corpus, data, pseudo, dense = dense_case()
    rng = np.random.default_rng(4)
    n_cand = np.repeat(np.diff(data.src_offsets) + 1, np.diff(data.tgt_offsets))
    cells = np.concatenate([rng.dirichlet(np.ones(n)) for n in n_cand]).astype(np.float32)
    counts = data.slot_totals(cells)
    totals = data.row_totals(counts)
    s, j = 2, 2
    e = corpus.target[s]
    sources = np.append(corpus.source[s], data.n_source_types)
    first = data.cell_offsets[s] + j * sources.size
    expected = counts_without(corpus, data, cells, s, j)
    predictive = (expected[sources, e[j]] + dense[sources, e[j]]) / (expected[sources].sum(axis=1)
                                                                    + dense[sources].sum(axis=1))
    log_norm = ibm1_token_update(ibm1_state(data, pseudo, counts, totals, cells), data.tgt_offsets[s] + j)
    np.testing.assert_allclose(cells[first:first + sources.size], predictive / predictive.sum(), rtol=1e-6)
    assert log_norm == pytest.approx(np.log(predictive.mean()), rel=1e-12)


# -- end to end ----------------------------------------------------------------------------------

def crossing_corpus():
    """Three copies of 'a b ||| x y' and one of 'a ||| x': the data and the HMM's preference for small jumps
    link a-x and b-y, while the dictionary says a means y and b means x."""
    return ParallelCorpus.from_tokens([["a", "b"]] * 3 + [["a"]], [["x", "y"]] * 3 + [["x"]])


DICTIONARY = AlignmentPriors([("a", "y", 10.0), ("b", "x", 10.0)])


@pytest.mark.parametrize("algorithm", list(ALGORITHMS))
def test_a_dictionary_prior_flips_the_links_the_data_gets_wrong(algorithm):
    corpus = crossing_corpus()
    # prior 1: at VB's and SVI's 0.1 the empty jump buckets' exp E[log theta] at the HMM's start (3e-5)
    # sends every word to NULL on three pairs, with or without priors
    options = dict(n_iter=(3, 3), prior=1.0, random_state=0, batch_size=3)
    assert Aligner("hmm", algorithm, **options).fit(corpus).links()[0] != {(0, 1), (1, 0)}
    fitted = Aligner("hmm", algorithm, **options, priors=DICTIONARY).fit(corpus)
    assert fitted.links()[:3] == [{(0, 1), (1, 0)}] * 3
    assert fitted.priors_used_ == 2


@pytest.mark.parametrize("algorithm", ["em", "vb"])
def test_em_and_vb_objectives_never_decrease_under_priors(algorithm):
    corpus = ParallelCorpus.from_tokens([["a", "b", "c"], ["b", "c"], ["a", "c", "d"]] * 3,
                                        [["x", "y", "z"], ["y", "w"], ["x", "w", "v"]] * 3)
    priors = AlignmentPriors([("a", "x", 4.0), ("c", "z", 2.0), ("d", "y", 3.0), (None, "w", 2.5)], {1: 5.0, 2: 2.0})
    # prior 1.5: every MAP pseudo-count (a - 1)+ positive, so that no table entry is zero
    aligner = Aligner("hmm", algorithm, n_iter=(4, 4), prior=1.5, priors=priors).fit(corpus)
    for stage in ("ibm1", "hmm"):
        values = [record.objective for record in aligner.history_ if record.stage == stage]
        assert np.all(np.diff(values) >= -1e-9 * np.abs(values[1:]))


def test_an_empty_priors_file_equals_no_priors(tmp_path):
    corpus = ParallelCorpus.from_tokens([["a", "b", "c"], ["c", "b"]] * 4, [["x", "y", "z"], ["z", "y"]] * 4)
    empty = write(tmp_path / "empty.priors", "")
    for algorithm in ("cvi2", "vb"):
        plain = Aligner("hmm", algorithm, n_iter=2).fit(corpus)
        primed = Aligner("hmm", algorithm, n_iter=2, priors=str(empty)).fit(corpus)
        assert primed.links() == plain.links()
        for mine, theirs in zip(primed.statistics_, plain.statistics_):
            np.testing.assert_array_equal(mine, theirs)


def test_written_priors_read_back_the_same(tmp_path):
    corpus = ParallelCorpus.from_tokens([["a", "b", "c"], ["b", "a"], []], [["x", "y"], ["y", "x", "z"], ["q"]])
    forward = [{(0, 0), (2, 1)}, {(1, 1), (0, 2)}, set()]
    reverse = [{(0, 0), (1, 1)}, {(0, 0), (1, 2)}, set()]
    made = make_priors(corpus, forward, reverse)
    # eflomal-makepriors by hand: forward jumps 0-(-1), 2-0, then 3 - 2 to the end; 1-(-1), 0-1, 2 - 0
    assert made.jumps == {1: 2.0, 2: 3.0, -1: 1.0}
    # reverse, over target positions in source order: 0-(-1), 1-0, 2 - 1 to the end; 0-(-1), 2-0, 3 - 2
    assert made.reverse_jumps == {1: 5.0, 2: 1.0}
    assert sorted(made.lexical) == [("a", "x", 2.0), ("b", "z", 1.0), ("c", "y", 1.0)]
    write_priors(made, tmp_path / "made.priors")
    back = read_priors(tmp_path / "made.priors")
    assert sorted(back.lexical) == sorted(made.lexical)
    assert (back.jumps, back.reverse_jumps) == (made.jumps, made.reverse_jumps)
    assert sorted(back.fertility) == sorted(made.fertility)


def test_align_gives_the_reverse_direction_the_transposed_priors():
    corpus = crossing_corpus()
    assert align(corpus, "hmm", "cvi2", symmetrization="reverse", priors=DICTIONARY)[0] == {(0, 1), (1, 0)}
    assert align(corpus, "hmm", "cvi2", symmetrization="reverse")[0] != {(0, 1), (1, 0)}


def test_a_saved_aligner_keeps_its_priors(tmp_path):
    corpus = crossing_corpus()
    fitted = Aligner("hmm", "cvi2", priors=DICTIONARY).fit(corpus)
    fitted.save(tmp_path / "model")
    loaded = Aligner.load(tmp_path / "model")
    assert loaded.priors == DICTIONARY
    np.testing.assert_allclose(loaded.translation_table()[2], fitted.translation_table()[2])
