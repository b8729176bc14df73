"""The DMV's learners (cvbayes.DMV) against brute-force enumeration of trees, and its files and commands."""
import json

import numpy as np
import pytest
from scipy.special import digamma, gammaln

from tests.brute_dmv import exact_posterior
from cvbayes import DMV
from cvbayes.cli import main
from cvbayes.core.rules import MEAN, dirichlet_table
from cvbayes.core.statistics import DecayingCounts
from cvbayes.data.conllu_io import parse_conllu_text, read_conllu_document
from cvbayes.data.dependencies import read_dependencies, upos_tagset
from cvbayes.models.dmv import (BLOCKS, CollapsedTrees, MinibatchTrees, cvi_pass, gather_sentences)
from cvbayes.trees.dmv import (DMVCounts, LocalPosteriors, add_posterior_counts, add_row_totals,
                               mean_sentence_weights, sentence_weights)
from cvbayes.trees.dmv_init import dmv_harmonic_counts

# three types, sentences of 1 to 4 words: every projective tree can be enumerated
TINY = [[0, 1, 0], [1, 2], [2, 0, 1, 2], [1], [0, 0, 2, 1]]
N_TYPES = 3


def flat(sentences):
    tags = np.array([t for s in sentences for t in s], dtype=np.int32)
    offsets = np.concatenate([[0], np.cumsum([len(s) for s in sentences])]).astype(np.int64)
    return tags, offsets


def brute_counts(sentences, tables):
    """sum_i of the exact expected counts and log Z of every sentence under the log tables."""
    total = DMVCounts.zeros(N_TYPES)
    log_z = 0.0
    for sentence in sentences:
        sentence_log_z, _, _, counts, _, _ = exact_posterior(sentence, *tables)
        log_z += sentence_log_z
        for block, part in zip(total, counts, strict=True):
            block += part
    return total, log_z


def assert_counts_close(got, want, atol):
    for name, a, b in zip(BLOCKS, got, want, strict=True):
        np.testing.assert_allclose(a, b, atol=atol, err_msg=name)


def harmonic(sentences=TINY):
    return dmv_harmonic_counts(*flat(sentences), N_TYPES, variant=DMV().harmonic_variant)


def random_sentences(rng, n_sentences, n_types, longest):
    return [rng.integers(0, n_types, rng.integers(1, longest + 1)).tolist() for _ in range(n_sentences)]


def test_em_update_matches_enumeration():
    # alpha = 2: MAP with one pseudo-count a cell (eq. 4.10 with the prior's mode)
    start = harmonic()
    tables = tuple(np.log((c + 1.0) / (c + 1.0).sum(axis=-1, keepdims=True)) for c in start)
    want, log_z = brute_counts(TINY, tables)
    model = DMV(alpha=2.0, algorithm="em", n_iter=1).fit(TINY)
    assert_counts_close(model.counts_, want, 1e-12)
    log_prior = sum(table.sum() for table in tables)  # (alpha - 1) log theta
    assert model.history_[0].objective == pytest.approx(log_z + log_prior, rel=1e-12)


def dirichlet_kl(counts, alpha):
    """KL(Dir(C + a) || Dir(a)) summed over the rows of the last axis, written out."""
    posterior = counts + alpha
    total = posterior.sum(axis=-1)
    prior_total = alpha * counts.shape[-1]
    return float((gammaln(total) - gammaln(posterior).sum(axis=-1) - gammaln(prior_total)
                  + counts.shape[-1] * gammaln(alpha)
                  + (counts * (digamma(posterior) - digamma(total)[..., None])).sum(axis=-1)).sum())


def test_vb_update_matches_enumeration():
    alpha = 0.3
    start = harmonic()
    tables = tuple(digamma(c + alpha) - digamma((c + alpha).sum(axis=-1, keepdims=True)) for c in start)
    want, log_z = brute_counts(TINY, tables)
    model = DMV(alpha=alpha, algorithm="vb", n_iter=1).fit(TINY)
    assert_counts_close(model.counts_, want, 1e-12)
    elbo = log_z - sum(dirichlet_kl(c, alpha) for c in start)
    assert model.history_[0].objective == pytest.approx(elbo, rel=1e-12)


