"""The registry of inference methods the workflow can run, by config name."""

from __future__ import annotations

import inspect
from typing import Any

import pmd
from pmd import ConfigError, InferenceMethod, Model

METHODS: dict[str, type] = {"pmd": pmd.PMD}


def build(label: str, spec: dict[str, Any], model: Model, data: Any) -> InferenceMethod:
    """Construct the method a config entry describes.

    ``spec`` holds the constructor's keyword arguments and optionally ``method`` (the registry
    name, defaulting to ``label``), so one method can appear under several labels with different
    settings. Methods whose constructor takes ``data`` (Gibbs, full-data NPV) receive the data set.
    """
    spec = dict(spec)
    name = spec.pop("method", label)
    if name not in METHODS:
        raise ConfigError(f"method {label!r}: unknown method {name!r}; known: {', '.join(sorted(METHODS))}")
    cls = METHODS[name]
    if "data" in inspect.signature(cls).parameters:
        spec["data"] = data
    try:
        return cls(model, data_size=len(data), **spec)
    except TypeError as err:
        raise ConfigError(f"method {label!r} ({name}): bad arguments {sorted(spec)}: {err}") from err
