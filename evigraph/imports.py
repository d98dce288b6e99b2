"""Import paths (``"package.module:attr.sub"``) resolved to objects: how agents, chat models and other plug-ins
are named in specs and configs without importing them up front."""

from __future__ import annotations

import importlib
from typing import Any

from evigraph.errors import ConfigError

__all__ = ("resolve",)


def resolve(path: str) -> Any:
    """Import ``"package.module:attr.sub"`` and return the object.

    Raises:
        ConfigError: the module or attribute does not exist (the message names the path).
    """
    module_name, _, attr_path = path.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as error:
        raise ConfigError(f"cannot import {module_name!r} ({error})", source=path) from error
    for part in attr_path.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ConfigError(f"{module_name!r} has no attribute {attr_path!r}", source=path) from None
    return obj
