"""Theorem 5: with m weighted particles the error of an expectation is O(m^{-1/2}).

Coarse grid m ∈ {100, 400, 1600} with 60 seeds each (the script `pmd-bench rate` runs
{100, 300, 1000, 3000}). Each RMS error is estimated from 60 squared errors: relative standard
error about 1/sqrt(2·60) ≈ 0.09, so over a log-range of ln 16 ≈ 2.8 the fitted slope has a standard
error of about sqrt(2)·0.09/2.8 ≈ 0.05. The test allows ±0.15 (3 standard errors) around -1/2.
"""

import pytest
from pmd_bench.workflow.experiments.rate import measure


@pytest.mark.slow
def test_expectation_error_falls_as_inverse_sqrt_m():
    result = measure([100, 400, 1600], seeds=60)
    assert abs(result["slope"] + 0.5) < 0.15, result
