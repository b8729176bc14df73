"""approximation_errors (thesis eq. 5.68) against enumeration, and the fig5.2 / fig5.3 experiments end to end."""
import itertools
import json

import numpy as np
import pytest

from cvbayes.chains.occupancy import chain_marginals, no_transition
from cvbayes.cli import build_parser, main
from cvbayes.experiments.occupancy import (_sample_seed, approximation_errors, log10_error, parse_method,
                                           required_length, simulate_chain)


def _paths(n_states, n_steps):
    return itertools.product(range(n_states), repeat=n_steps)


def _path_weight(first, conditionals, path):
    weight = first[path[0]]
    for t in range(1, len(path)):
        weight *= conditionals[t - 1, path[t - 1], path[t]]
    return weight


def _enumerated_occupied(chains):
    """q(C_jk > 0) over the corpus by summing the joint of all chains' paths: no factorisation used."""
    n_states = chains[0][0].shape[0]
    occupied = np.zeros((n_states, n_states))
    per_chain = [[(path, _path_weight(first, cond, path)) for path in _paths(n_states, cond.shape[0] + 1)]
                 for first, cond in chains]
    for combination in itertools.product(*per_chain):
        weight = np.prod([w for _, w in combination])
        seen = {(path[t - 1], path[t]) for path, _ in combination for t in range(1, len(path))}
        for j, k in seen:
            occupied[j, k] += weight
    return occupied


def _chains(seed, n_states, lengths):
    rng = np.random.default_rng(seed)
    return [simulate_chain(n_states, length, rng) for length in lengths]


@pytest.mark.parametrize("n_states,lengths", [(2, [4]), (3, [3]), (2, [3, 4]), (3, [2, 3])])
def test_exact_and_errors_against_enumeration(n_states, lengths):
    chains = _chains(n_states * 10 + len(lengths), n_states, lengths)
    methods = ("mean_field", "heuristic", "sampling-50", "sampling-200")
    result = approximation_errors(iter(chains), methods, seed=3)
    truth = _enumerated_occupied(chains)
    np.testing.assert_allclose(result.exact, truth, rtol=0, atol=1e-12)
    assert result.n_sequences == len(lengths) and result.n_tokens == sum(lengths)

    # each approximation's corpus value, computed here on its own
    zero = {m: np.ones((n_states, n_states)) for m in methods}
    for i, (first, cond) in enumerate(chains):
        marginals = chain_marginals(first, cond)
        # mean field (eq. 5.57): enumerate paths under prod_t q(z_t)
        mf = np.zeros((n_states, n_states))
        for path in _paths(n_states, len(marginals)):
            w = np.prod([marginals[t, z] for t, z in enumerate(path)])
            seen = {(path[t - 1], path[t]) for t in range(1, len(path))}
            mf += w * np.array([[(j, k) not in seen for k in range(n_states)] for j in range(n_states)])
        zero["mean_field"] *= mf
        # heuristic (eq. 5.67): prod_t (1 - q(z_t-1 = j, z_t = k))
        zero["heuristic"] *= np.prod(1.0 - marginals[:-1, :, None] * cond, axis=0)
        # sampling (eq. 5.65), through the library's one-chain entry point, with the same seeds
        for m in ("sampling-50", "sampling-200"):
            s = parse_method(m)[1]
            zero[m] *= no_transition(first, cond, "sampling", s, _sample_seed(3, i, s))[1]
    for m in methods:
        expected = np.mean(np.abs(truth - (1.0 - zero[m])))
        assert result[m] == pytest.approx(expected, rel=1e-9, abs=1e-13), m
        np.testing.assert_allclose(result.occupied[m], 1.0 - zero[m], rtol=0, atol=1e-12)
        if expected > 0:
            assert 10.0 ** result.log10_errors[m] == pytest.approx(expected, rel=1e-9, abs=1e-13)
    assert set(result.seconds) == {"exact", *methods} and all(s >= 0 for s in result.seconds.values())
    assert result["mean_field"] > 0 and result["heuristic"] > 0  # neither is exact on these chains


def test_the_log_form_keeps_errors_that_round_away_next_to_one():
    rng = np.random.default_rng(0)
    a = -rng.uniform(60, 80, size=(4, 4))
    b = a - rng.uniform(0.0, 2.0, size=(4, 4))
    direct = np.mean(np.abs(np.exp(a) - np.exp(b)))
    assert 10.0 ** log10_error(a, b) == pytest.approx(direct, rel=1e-10)
    assert np.mean(np.abs((1 - np.exp(a)) - (1 - np.exp(b)))) == 0.0  # what 1 - q loses
    assert log10_error(a, a) == -np.inf
    assert log10_error(np.full((2, 2), -np.inf), np.full((2, 2), -np.inf)) == -np.inf
    assert 10.0 ** log10_error(np.zeros((1, 1)), np.full((1, 1), -np.inf)) == pytest.approx(1.0)