def collapsed(sentences, alpha):
    tags, offsets = flat(sentences)
    local = LocalPosteriors.empty(offsets)
    counts = dmv_harmonic_counts(tags, offsets, N_TYPES, variant=DMV().harmonic_variant, local=local)
    return CollapsedTrees(tags, offsets, alpha, counts, local), tags, offsets


@pytest.mark.parametrize("unit", [0, 2, 4])
def test_cvi_update_matches_enumeration(unit):
    alpha = 0.5
    structure, tags, offsets = collapsed(TINY, alpha)
    # eq. 4.24: theta_bar from the counts of every other sentence
    others = harmonic([s for i, s in enumerate(TINY) if i != unit])
    tables = tuple(np.log((c + alpha) / (c + alpha).sum(axis=-1, keepdims=True)) for c in others)
    want_log_z, _, _, want, head_marginals, _ = exact_posterior(TINY[unit], *tables)
    objective, bad = cvi_pass(structure.state, np.array([unit], dtype=np.int64))
    assert bad == -1
    # the kernel's counts hold every sentence's float32 posteriors, the brute force float64 ones
    assert objective == pytest.approx(want_log_z, rel=1e-7)
    # the new global counts: the others' plus the sentence's new expected counts (float32 stores)
    assert_counts_close(structure.counts, [o + w for o, w in zip(others, want, strict=True)], 1e-6)
    stored, _ = structure.local.sentence(unit, offsets)
    np.testing.assert_allclose(stored, head_marginals, atol=1e-6)
    np.testing.assert_allclose(structure.root_total, structure.counts.root.sum(), rtol=1e-12)
    np.testing.assert_allclose(structure.attach_totals, structure.counts.attach.sum(axis=-1), atol=1e-12)


def test_cvi_leave_one_out_weights_equal_a_recomputation():
    rng = np.random.default_rng(1)
    alpha = 0.1
    sentences = random_sentences(rng, 40, N_TYPES, 6)
    structure, tags, offsets = collapsed(sentences, alpha)
    order = rng.permutation(len(sentences))
    structure.visit(order)
    # half a pass more: the kept row totals move with every update, unrefreshed
    cvi_pass(structure.state, order[:20])
    state = structure.state
    for unit in (int(order[5]), int(order[30])):
        begin, n = offsets[unit], offsets[unit + 1] - offsets[unit]
        # the update's own way: the live counts and totals minus the sentence's stored posteriors
        counts = DMVCounts(*(c.copy() for c in structure.counts))
        root_total, attach_totals = structure.root_total.copy(), structure.attach_totals.copy()
        block, none = structure.local.sentence(unit, offsets)
        add_posterior_counts(tags, begin, n, block, none, -1.0, *counts)
        add_row_totals(tags, begin, n, block, -1.0, root_total, attach_totals)
        got = (np.empty(n), np.empty((n, 2, 2, 2)), np.empty((n, n)))
        mean_sentence_weights(tags, begin, n, alpha, counts.root, root_total, counts.stop, counts.attach,
                              attach_totals, *got)
        # recomputed: every other sentence's counts summed afresh, the MEAN table of core.rules
        fresh = DMVCounts.zeros(N_TYPES)
        for other in range(len(sentences)):
            if other != unit:
                other_block, other_none = structure.local.sentence(other, offsets)
                add_posterior_counts(tags, offsets[other], offsets[other + 1] - offsets[other], other_block,
                                     other_none, 1.0, *fresh)
        tables = tuple(np.log(dirichlet_table(MEAN, c, alpha)) for c in fresh)
        want = (np.empty(n), np.empty((n, 2, 2, 2)), np.empty((n, n)))
        sentence_weights(tags, begin, n, *tables, *want)
        for a, b in zip(got, want, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-10)
    assert state[3] is structure.counts.root


