"""The fig4.1-dmv experiment's helpers: cutting positional tags, scoring in both conventions, the claim."""
import numpy as np

from cvbayes.data.dependencies import read_dependencies
from cvbayes.experiments.dmv import Split, _cut_tags, baselines, claims


def test_cut_tags_merge_positional_tags(tmp_path):
    path = tmp_path / "cs.conllu"
    path.write_text("\n".join([
        "1\ta\ta\tNOUN\tNNFS1-----A----\t_\t2\tnsubj\t_\t_",
        "2\tb\tb\tVERB\tVB-S---3P-AA---\t_\t0\troot\t_\t_",
        "3\tc\tc\tNOUN\tNNFS4-----A----\t_\t2\tobj\t_\t_",
        "4\td\td\tADJ\tAAFS4----1A----\t_\t3\tamod\t_\t_", "", ""]))
    corpus = _cut_tags(read_dependencies(path, tag="xpos"), 2)
    assert sorted(corpus.tagset.symbols) == ["AA", "NN", "VB"]
    assert corpus.tagset.decode(corpus.tags) == ["NN", "VB", "NN", "AA"]


def test_split_scores_each_convention_and_the_claim():
    corpus = type("C", (), {"offsets": np.array([0, 3])})()
    split = Split(corpus, {"content": np.array([2, 0, 2]), "function": np.array([0, 1, 2])})
    scores = split.scores(np.array([0, 1, 2]))
    assert scores["function"]["directed"] == 1.0 and np.isclose(scores["content"]["directed"], 1 / 3)
    assert baselines(split, 2)["attach-left"]["function"]["directed"] == 1.0  # gold [0, 1, 2] is attach-left

    def run(algorithm, alpha, accuracy):
        return {"algorithm": algorithm, "alpha": alpha, "test10": {"function": {"directed": accuracy}}}
    setting = {"baselines": {"test10": {"attach-right": {"function": {"directed": 0.40}}}},
               "runs": [run("em", 1.0, 0.45), run("vb", 0.1, 0.42), run("vb", 1.0, 0.47),
                        run("cvi", 0.1, 0.44), run("cvi", 0.1, 0.46), run("cvi", 1.0, 0.39)]}
    c = claims(setting)
    assert c["lowest"] == ("cvi", 1.0) and not c["all_above"]
    assert np.allclose([c["cvi_minus_vb"][0.1], c["cvi_minus_vb"][1.0]], [0.03, -0.08])
