"""Importing pmd turns on full float32 matrix products (see pmd's docstring: TF32 on GPUs)."""

import os
import subprocess
import sys

import jax

import pmd  # noqa: F401  (the import is what is tested)


def test_import_sets_highest_matmul_precision():
    assert jax.config.jax_default_matmul_precision == "highest"


def test_an_explicit_environment_choice_is_respected():
    env = {**os.environ, "JAX_DEFAULT_MATMUL_PRECISION": "default", "JAX_PLATFORMS": "cpu"}
    code = "import jax, pmd; print(jax.config.jax_default_matmul_precision)"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "default"
