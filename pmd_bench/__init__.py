"""pmd_bench: the benchmark harness around :mod:`pmd`, installed under one import name.

The repository keeps its top-level folders (``baselines/``, ``datasets/``, ``reports/``,
``workflow/``); ``pyproject.toml`` maps each into this package (setuptools' ``package-dir``), so an
installed pmd-bench adds exactly two import names, ``pmd`` (the library) and ``pmd_bench`` (the
harness), and never shadows Hugging Face's ``datasets`` or OpenAI's ``baselines``:

    from pmd_bench.baselines import SGLD, SVI        # the competitors, same init/step interface as pmd.PMD
    from pmd_bench.datasets.registry import DATASETS # checksummed datasets (`pmd-bench data list`)
    from pmd_bench.workflow.cli import main          # the `pmd-bench` command
"""

from importlib.metadata import version as _version

__version__ = _version("pmd-bench")

__all__ = ["__version__"]
