"""Shared test settings: CPU JAX, small helpers for the statistical tests, and the posteriordb mirror fixture."""

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")
# JAX's persistent compilation cache, shared by the test processes and the workflow subprocesses
# they start (which inherit it): many tests compile the same PMD steps. Measured here, `pytest -n 2`
# from an empty cache: 12 min 10 s, against about 17 min without it.
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR",
                      os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), ".jax-cache"))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.5")

import datetime  # noqa: E402  (after the environment above, which JAX reads at import)
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

from platformdirs import user_cache_dir  # noqa: E402


def stamp_arviz_daily_warning() -> None:
    """Write today's stamp of ArviZ's once-a-day warning (``<cache>/arviz/daily_warning``) through
    this process's own temporary file. ArviZ 0.23 writes it at import through one fixed temporary
    name (``daily_warning.tmp``), so two pytest-xdist workers importing PyMC on a day's first run
    can race: one renames the file the other has just moved, and collection fails with
    ``FileNotFoundError`` (seen on 2026-11-28, ``tests/test_custom_experiment.py``). With today's
    stamp in place ArviZ writes nothing."""
    folder = Path(user_cache_dir("arviz", "arviz"))
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f"daily_warning.{os.getpid()}.tmp"
    tmp.write_text(datetime.date.today().isoformat())
    tmp.replace(folder / "daily_warning")


stamp_arviz_daily_warning()

import jax  # noqa: E402
import pytest  # noqa: E402

from pmd_bench.datasets.posteriordb import FILES  # noqa: E402
from pmd_bench.datasets.settings import MIRROR_ENV, Settings  # noqa: E402

# JAX's precision when the session starts (float32 unless JAX_ENABLE_X64 is set). Code under test
# may switch float64 on for its whole process (the sparse-GP and logistic workflow steps do, as
# PyMC's JAX samplers do); in a test process that would change the arithmetic of every later test
# on the same pytest-xdist worker, so a test's outcome would depend on which tests ran before it.
SESSION_X64 = bool(jax.config.jax_enable_x64)


@pytest.fixture(autouse=True)
def jax_precision_per_test(request):
    """Run every test at the session's JAX precision and put it back afterwards, naming any test
    that changed it (a warning in the summary), so that no test inherits another's float64."""
    jax.config.update("jax_enable_x64", SESSION_X64)
    yield
    if bool(jax.config.jax_enable_x64) != SESSION_X64:
        warnings.warn(f"{request.node.nodeid} left jax_enable_x64 = {jax.config.jax_enable_x64}; reset",
                      stacklevel=1)
        jax.config.update("jax_enable_x64", SESSION_X64)


@pytest.fixture(scope="module")
def posteriordb_settings(tmp_path_factory) -> Settings:
    """Data settings that read posteriordb's files from the offline mirror named by PMD_BENCH_DATA_MIRROR
    into a temporary data directory; skips the test, with the reason, when it is unset or lacks them."""
    value = os.environ.get(MIRROR_ENV)
    if not value:
        pytest.skip(f"{MIRROR_ENV} is unset: no offline data mirror holding posteriordb's reference posteriors")
    missing = [name for name in FILES if not (Path(value) / name).is_file()]
    if missing:
        pytest.skip(f"offline mirror {value} lacks {len(missing)} posteriordb files, e.g. {missing[0]}")
    return Settings(data_dir=tmp_path_factory.mktemp("data"), mirror=Path(value))


@pytest.fixture
def drawn(monkeypatch):
    """The figures the reports close, kept open to be inspected (closed after the test)."""
    import matplotlib.pyplot as plt

    figures = []
    monkeypatch.setattr(plt, "close", figures.append)
    yield figures
    monkeypatch.undo()
    for fig in figures:
        plt.close(fig)
