"""pmd_bench: the benchmark harness around :mod:`pmd`, installed under one import name.

The repository keeps its top-level folders (``baselines/``, ``datasets/``, ``reports/``,
``workflow/``); ``pyproject.toml`` maps each into this package (setuptools' ``package-dir``), so an
installed pmd-bench adds exactly two import names, ``pmd`` (the library) and ``pmd_bench`` (the
harness), and never shadows Hugging Face's ``datasets`` or OpenAI's ``baselines``:

    from pmd_bench.baselines import SGLD, SVI        # the competitors, same init/step interface as pmd.PMD
    from pmd_bench.datasets.registry import DATASETS # checksummed datasets (`pmd-bench data list`)
    from pmd_bench.workflow.cli import main          # the `pmd-bench` command
    from pmd_bench import check_method               # a method against the interface's contract
"""

from importlib.metadata import version as _version

__version__ = _version("pmd-bench")

__all__ = ["__version__", "check_method"]


def __getattr__(name: str):
    """``pmd_bench.check_method`` (:func:`pmd_bench.workflow.check_method.check_method`), imported on
    first use so that ``import pmd_bench`` stays light."""
    if name == "check_method":
        from pmd_bench.workflow.check_method import check_method

        return check_method
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
