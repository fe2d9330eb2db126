"""A user's model file: a Python file defining a PyMC model, as the ``custom`` experiment reads it.

The file is a plain module (``examples/custom_model.py`` is a complete one) that defines:

* ``model()``: returns the ``pymc.Model`` with its observed data (required);
* ``datum_axis``: the axis of one datum, as :func:`pmd.from_pymc` takes it (optional; default 0,
  the first axis of every observed variable; ``None`` for a likelihood that does not factor, such
  as a time series, taken whole as one datum);
* ``reference_draws()``: reference posterior draws ``{column: (chains, draws)}`` on the
  constrained scale, the columns those of the converted model (``model.columns`` of
  :func:`pmd.from_pymc`: ``sigma``, ``beta[0]``, ...; optional: without it the experiment makes
  them by NUTS, :mod:`workflow.experiments.custom`).

:func:`load` imports the file, converts the model and returns a :class:`ModelFile` whose
``problem`` has the shape of a posteriordb posterior (:class:`pmd.models.posteriordb.PosteriordbProblem`:
the model, its data, the reference columns and the maps between ``θ`` and them), so that the
posteriordb experiment's budget rule, scorer and report apply unchanged. Every error names the file.
"""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from pmd.models.posteriordb import PosteriordbProblem


class ModelFileError(ValueError):
    """A model file that cannot be used; the message names the file and what is wrong."""


@dataclass(frozen=True)
class ModelFile:
    """A loaded model file: its ``path``, the experiment's ``name`` for it, the PyMC model, the
    ``datum_axis`` used, the converted ``problem`` and the file's ``reference_draws`` (or None)."""

    path: Path
    name: str
    pm_model: Any
    datum_axis: Any
    problem: PosteriordbProblem
    reference_draws: Callable[[], dict[str, np.ndarray]] | None

    def reference(self) -> np.ndarray:
        """The file's reference draws as ``(chains, draws, k)`` in ``problem.columns`` order.

        Raises :class:`ModelFileError` naming the file when it defines none, or when they miss a
        column, hold another, disagree in shape, have fewer than 2 chains or are not finite.
        """
        if self.reference_draws is None:
            raise ModelFileError(f"{self.path}: defines no reference_draws()")
        return stack_columns(self.reference_draws(), self.problem.columns, f"{self.path}: reference_draws()")


def stack_columns(draws: Any, columns: tuple[str, ...], where: str) -> np.ndarray:
    """``{column: (chains, draws)}`` as ``(chains, draws, k)`` in ``columns`` order (module docstring's checks);
    ``where`` names the source in the errors."""
    if not isinstance(draws, dict):
        raise ModelFileError(f"{where} returned {type(draws).__name__}; expected a dict {{column: (chains, draws)}}")
    missing, extra = [c for c in columns if c not in draws], sorted(set(draws) - set(columns))
    if missing or extra:
        raise ModelFileError(f"{where}: columns must be the model's {list(columns)}; missing {missing}, "
                             f"not in the model {extra}")
    arrays = {c: np.asarray(draws[c], np.float64) for c in columns}
    shapes = {c: a.shape for c, a in arrays.items()}
    first = shapes[columns[0]]
    if len(first) != 2 or first[0] < 2 or any(shape != first for shape in shapes.values()):
        raise ModelFileError(f"{where}: every column must be (chains >= 2, draws) of one shape; got {shapes}")
    for column, values in arrays.items():
        if not np.all(np.isfinite(values)):
            raise ModelFileError(f"{where}: column {column!r} holds {int(np.sum(~np.isfinite(values)))} "
                                 "non-finite draws")
    return np.stack([arrays[c] for c in columns], axis=-1)


def _import(path: Path, name: str) -> Any:
    if not path.is_file():
        raise ModelFileError(f"model file {path} (custom model {name!r}) does not exist")
    spec = importlib.util.spec_from_file_location(f"pmd_bench_custom_{name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    except Exception:
        sys.modules.pop(spec.name, None)
        raise
    return module


def load(path: str | Path, name: str) -> ModelFile:
    """Import the model file at ``path`` and convert its model (module docstring); ``name`` labels
    the posterior in results (``problem.name``)."""
    import pmd
    import pymc as pm

    path = Path(path)
    module = _import(path, name)
    build = getattr(module, "model", None)
    if not callable(build):
        raise ModelFileError(f"{path}: defines no model() function returning the pymc.Model")
    pm_model = build()
    if not isinstance(pm_model, pm.Model):
        raise ModelFileError(f"{path}: model() returned {type(pm_model).__name__}, not a pymc.Model")
    datum_axis = getattr(module, "datum_axis", 0)
    reference = getattr(module, "reference_draws", None)
    if reference is not None and not callable(reference):
        raise ModelFileError(f"{path}: reference_draws must be a function returning {{column: (chains, draws)}}")
    try:
        model, data = pmd.from_pymc(pm_model, datum_axis=datum_axis, name=name)
    except ValueError as err:
        raise ModelFileError(f"{path}: {err}") from err
    problem = PosteriordbProblem(name=name, model=model, data=data, columns=model.columns,
                                 iid=datum_axis is not None, to_constrained=model.to_columns,
                                 to_unconstrained=model.from_columns)
    return ModelFile(path=path, name=name, pm_model=pm_model, datum_axis=datum_axis, problem=problem,
                     reference_draws=reference)
