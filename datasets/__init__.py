"""pmd-bench's datasets: a registry of source files, a verifying fetcher and the preparations of Appendix H.

Modules: :mod:`~datasets.registry` (sources and datasets), :mod:`~datasets.fetch` (cache, offline
mirror, resumable verified downloads), :mod:`~datasets.settings` (data directory and mirror),
:mod:`~datasets.atomic` (atomic writes), :mod:`~datasets.errors`, :mod:`~datasets.mnist`,
:mod:`~datasets.mnist8m`, :mod:`~datasets.deform`, :mod:`~datasets.pca` and
:mod:`~datasets.npystream` (H.2), :mod:`~datasets.msd` (H.3.2), :mod:`~datasets.wikipedia` and
:mod:`~datasets.corpus` (H.4), :mod:`~datasets.synthetic` (H.3.1 and an LDA corpus),
:mod:`~datasets.cli` (``python -m pmd_bench.datasets``, ``pmd-bench-data``).
This package imports nothing from ``pmd``, ``baselines``, ``workflow`` or ``reports``.
"""
