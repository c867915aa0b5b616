"""A package's public names loaded on first use (PEP 562 ``__getattr__``).

``seamline.contracts``, ``seamline.core`` and ``seamline.api`` each name what they offer
in a table of where it is defined, and import a module only when one of its names is first
looked up: importing the package then costs nothing (no JAX, about 1,000 modules and 1 to
2.5 s, for an application that needs an error class or a command that embeds nothing).
One loader serves the three, so a lookup fails, and caches, the same way in each.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any

Location = str | tuple[str, str]
"""Where a name is defined: its module (the name is the same there), or ``(module, name)``."""


def lazy_attributes(
    package: str, locations: Mapping[str, Location], namespace: MutableMapping[str, Any]
) -> Callable[[str], Any]:
    """The ``__getattr__`` of ``package``: each name of ``locations`` imported from its
    module when first looked up, and kept in ``namespace`` (the package's globals), so that
    later lookups never reach this function; any other name is an ``AttributeError``."""

    def __getattr__(name: str) -> Any:  # noqa: N807 (the module attribute it becomes)
        location = locations.get(name)
        if location is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, attribute = (location, name) if isinstance(location, str) else location
        value = getattr(importlib.import_module(module), attribute)
        namespace[name] = value
        return value

    return __getattr__
