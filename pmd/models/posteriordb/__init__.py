"""Twelve posteriors of posteriordb (Magnusson et al.; stan-dev/posteriordb) as :class:`pmd.Model` s.

Each is its Stan program (``posterior_database/models/stan/<model>.stan`` at the commit pinned in
:mod:`datasets.posteriordb`) written in JAX on Stan's UNCONSTRAINED scale: ``log`` for
``<lower=0>``, logit for bounds, stick-breaking for simplexes, log-increments for
``positive_ordered`` (:mod:`.parameters`), each with its log-Jacobian in ``log_prior``, so that
``log_prior + Σ log_likelihood`` is the log density of Stan's unconstrained parameter. Flat (improper)
priors get the proper substitute described by :data:`.problem.FLAT_SCALE`.

:data:`POSTERIORS` maps each posterior's posteriordb name to a builder ``(settings) -> problem``
(:class:`PosteriordbProblem`); data come through :func:`datasets.posteriordb.load_data`, so the
offline mirror (``PMD_BENCH_DATA_MIRROR``) or the cache serves verified files.
Families: :mod:`.regression`, :mod:`.timeseries`, :mod:`.hierarchical`, :mod:`.hmm`, :mod:`.gp`.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from pmd_bench.datasets import posteriordb as pdb
from pmd_bench.datasets.errors import DatasetError, FormatError
from pmd_bench.datasets.settings import Settings, resolve_settings

from . import gp, hierarchical, hmm, regression, timeseries
from .problem import FLAT_SCALE, PosteriordbProblem

POSTERIORS: dict[str, Callable[[Settings], PosteriordbProblem]] = {
    "kidiq-kidscore_momiq": regression.kidscore_momiq,
    "earnings-logearn_height": regression.logearn_height,
    "mesquite-logmesquite": regression.logmesquite,
    "nes2000-nes": regression.nes,
    "eight_schools-eight_schools_noncentered": hierarchical.eight_schools_noncentered,
    "arK-arK": timeseries.ar_k,
    "garch-garch11": timeseries.garch11,
    "arma-arma11": timeseries.arma11,
    "gp_pois_regr-gp_regr": gp.gp_regr,
    "kilpisjarvi_mod-kilpisjarvi": regression.kilpisjarvi,
    "diamonds-diamonds": regression.diamonds,
    "hmm_example-hmm_example": hmm.hmm_example,
}


def load_problem(name: str, settings: Settings | None = None) -> PosteriordbProblem:
    """The posterior ``name`` (a key of :data:`POSTERIORS`), its data read with ``settings``
    (default: :func:`datasets.settings.resolve_settings`)."""
    if name not in POSTERIORS:
        raise DatasetError(f"unknown posteriordb posterior {name!r}; known: {', '.join(POSTERIORS)}")
    return POSTERIORS[name](settings or resolve_settings())


def reference_draws(problem: PosteriordbProblem, settings: Settings | None = None) -> np.ndarray:
    """posteriordb's reference draws of ``problem`` as ``(chains, draws, k)``, columns in
    ``problem.columns`` order (constrained scale; :meth:`PosteriordbProblem.unconstrain` maps them to θ)."""
    draws = pdb.load_reference_draws(problem.name, settings or resolve_settings())
    missing = [column for column in problem.columns if column not in draws]
    if missing or len(draws) != len(problem.columns):
        raise FormatError(
            f"{problem.name}: the reference draws have columns {sorted(draws)}, the model {list(problem.columns)}"
        )
    return np.stack([draws[column] for column in problem.columns], axis=-1)


__all__ = ["FLAT_SCALE", "POSTERIORS", "PosteriordbProblem", "load_problem", "reference_draws"]