def test_scvi_step_matches_enumeration():
    # one step with the whole corpus as the minibatch and rho = 1: the counts under the MEAN tables
    alpha = 0.2
    start = harmonic()
    tables = tuple(np.log(dirichlet_table(MEAN, c, alpha)) for c in start)
    want, _ = brute_counts(TINY, tables)
    model = DMV(alpha=alpha, algorithm="scvi", n_iter=1, batch_size=len(TINY), tau0=1.0).fit(TINY)
    assert_counts_close(model.counts_, want, 1e-12)
    # a minibatch is scaled to the corpus
    tags, offsets = flat(TINY)
    structure = MinibatchTrees(tags, offsets, alpha, {n: DecayingCounts(c) for n, c in zip(BLOCKS, start)})
    batch = structure.minibatch(np.array([1, 1, 3]))
    part, _ = brute_counts([TINY[1], TINY[1], TINY[3]], tables)
    for (name, rows, values, scale), expected in zip(batch.updates, part, strict=True):
        assert scale == pytest.approx(len(TINY) / 3)
        np.testing.assert_allclose(values, expected, atol=1e-12)
    assert batch.n_tokens == 2 * len(TINY[1]) + len(TINY[3])


@pytest.mark.parametrize("algorithm,alpha,init", [
    ("em", 1.0, "harmonic"), ("em", 3.0, "random"), ("vb", 0.5, "harmonic"), ("vb", 0.05, "random"),
])
def test_em_likelihood_and_vb_elbo_never_decrease(algorithm, alpha, init):
    rng = np.random.default_rng(2)
    sentences = random_sentences(rng, 40, 4, 7)
    model = DMV(alpha=alpha, algorithm=algorithm, init=init, n_iter=25, random_state=3).fit(sentences)
    objective = np.array([record.objective for record in model.history_])
    assert np.all(np.diff(objective) >= -1e-9 * np.abs(objective[1:]))
    assert objective[-1] > objective[0] + 1.0


@pytest.mark.slow
def test_every_learner_raises_the_training_likelihood():
    rng = np.random.default_rng(6)
    sentences = random_sentences(rng, 60, 4, 6)
    for algorithm in ("em", "vb", "cvi", "scvi"):
        start = DMV(alpha=0.1, algorithm=algorithm, n_iter=1, batch_size=8).fit(sentences).score(sentences)
        model = DMV(alpha=0.1, algorithm=algorithm, n_iter=20, batch_size=8).fit(sentences)
        assert np.all(np.isfinite([record.objective for record in model.history_]))
        assert model.score(sentences) > start + 1.0, algorithm


def test_seeds_change_only_what_they_should():
    rng = np.random.default_rng(4)
    sentences = random_sentences(rng, 30, 4, 6)
    for algorithm in ("em", "vb"):  # the harmonic start makes the batch learners deterministic
        first = DMV(0.5, algorithm=algorithm, n_iter=3, random_state=0).fit(sentences).counts_
        other = DMV(0.5, algorithm=algorithm, n_iter=3, random_state=1).fit(sentences).counts_
        assert_counts_close(first, other, 0.0)
    for algorithm in ("cvi", "scvi"):
        first = DMV(0.5, algorithm=algorithm, n_iter=3, random_state=0, batch_size=7).fit(sentences).counts_
        again = DMV(0.5, algorithm=algorithm, n_iter=3, random_state=0, batch_size=7).fit(sentences).counts_
        other = DMV(0.5, algorithm=algorithm, n_iter=3, random_state=1, batch_size=7).fit(sentences).counts_
        assert_counts_close(first, again, 0.0)
        assert not np.allclose(first.attach, other.attach)
    best = DMV(0.5, algorithm="cvi", n_iter=3, random_state=0, n_init=3).fit(sentences)
    scores = [DMV(0.5, algorithm="cvi", n_iter=3, random_state=s).fit(sentences).score(sentences) for s in range(3)]
    assert best.score(sentences) == pytest.approx(max(scores))


