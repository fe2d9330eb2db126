"""Glue between the library (pmd, baselines, datasets), MLflow, Snakemake and the reports.

The Snakemake rules call the ``pmd-bench`` console script (:mod:`workflow.cli`); nothing in
``pmd`` or ``baselines`` imports this package.
"""
