"""The unit of work: what every method's steps compute, counted, and one table of what each count
costs, applied to every method alike.

A method's step reports its raw counts in ``info`` (:func:`pmd.interface.work`), the runner sums
them into its curves, and :func:`units` charges them by :data:`UNITS`, so that the cap of an
equal-work run (``pmd.run(max_work=)``), the cost tables, the leaderboards and the profiles all read
one number, while the raw counts stay in the run files beside it:

* ``evals``: one datum's log-likelihood at one parameter value; the unit, 1;
* ``grad_evals``: its gradient in the parameters (a value and its gradient count one of each);
* ``hvp_evals``: one datum's Hessian-vector product (a Hessian column's share of one datum: the
  Laplace start's and NPV's Hessians, PMD's preconditioner), not also counted as a value;
* ``pg_draws``: one Pólya-Gamma ``PG(1, c)`` draw at the PG Gibbs sampler's series truncation;
* ``gram_rows``: one row's ``x xᵀ ω`` in a Gibbs sweep's sufficient statistic ``XᵀΩX``;
* ``kernel_pairs``: an RBF kernel value and its gradient for one pair of particles (SVGD);
* ``kde_pairs``: one Gaussian kernel's log-density of one point under one centre (PMD's KDE
  redraws: every new draw under every centre of every cluster's kernel).

What the counts leave out (cheap beside them at the sizes the harness runs: ``O(d³)`` Cholesky
factors, a KDE's bandwidth and k-means fit, resampling, the optimisers' own arithmetic) is in each
method's seconds, which every table gives beside its work.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

WORK = ("evals", "grad_evals", "hvp_evals", "pg_draws", "gram_rows", "kernel_pairs", "kde_pairs")
"""The raw counts a step may report (:func:`pmd.interface.work`); one it does not report is 0."""

UNITS = {"evals": 1.0, "grad_evals": 0.1, "hvp_evals": 1.1, "pg_draws": 77.0, "gram_rows": 11.0,
         "kernel_pairs": 4.9, "kde_pairs": 0.83}
"""Each count's cost in units, one per-datum log-likelihood value: the median, rounded, of fifteen
rounds of ``benchmarks/bench_work_units.py --rounds 15 --repeats 100`` (Bayesian logistic
regression on the logistic experiment's 51 features, ``B = 100`` rows, ``m = 100`` particles,
float32, one XLA thread) on the project's 2-core CPU: a value and its gradient 1.1 (the gradient on
top of its value 0.1), a Hessian-vector product 1.1, a Pólya-Gamma draw 77 (truncation 64), a row
of ``XᵀΩX`` 11, an RBF kernel pair 4.9, a KDE pair 0.83 (``archive/benchmarks/work_units.md``;
``tests/test_work_units.py`` checks that each lies within the archived rounds). The ratios move
with the model's dimension (a row of ``XᵀΩX`` is ``d²`` products against a value's ``d``; a PG draw
costs the same at every ``d``) and between sessions on the same machine type (a measurement nine
days apart put a Pólya-Gamma draw at 105 and a kernel pair at 6.1: docs/findings.md): one table,
measured once, is what every method is charged by."""


def units(counts: Mapping[str, Any]) -> Any:
    """Work in units: ``Σ_k UNITS[k] · counts[k]`` over the counts present (arrays add
    elementwise; a count absent from ``counts`` is 0). Raises ``KeyError`` for a count
    :data:`UNITS` does not know, naming it."""
    unknown = sorted(set(counts) - set(UNITS))
    if unknown:
        raise KeyError(f"work counts {unknown} have no unit in pmd.work.UNITS (known: {', '.join(WORK)})")
    total = 0.0
    for name, value in counts.items():
        total = total + UNITS[name] * np.asarray(value, np.float64)
    return total


def as_counts(start_work: Any) -> dict[str, float]:
    """A method's ``start_work`` as counts: a mapping of :data:`WORK` names, or the pair
    ``(evals, grad_evals)`` a method written before the other counts may give."""
    if isinstance(start_work, Mapping):
        counts = {name: float(value) for name, value in start_work.items()}
        units(counts)  # an unknown name fails here, before any work
        return counts
    evals, grad_evals = map(float, start_work)
    return {"evals": evals, "grad_evals": grad_evals}