def test_inputs_tag_sets_and_errors(tmp_path):
    model = DMV(0.5, algorithm="em", n_iter=2).fit([["DET", "NOUN", "VERB"], ["NOUN", "VERB"]])
    assert model.tagset_.symbols == ["NOUN", "VERB", "DET"]
    (heads,) = model.parse([["DET", "NOUN"]])
    assert sorted(heads.tolist()).count(0) == 1
    with pytest.raises(ValueError, match="ADJ"):
        model.parse([["ADJ", "NOUN"]])
    with pytest.raises(ValueError, match="unknown algorithm"):
        DMV(algorithm="cvi2").fit([[0, 1]])
    with pytest.raises(ValueError, match="unknown init"):
        DMV(init="uniform").fit([[0, 1]])
    with pytest.raises(ValueError, match="not fitted"):
        DMV().parse([[0]])
    with pytest.raises(ValueError, match="positive"):
        DMV(alpha=0.0)
    with pytest.raises(TypeError, match="tag sequences"):
        DMV().fit("0 1 2")
    # type 2 never occurs, so EM's MLE gives it probability 0: the sentence still gets a tree
    em = DMV(0.5, algorithm="em", n_iter=5).fit([[0, 1], [0, 3, 1]])
    assert em.score([[2, 2]]) == -np.inf and np.isfinite(em.score([[0, 1]]))
    (heads, other) = em.parse([[2, 2], [0, 1]])
    assert sorted(heads.tolist()) in ([0, 1], [0, 2])
    assert other.tolist() == em.parse([[0, 1]])[0].tolist()
    (sampled,) = em.parse([[2, 2]], method="sample", seed=1)
    assert sorted(sampled.tolist()) in ([0, 1], [0, 2])


def test_save_and_load_round_trip(tmp_path):
    rng = np.random.default_rng(5)
    sentences = random_sentences(rng, 25, 4, 6)
    for algorithm in ("em", "cvi"):
        model = DMV(alpha=0.3, algorithm=algorithm, n_iter=4).fit(sentences)
        path = tmp_path / f"{algorithm}.npz"
        model.save(path)
        loaded = DMV.load(path)
        assert loaded.algorithm_ == algorithm and loaded.alpha == 0.3 and loaded.n_types_ == model.n_types_
        assert_counts_close(loaded.counts_, model.counts_, 0.0)
        assert loaded.history_ == model.history_
        assert [h.tolist() for h in loaded.parse(sentences)] == [h.tolist() for h in model.parse(sentences)]
        assert loaded.score(sentences) == model.score(sentences)
    with np.load(path, allow_pickle=False) as archive:
        assert set(archive.files) == {"meta", *BLOCKS}
    (tmp_path / "bad.npz").write_bytes(b"not a model")
    with pytest.raises(ValueError, match="not a cvbayes model file"):
        DMV.load(tmp_path / "bad.npz")


def test_gather_sentences():
    tags, offsets = flat(TINY)
    sub_tags, sub_offsets = gather_sentences(tags, offsets, np.array([2, 0, 2]))
    assert sub_tags.tolist() == TINY[2] + TINY[0] + TINY[2]
    assert sub_offsets.tolist() == [0, 4, 7, 11]


def row(word_id, form, upos, head, deprel="dep", misc="_"):
    return "\t".join([str(word_id), form, form.lower(), upos, upos[:2], "_", str(head), deprel, "_", misc])


# comments, a multiword range, an empty node, punctuation, a sentence of punctuation only, a comment-only block
TREEBANK = "\n".join([
    "# newdoc id = t",
    "",
    "# sent_id = 1",
    "# text = The dog barks, loudly.",
    row(1, "The", "DET", 2), row(2, "dog", "NOUN", 3, "nsubj"), row(3, "barks", "VERB", 0, "root", "SpaceAfter=No"),
    row(4, ",", "PUNCT", 5), row(5, "loudly", "ADV", 3), row(6, ".", "PUNCT", 3),
    "",
    "# sent_id = 2",
    "1-2\tdogs'\t_\t_\t_\t_\t_\t_\t_\t_",
    row(1, "dogs", "NOUN", 3), row(2, "'", "PART", 1),
    "2.1\tx\tx\tNOUN\tNN\t_\t_\t_\t_\t_",
    row(3, "bark", "VERB", 0, "root"),
    "",
    "# sent_id = 3",
    row(1, "!", "PUNCT", 0, "root"), row(2, "?", "PUNCT", 1),
    "",
    "# sent_id = 4",
    row(1, "A", "DET", 2), row(2, "cat", "NOUN", 3), row(3, "sleeps", "VERB", 0, "root"), row(4, ".", "PUNCT", 3),
    "",
    "",
])


@pytest.fixture(params=["\n", "\r\n"])
def treebank(tmp_path, request):
    path = tmp_path / "tiny.conllu"
    path.write_bytes(TREEBANK.replace("\n", request.param).encode("utf-8"))
    train = read_dependencies(path, tagset=upos_tagset(True), remove_punctuation=True)
    model = DMV(alpha=0.5, algorithm="cvi", n_iter=5).fit(train)
    model_path = tmp_path / "dmv.npz"
    model.save(model_path)
    return path, model_path, model


