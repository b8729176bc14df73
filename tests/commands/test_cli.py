"""The cvbayes command."""
import json

import pytest

from cvbayes.cli import main


def test_demo_prints_json_for_every_algorithm(capsys):
    main(["demo", "--sequences", "60", "--length", "8", "--restarts", "1", "--iterations", "3",
          "--json", "--seed", "2"])
    report = json.loads(capsys.readouterr().out)
    assert [row["algorithm"] for row in report["results"]] == ["em", "vb", "cvi1", "cvi2", "cgs"]
    for row in report["results"]:
        assert row["iterations"] == 3 and 0.0 <= row["many_to_one"] <= 1.0
        assert row["heldout_loglik_per_token"] < 0.0


def test_demo_rejects_unknown_algorithm():
    with pytest.raises(SystemExit, match="unknown algorithm 'gibbs'"):
        main(["demo", "--algorithms", "em,gibbs", "--quiet", "--sequences", "20", "--restarts", "1"])


def test_help_explains_options(capsys):
    with pytest.raises(SystemExit):
        main(["demo", "--help"])
    assert "--restarts" in capsys.readouterr().out
