"""Shared test settings: CPU JAX, and small helpers for the statistical tests."""

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")
# JAX's persistent compilation cache, shared by the test processes and the workflow subprocesses
# they start (which inherit it): many tests compile the same PMD steps. Measured here, `pytest -n 2`
# from an empty cache: 12 min 10 s, against about 17 min without it.
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR",
                      os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), ".jax-cache"))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.5")

import warnings  # noqa: E402  (after the environment above, which JAX reads at import)

import jax  # noqa: E402
import pytest  # noqa: E402

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
