"""The leaderboard (reports/leaderboard.py): cells reached, work and seconds to reach over the
reached cells, the final score, the order, and the digest's wording, on hand-made run files."""

import json

import numpy as np

from pmd_bench.reports import leaderboard
from pmd_bench.workflow.results import save_npz

VISITED = np.array([0, 10, 20, 30])


def _run(folder, method, seed, score, work=(0.0, 10.0, 20.0, 30.0), wall=(0.0, 1.0, 2.0, 3.0), posterior=None,
         compile_time=(0.0, 0.0, 0.0, 0.0)):
    arrays = {"visited": VISITED, "curve/mean_error_max": np.asarray(score, float) * 0.5,
              "curve/log_std_ratio_max": np.zeros(4), "curve/evals": np.asarray(work, float),
              "curve/grad_evals": np.zeros(4), "curve/wall_time": np.asarray(wall, float),
              "curve/compile_time": np.asarray(compile_time, float)}
    path = folder / (posterior or "") / method / f"seed{seed}.npz"
    save_npz(path, arrays, {"method": method, "seed": seed, "commit": "0123456789abcdef",
                            **({"posterior": posterior} if posterior else {})})
    return path


def test_the_board_counts_cells_and_reads_costs_over_the_reached_ones(tmp_path):
    files = [_run(tmp_path, "a", 0, [2, 0.5, 0.5, 0.5]), _run(tmp_path, "a", 1, [2, 2, 2, 0.9]),  # both reach
             _run(tmp_path, "b", 0, [2, 2, 0.8, 0.8]), _run(tmp_path, "b", 1, [2, 2, 2, 3.0]),  # one of two
             _run(tmp_path, "c", 0, [1, 0.5, 0.4, 0.3], work=(0.0, 1.0, 2.0, 3.0)),  # reaches at once, cheaply
             _run(tmp_path, "c", 1, [1, 0.5, 0.4, 0.3], work=(0.0, 1.0, 2.0, 3.0))]
    result = leaderboard.board("logistic", files)
    rows = {r["method"]: r for r in result["rows"]}
    assert [r["method"] for r in result["rows"]] == ["c", "a", "b"]  # share reached, then median work
    assert (rows["a"]["reached"], rows["a"]["cells"], rows["a"]["work"]) == (2, 2, 20.0)  # median of 10 and 30
    assert rows["a"]["work_iqr"] == [15.0, 25.0] and rows["a"]["seconds"] == 2.0
    assert (rows["b"]["reached"], rows["b"]["work"]) == (1, 20.0)
    assert rows["b"]["final_score"] == np.median([0.8, 3.0])
    assert rows["c"]["work"] == 0.0  # met at its first evaluation: nothing spent
    text = leaderboard.markdown(result)
    assert "| 1 | c | 2/2 |" in text and "| 3 | b | 1/2 | 20 (20-20) |" in text
    assert "Run files made at commit `0123456789`." in text  # each board says which code made it


def test_several_targets_are_cells_and_the_digest_says_when_none_reached(tmp_path):
    files = [_run(tmp_path, m, 0, s, posterior=p) for p in ("p1", "p2") for m, s in
             (("pmd", [2, 2, 2, 1.5]), ("svi", [2, 2, 2, 1.2]))]
    leaderboard.render("posteriordb", files, tmp_path / "leaderboard_posteriordb.md")
    result = json.loads((tmp_path / "leaderboard_posteriordb.json").read_text())
    assert result["targets"] == 2 and [r["cells"] for r in result["rows"]] == [2, 2]
    text = leaderboard.digest([tmp_path / "leaderboard_posteriordb.json"], tmp_path / "digest.md", "From here")
    assert "none reached (closest at the end: svi, 1.20× the threshold)" in text and "| 2 of 2 | 0/2 |" in text


def test_a_method_charged_for_its_work_is_named(tmp_path):
    files = [_run(tmp_path, "a", 0, [2, 0.5, 0.5, 0.5]), _run(tmp_path, "b", 0, [2, 0.5, 0.5, 0.5])]
    from pmd_bench.workflow.results import load_npz

    arrays, meta = load_npz(files[1])
    save_npz(files[1], {**arrays, "curve/work_charged": np.ones(4)}, meta)
    text = leaderboard.markdown(leaderboard.board("logistic", files))
    assert "Work charged, not counted: `b` report no work" in text and "`a`" not in text


def test_seconds_leave_compilation_out(tmp_path):
    """One clock: a seed that compiled its programs (the first of a process) and one that read them
    back are charged the same seconds for the same stepping; the board once read the clock with
    compilation in (here 5 s against 2 s)."""
    files = [_run(tmp_path, "a", 0, [2, 2, 0.5, 0.5], wall=(3.0, 4.0, 5.0, 6.0), compile_time=(3.0, 3.0, 3.0, 3.0)),
             _run(tmp_path, "a", 1, [2, 2, 0.5, 0.5])]
    row = leaderboard.board("logistic", files)["rows"][0]
    assert row["seconds"] == 2.0 and row["seconds_iqr"] == [2.0, 2.0]


def test_the_digest_reads_the_profiles_verdicts_and_the_commits(tmp_path):
    """The first screen's digest says, beside the leaderboard's order, where PMD's bands separate
    from the others' (the profiles' verdicts), and which commit made the run files."""
    files = [_run(tmp_path, m, s, score) for s in (0, 1) for m, score in
             (("pmd", [2, 0.5, 0.5, 0.5]), ("svi", [2, 2, 2, 2]), ("sgld", [2, 2, 0.5, 0.5]))]
    leaderboard.render("logistic", files, tmp_path / "leaderboard_logistic.md")
    board = tmp_path / "leaderboard_logistic.json"
    assert "| — | `0123456789` |" in leaderboard.digest([board], tmp_path / "d.md", "From here")  # no profiles yet
    (tmp_path / "profiles_logistic.json").write_text(json.dumps(
        {"verdicts": {"pairs": {"svi": "ahead", "sgld": "not separated"}}}))
    text = leaderboard.digest([board], tmp_path / "d.md", "From here")
    assert "| ahead of 1, behind 0, not separated from 1 | `0123456789` |" in text