def test_long_simulated_corpus_errors_are_small_and_reach_one():
    rng = np.random.default_rng(5)
    result = approximation_errors((simulate_chain(4, 100, rng) for _ in range(3)), ("heuristic", "mean_field"))
    assert result.n_tokens == 300 and result.exact.min() > 0.999
    assert 0 < result["heuristic"] < 1e-3 and 0 < result["mean_field"] < 1e-3


def test_bad_input():
    with pytest.raises(ValueError, match="unknown method"):
        approximation_errors(_chains(0, 2, [3]), ("sampling-x",))
    with pytest.raises(ValueError, match="same number of states"):
        approximation_errors(_chains(0, 2, [3]) + _chains(0, 3, [3]), ("heuristic",))
    with pytest.raises(ValueError, match="no chain"):
        approximation_errors([], ("heuristic",))


def test_required_length_is_the_first_passing_count():
    tokens, sequences, _, _ = required_length(3, "exact", np.random.default_rng(1), 10 ** 5)
    assert tokens == 100 * sequences
    # one sequence fewer does not pass, this many does (the same sequences, recomputed)
    rng = np.random.default_rng(1)
    from cvbayes.experiments.occupancy import _endless_corpus
    chains = list(itertools.islice(((f, c.copy()) for f, c in _endless_corpus(3, rng)), sequences))
    if sequences > 1:
        assert approximation_errors(chains[:-1], ("heuristic",)).exact.min() <= 0.999
    assert approximation_errors(chains, ("heuristic",)).exact.min() > 0.999
    assert required_length(3, "exact", np.random.default_rng(1), 100 * (sequences - 1))[0] is None


def test_fig5_2_cli_writes_its_outputs(tmp_path, capsys):
    main(["experiment", "fig5.2", "--k-values", "3", "--max-length", "100", "--seeds", "2",
          "--out", str(tmp_path)])
    folder = tmp_path / "fig5_2"
    assert {p.name for p in folder.iterdir()} == {"results.json", "table.md", "fig5_2.png"}
    results = json.loads((folder / "results.json").read_text())
    (panel,) = results["panels"]
    assert panel["n_states"] == 3 and panel["stopped"] is None
    assert [row["length"] for row in panel["rows"]] == [1, 10, 100]
    row = panel["rows"][-1]
    assert len(row["runs"]) == 2 and set(row["mean"]) == {"mean_field", "sampling-100", "sampling-1000",
                                                          "sampling-10000", "heuristic"}
    assert all(0 <= v < 0.1 for v in row["mean"].values())
    table = (folder / "table.md").read_text()
    assert "K = 3" in table and "Thesis" in table and "fig5_2.png" in table

    # a tiny budget stops the lengths early, and says so
    main(["experiment", "fig5.2", "--k-values", "3", "--max-length", "100000", "--seeds", "1",
          "--budget", "0.01", "--out", str(tmp_path)])
    panel = json.loads((folder / "results.json").read_text())["panels"][0]
    assert panel["stopped"] is not None and all(r["length"] < panel["stopped"]["length"] for r in panel["rows"])
    assert "Stopped before" in (folder / "table.md").read_text()


def test_fig5_3_cli_writes_its_outputs(tmp_path):
    main(["experiment", "fig5.3", "--k-values", "2", "3", "--seeds", "2", "--out", str(tmp_path)])
    folder = tmp_path / "fig5_3"
    assert {p.name for p in folder.iterdir()} == {"results.json", "table.md", "fig5_3.png"}
    rows = json.loads((folder / "results.json").read_text())["rows"]
    assert [r["n_states"] for r in rows] == [2, 3]
    for row in rows:
        assert row["method"] == "exact" and len(row["exact"]) == 2
        assert row["required_mean"] == np.mean([r["tokens"] for r in row["exact"]]) > 0

    # no budget for exact: the heuristic is used; too short a search: not reached
    main(["experiment", "fig5.3", "--k-values", "6", "--seeds", "1", "--budget", "1e-9", "--max-length", "100",
          "--out", str(tmp_path)])
    (row,) = json.loads((folder / "results.json").read_text())["rows"]
    assert row["method"] == "heuristic" and row["exact"] is None and "exact not run" in row["exact_skipped"]
    assert row["required_mean"] is None and row["heuristic"][0]["tokens"] is None
    assert "not reached" in (folder / "table.md").read_text()


def test_the_first_seed_moves_every_run(tmp_path):
    """--seed is the first of the --seeds runs: the default repeats seeds 0.., another start adds new runs."""
    main(["experiment", "fig5.3", "--k-values", "2", "--seeds", "2", "--seed", "5", "--out", str(tmp_path)])
    (row,) = json.loads((tmp_path / "fig5_3" / "results.json").read_text())["rows"]
    assert [r["run"] for r in row["exact"]] == [5, 6]


def test_every_experiment_with_seeds_takes_a_first_seed():
    experiments = build_parser()._subparsers._group_actions[0].choices["experiment"]
    for name, parser in experiments._subparsers._group_actions[0].choices.items():
        if "--seeds" in parser._option_string_actions:
            assert "no effect" not in parser._option_string_actions["--seed"].help, name
