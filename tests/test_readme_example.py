"""README.md's example runs as written and prints what it promises: PMD and SVI on a conjugate
linear regression within tolerance of the exact posterior, SGLD with a finite answer.

The example's output is also the README's generated block ``readme-example``
(``pmd-bench docs --example`` reruns it); this test reruns the code block itself, so a README whose
example stops working, or stops agreeing with the exact answer, fails here.
"""

import re

import numpy as np
import pytest

from pmd_bench.reports import docs

NUMBER = r"-?\d+\.\d*(?:e[-+]?\d+)?"


def parse(output: str) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``name -> (posterior mean, posterior sd)`` from the example's printed table."""
    rows = {}
    for line in output.strip().splitlines()[1:]:
        name = line.split()[0]
        values = np.array([float(v) for v in re.findall(NUMBER, line[len(name):])])
        rows[name] = (values[: len(values) // 2], values[len(values) // 2:])
    return rows


@pytest.mark.slow
def test_the_readme_example_reaches_the_exact_posterior(tmp_path):
    rows = parse(docs.run_readme_example(tmp_path / "readme_example.txt"))
    assert set(rows) == {"PMD", "SVI", "SGLD", "exact"}
    exact_mean, exact_sd = rows["exact"]
    assert exact_mean.shape == (3,) and np.all(exact_sd > 0)
    # PMD: 300 weighted particles after two passes, their ESS at least ~100, so the Monte Carlo error of
    # a mean is about 0.1 posterior sd and of an sd about 7 %: 0.5 sd and a ratio within [0.75, 1.33]
    # leave room for a 4-5 sigma draw and fail on any real bias. SVI's full-rank Gaussian is exact for
    # this posterior up to its stochastic optimisation's noise: the same bounds.
    for name in ("PMD", "SVI"):
        mean, sd = rows[name]
        assert np.all(np.abs(mean - exact_mean) <= 0.5 * exact_sd), (name, mean, exact_mean, exact_sd)
        assert np.all((sd / exact_sd > 0.75) & (sd / exact_sd < 1.33)), (name, sd, exact_sd)
    assert np.all(np.isfinite(np.concatenate(rows["SGLD"]))) and np.all(rows["SGLD"][1] > 0)


def test_the_parser_reads_the_printed_table():
    text = ("                      posterior mean                  posterior sd\n"
            "PMD        [ 1.0013 -0.4935  0.2612]        [0.0117 0.0117 0.0108]\n"
            "exact      [ 1.0023 -0.4919  0.2613]        [0.0111 0.0114 0.0112]\n")
    rows = parse(text)
    assert np.allclose(rows["PMD"][0], [1.0013, -0.4935, 0.2612]) and np.allclose(rows["exact"][1], [0.0111, 0.0114, 0.0112])


@pytest.mark.slow
def test_the_readme_pymc_snippet_continues_the_example(tmp_path):
    """The README's second block (a PyMC model through ``pmd.from_pymc``) runs after the example, as
    a reader pastes it, and prints the constrained posterior mean with every variable named."""
    import subprocess
    import sys

    first, second = docs.readme_python_blocks(docs.README.read_text())[:2]
    script = tmp_path / "readme_pymc.py"
    script.write_text(first + "\n" + second)
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=900,
                          env={**__import__("os").environ, "TQDM_DISABLE": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    last = done.stdout.strip().splitlines()[-1]
    assert all(name in last for name in ("'beta'", "'sigma'", "'sigma_log__'")), last


def test_the_readme_stays_short():
    """A newcomer's page: at most 250 lines, the results in docs/results.md and the
    report; every line added to it must make room."""
    lines = docs.README.read_text().count("\n")
    assert lines <= 250, f"README.md has {lines} lines: move detail into docs/ (at most 250)"