def test_parse_command_keeps_every_other_column(treebank, tmp_path, capsys):
    path, model_path, model = treebank
    assert model.punctuation_removed_ and model.tag_column_ == "upos"
    out = tmp_path / "parsed.conllu"
    main(["parse", str(model_path), str(path), "-o", str(out), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert report["sentences"] == 4 and report["words"] == 15 and report["parsed_words"] == 10
    before, after = read_conllu_document(path), read_conllu_document(out)
    assert len(before.sentences) == len(after.sentences)
    for old, new in zip(before, after, strict=True):
        assert len(old.lines) == len(new.lines) and old.word_rows == new.word_rows
        for i, (a, b) in enumerate(zip(old.lines, new.lines, strict=True)):
            if i in old.word_rows:
                a, b = a.split("\t"), b.split("\t")
                assert a[:6] + a[8:] == b[:6] + b[8:]
            else:
                assert a == b  # comments, ranges, empty nodes
    # byte for byte: the original HEAD and DEPREL put back give the original file
    restored = parse_conllu_text(out.read_bytes().decode("utf-8"))
    for column in ("head", "deprel"):
        restored.replace_column(column, [v for sentence in before.column(column) for v in sentence])
    assert restored.to_text().encode("utf-8") == path.read_bytes()
    # one tree a sentence; punctuation hangs from the root word; DEPREL root or dep
    kept_heads = model.parse_heads(read_dependencies(path, tagset=model.tagset_, remove_punctuation=True))[0]
    for sentence in (s for s in after if s.n_words):
        heads = sentence.heads()
        assert np.sum(heads == 0) == 1
        assert sentence.column("deprel") == ["root" if h == 0 else "dep" for h in heads]
    first = after[1].heads()
    root = int(np.flatnonzero(first == 0)[0]) + 1
    assert first[3] == root and first[5] == root  # "," and "."
    assert after[3].heads().tolist() == [0, 1]  # punctuation only
    assert first[[0, 1, 2, 4]].tolist() == [0 if h == 0 else [1, 2, 3, 5][h - 1] for h in kept_heads[:4]]


def test_parse_command_to_misc_standard_output_and_no_gold(treebank, tmp_path, capsys):
    path, model_path, model = treebank
    main(["parse", str(model_path), str(path), "--column", "misc", "--quiet"])
    captured = capsys.readouterr()
    assert captured.err == ""
    after = parse_conllu_text(captured.out)
    before = read_conllu_document(path)
    for old, new in zip(before, after, strict=True):
        assert old.column("head") == new.column("head") and old.column("deprel") == new.column("deprel")
        assert all(m.split("|")[-1].startswith("PredHead=") for m in new.column("misc"))
    # a file without heads parses too (HEAD "_"), and the summary goes to standard error
    blank = "\n".join("\t".join(line.split("\t")[:6] + ["_", "_"] + line.split("\t")[8:]) if "\t" in line else line
                      for line in TREEBANK.split("\n"))
    unparsed = tmp_path / "blank.conllu"
    unparsed.write_text(blank, encoding="utf-8")
    main(["parse", str(model_path), str(unparsed), "--json"])
    captured = capsys.readouterr()
    report = json.loads(captured.err)
    assert "gold" not in report and report["words"] == 15
    assert parse_conllu_text(captured.out)[1].column("deprel").count("root") == 1


def test_induce_command(treebank, tmp_path, capsys):
    path, _, _ = treebank
    out = tmp_path / "induced.npz"
    main(["induce", str(path), "-o", str(out), "--algorithm", "em", "--iterations", "3", "--alpha", "0.5",
          "--evaluate", str(path), "--json", "--quiet"])
    report = json.loads(capsys.readouterr().out)
    assert report["sentences"] == 3 and report["words"] == 10 and 0.0 <= report["train"]["directed"] <= 1.0
    assert report["evaluate"] == report["train"] and report["file"] == str(path)
    model = DMV.load(out)
    assert model.algorithm_ == "em" and len(model.history_) == 3
    assert model.tagset_ == upos_tagset(True)
