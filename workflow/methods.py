"""The registry of inference methods the workflow can run, by config name, and how a config entry
builds one.

A config entry's ``method`` names its class in one of three ways (:func:`resolve`):

* a registry name, a key of :data:`BUILTIN` (one line per built-in method, ``"module:Class"``,
  imported only when first used, so a command that builds no method imports none of them) or the
  name of an installed package's entry point in the group :data:`ENTRY_POINT_GROUP`
  (``[project.entry-points."pmd_bench.methods"] mine = "my_package.module:MyMethod"``);
* ``path/to/file.py:ClassName``: a class in a Python file, the path relative to the config file
  that names it or absolute (:func:`workflow.config.absolute_method_files` makes it absolute when
  the config is read);
* ``package.module:ClassName``: a class of an importable module.

Whichever way, the class needs only the documented interface (``Method(model, data_size=N,
num_particles=m, **hyperparameters)``, ``init``, ``step``, ``posterior``, ``method_family``,
``reference``; ``pmd-bench check-method`` checks it) and may declare in ``handles`` the kinds of
target it runs on (:data:`TARGETS`; default ``("model",)``: any :class:`pmd.Model` with a per-datum
log-likelihood, as posteriordb, the mixture, logistic regression and custom models are).
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
import zlib
from collections.abc import Iterator, Mapping
from functools import lru_cache
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from pmd.interface import ConfigError

from .config import EXPERIMENT_TARGETS, entries, is_file_spec

ENTRY_POINT_GROUP = "pmd_bench.methods"

# One line per built-in method: its config name and "module:Class".
BUILTIN: dict[str, str] = {
    "pmd": "pmd.algorithm:PMD",
    # the paper's generic competitors (section 6, H.1) and the related methods (baselines/__init__.py)
    "sgld": "pmd_bench.baselines.sgmcmc.sgld:SGLD",
    "sgld_parallel": "pmd_bench.baselines.sgmcmc.sgld:ParallelSGLD",
    "smc": "pmd_bench.baselines.smc.one_pass:OnePassSMC",
    "svi": "pmd_bench.baselines.vi.svi:SVI",
    "gibbs": "pmd_bench.baselines.gibbs.mixture:MixtureGibbs",
    "npv": "pmd_bench.baselines.vi.npv:StochasticNPV",
    "npv_full": "pmd_bench.baselines.vi.npv:NPV",
    "blackjax_tempered_smc": "pmd_bench.baselines.peers.blackjax_smc:TemperedSMC",
    "blackjax_data_smc": "pmd_bench.baselines.peers.blackjax_smc:DataTemperedSMC",
    "numpyro_svi": "pmd_bench.baselines.peers.numpyro_svi:NumPyroSVI",
    "npl": "pmd_bench.baselines.bootstrap.npl:PosteriorBootstrap",
    "svgd": "pmd_bench.baselines.vi.svgd:SVGD",
    "blackjax_svgd": "pmd_bench.baselines.peers.blackjax_svgd:BlackJAXSVGD",
    # the model-specific logistic-regression competitors (section 6)
    "jj_svi": "pmd_bench.baselines.vi.jj_svi:JaakkolaJordanSVI",
    "pg_gibbs": "pmd_bench.baselines.gibbs.polya_gamma:PolyaGammaGibbs",
    # the sparse-GP methods (section 6, H.3): structured PMD (F.1), its competitors and GPJax's SVGP,
    # with Z and the hyperparameters fixed (as section 6) or learned (as its users run it)
    "pmd_gp": "pmd.structured.sparse_gp:StructuredPMDGP",
    "svi_gp": "pmd_bench.baselines.gp.svi_gp:SVIGP",
    "smc_gp": "pmd_bench.baselines.gp.smc_gp:OnePassSMCGP",
    "sod": "pmd_bench.baselines.gp.sod:SubsetOfData",
    "gpjax_svgp": "pmd_bench.baselines.peers.gpjax_sgp:GPJaxSVGP",
    "gpjax_svgp_learned": "pmd_bench.baselines.peers.gpjax_sgp:GPJaxSVGPLearned",
    # the LDA methods (section 6, H.4): structured PMD (F.2) and its competitors (the peer libraries,
    # which are not JAX methods, run through workflow.experiments.lda)
    "pmd_lda": "pmd.structured.lda:StructuredPMDLDA",
    "lda_svi": "pmd_bench.baselines.lda.online_vb:OnlineVB",
    "lda_sgrld": "pmd_bench.baselines.lda.sgrld:SGRLD",
    "lda_smc": "pmd_bench.baselines.lda.smc:LDASMC",
}

# The kinds of target a method can declare in ``handles``: "model" is any pmd.Model with a
# per-datum log-likelihood; the others are the experiments whose model only some methods take.
TARGETS = ("model", "mixture", "logistic", "sparse_gp", "lda")
# the LDA experiment's peer libraries (not JAX methods; baselines/peers/topic_models.py)
LDA_PEERS = ("sklearn_lda", "gensim_lda", "tomotopy_gibbs")
# the constructor arguments the workflow passes itself, never a config entry's
PASSED = ("model", "data_size")


def handles(cls: type) -> tuple[str, ...]:
    """The kinds of target (:data:`TARGETS`) ``cls`` runs on: its ``handles``, default ``("model",)``."""
    return tuple(getattr(cls, "handles", ("model",)))


def runs_in(cls: type, experiment: str) -> bool:
    """Whether ``cls`` runs in ``experiment``: the mixture and logistic experiments' models are
    pmd.Models too, so a method that handles ``"model"`` runs in every experiment but sparse GP and LDA."""
    kinds = handles(cls)
    need = EXPERIMENT_TARGETS[experiment]
    return need in kinds or ("model" in kinds and need in ("mixture", "logistic"))


def _entry_points() -> dict[str, Any]:
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


class _Registry(Mapping):
    """Registry name -> class: :data:`BUILTIN` and the installed packages' entry points, each
    imported on first lookup (an entry point never replaces a built-in name)."""

    def __getitem__(self, name: str) -> type:
        if name in BUILTIN:
            return _import_attr(BUILTIN[name], f"built-in method {name!r}")
        found = _entry_points().get(name)
        if found is None:
            raise KeyError(name)
        return _checked_class(found.load(), f"entry point {name!r} of {ENTRY_POINT_GROUP} ({found.value})")

    def __iter__(self) -> Iterator[str]:
        return iter([*BUILTIN, *sorted(set(_entry_points()) - set(BUILTIN))])

    def __len__(self) -> int:
        return len(list(iter(self)))

    def __contains__(self, name: object) -> bool:
        return name in BUILTIN or name in _entry_points()


METHODS: Mapping[str, type] = _Registry()


def _checked_class(obj: Any, where: str) -> type:
    if not inspect.isclass(obj):
        raise ConfigError(f"{where} is a {type(obj).__name__}, not a class")
    return obj


@lru_cache(maxsize=None)
def _import_attr(target: str, where: str) -> type:
    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise ConfigError(f"{where}: cannot import {module_name!r}: {err}") from err
    if not hasattr(module, attr):
        raise ConfigError(f"{where}: module {module_name!r} defines no {attr!r}")
    return _checked_class(getattr(module, attr), where)


@lru_cache(maxsize=None)
def _import_file(path: Path, attr: str) -> type:
    """The class ``attr`` of the Python file ``path``, imported once per process as a module of
    its own (named for the file, so two files may hold classes of one name)."""
    if not path.is_file():
        raise ConfigError(f"method file {path} does not exist")
    name = f"pmd_bench_method_{zlib.crc32(str(path).encode()):08x}_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as err:
        sys.modules.pop(name, None)
        raise ConfigError(f"method file {path}: importing it raised {type(err).__name__}: {err}") from err
    if not hasattr(module, attr):
        classes = sorted(n for n, v in vars(module).items() if inspect.isclass(v) and v.__module__ == name)
        raise ConfigError(f"method file {path} defines no {attr!r} (its classes: {', '.join(classes) or 'none'})")
    return _checked_class(getattr(module, attr), f"{path}:{attr}")


def resolve(name: str, base: str | Path | None = None) -> type:
    """The class a config entry's ``method`` names (module docstring); a relative file path is
    taken from ``base`` (the config file's folder; default the working directory). Raises
    :class:`ConfigError` naming the value and, for an unknown name, the known ones."""
    if not isinstance(name, str) or not name:
        raise ConfigError(f"a method must be named by a non-empty string, got {name!r}")
    if is_file_spec(name):
        file, _, attr = name.rpartition(":")
        path = Path(file)
        if not path.is_absolute():
            path = Path(base or ".") / path
        return _import_file(path.resolve(), attr)
    if ":" in name:
        return _import_attr(name, f"method {name!r}")
    if name not in METHODS:
        raise ConfigError(f"unknown method {name!r}; known: {', '.join(sorted(METHODS))}, or a class as "
                          "path/to/file.py:ClassName or package.module:ClassName")
    return METHODS[name]


RUN_KEYS = ("batch_size", "num_passes", "eval_every", "max_work_per_row")
# the keys an experiment section reads from a method entry besides its constructor's
# (workflow/experiments/*): the run settings, and per section its own
ENTRY_KEYS = {"logistic": ("train_rows",), "posteriordb": ("steps_per_pass",), "custom": ("steps_per_pass",),
              "table1.rate": ("particles", "seeds", "num_steps", "steps_per_particle"),
              "table1.cost": ("particles", "dims")}


def hyperparameters(cls: type) -> dict[str, inspect.Parameter] | None:
    """The constructor arguments a config entry may set for ``cls`` (its signature less
    :data:`PASSED` and ``data``/``num_steps``, which the workflow passes), or ``None`` when the
    constructor takes ``**kwargs`` (any key then reaches it)."""
    params = inspect.signature(cls).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return None
    return {n: p for n, p in params.items() if n not in (*PASSED, "data", "num_steps")}


def check_entry(section: str, label: str, entry: dict, base: str | Path | None = None) -> type:
    """The class of the entry ``label`` of the config section ``section`` (``mixture``,
    ``table1.rate``, ...), with every key checked against its constructor before any work: a key
    it does not take (a typo such as ``num_partciles``) raises :class:`ConfigError` naming the
    entry, the key and the keys allowed; so does a method that does not run in the section's
    experiment (:func:`runs_in`)."""
    where = f"{section}.methods.{label}"
    name = entry.get("method", label)
    try:
        cls = resolve(name, base)
    except ConfigError as err:
        raise ConfigError(f"{where}: {err}") from err
    if section in EXPERIMENT_TARGETS and not runs_in(cls, section):
        raise ConfigError(f"{where}: {name} handles {', '.join(handles(cls))}, not the {section} experiment "
                          "(a method declares what it runs on in its class attribute handles)")
    _check_keys(where, name, cls, entry, section)
    return cls


def _check_keys(where: str, name: str, cls: type, entry: dict, section: str) -> None:
    allowed = hyperparameters(cls)
    if allowed is None:
        return
    unknown = sorted(set(entry) - set(allowed) - {"method", *RUN_KEYS, *ENTRY_KEYS.get(section, ())})
    if unknown:
        raise ConfigError(f"{where}: {name} takes no {', '.join(map(repr, unknown))}; its settings: "
                          f"{', '.join(sorted(allowed)) or 'none'} (and the run's {', '.join(RUN_KEYS)})")


def split_spec(label: str, spec: dict[str, Any], defaults: dict[str, Any]) -> tuple[dict, dict]:
    """Split a config entry into the method's constructor arguments and its run settings.

    A method entry may override the experiment's ``batch_size``, ``num_passes``, ``eval_every``
    (Gibbs sweeps the whole data set per step, so it needs far fewer steps) and ``max_work_per_row``
    (the work cap per data row, :func:`with_work_cap`; absent from both: none).
    """
    spec = dict(spec)
    run = {key: spec.pop(key, defaults.get(key)) for key in RUN_KEYS}
    return spec, run


def with_work_cap(settings: dict[str, Any], num_rows: int) -> dict[str, Any]:
    """The run settings of :func:`split_spec` for :func:`pmd.run` on ``num_rows`` rows: the cap per
    row ``max_work_per_row`` as the run's ``max_work`` (``× num_rows``; None: no cap). A cap per row
    reads alike on every target of an experiment, whatever its size (posteriordb's posteriors hold
    from ten to thousands of rows)."""
    settings = dict(settings)
    per_row = settings.pop("max_work_per_row", None)
    return {**settings, "max_work": None if per_row is None else float(per_row) * num_rows}


def build(label: str, spec: dict[str, Any], model: Any, data: Any, num_steps: int) -> Any:
    """Construct the method a config entry describes.

    ``spec`` holds the constructor's keyword arguments and optionally ``method`` (the registry
    name, defaulting to ``label``, or a class as :func:`resolve` takes it), so one method can
    appear under several labels with different settings. Methods whose constructor takes ``data``
    (Gibbs, full-data NPV) receive the data set; those that take ``num_steps`` (to check a burn-in
    against the run length) receive it.
    """
    import jax

    spec = dict(spec)
    name = spec.pop("method", label)
    try:
        cls = resolve(name)
    except ConfigError as err:
        raise ConfigError(f"method {label!r}: {err}") from err
    accepted = inspect.signature(cls).parameters
    if "data" in accepted:
        spec["data"] = data
    if "num_steps" in accepted and "num_steps" not in spec:
        spec["num_steps"] = num_steps
    try:
        return cls(model, data_size=int(jax.tree_util.tree_leaves(data)[0].shape[0]), **spec)
    except TypeError as err:
        raise ConfigError(f"method {label!r} ({name}): bad arguments {sorted(spec)}: {err}") from err


def build_timed(label: str, spec: dict[str, Any], model: Any, data: Any, num_steps: int) -> tuple[Any, tuple[float, float]]:
    """:func:`build`, and ``(seconds, compile_seconds)``: how long the construction took and how much
    of it JAX spent compiling (:func:`pmd.runner.compilation_seconds`). A method's start (SVI's,
    SGLD's, NPV's, NPL's and SVGD's Laplace fit, NumPyro's initial full-data evaluation) runs in
    its constructor: this is the time :func:`pmd.run`'s ``start`` adds to the run's clock."""
    import time

    from pmd.runner import compilation_seconds

    with compilation_seconds() as compiling:
        t0 = time.perf_counter()
        method = build(label, spec, model, data, num_steps)
        seconds = time.perf_counter() - t0
    return method, (seconds, compiling())


def check_config(config: dict) -> None:
    """Check every method entry of ``config`` (:func:`entries`, :func:`check_entry`), so a config
    that names an unknown method, a misspelt hyperparameter or a method on a target it does not
    handle fails when it is read, before any job runs. The LDA peer libraries (not JAX methods:
    :data:`pmd_bench.baselines.peers.topic_models.PEERS`) are checked against their constructors
    the same way."""
    for section, label, entry in entries(config):
        if section == "lda" and entry.get("method", label) in LDA_PEERS:
            from pmd_bench.baselines.peers.topic_models import PEERS

            _check_keys(f"{section}.methods.{label}", entry.get("method", label), PEERS[entry.get("method", label)],
                        entry, section)
            continue
        check_entry(section, label, entry)
