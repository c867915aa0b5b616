"""Every first-party component passes the conformance suite, as a third party's would.

The classes are the ones ``seamline check`` uses: seamline-components registers them
under the entry point group ``seamline.conformance`` (``KIND:NAME``). They are
discovered here by entry point, and one test class per fixture is set into this
module at import, so pytest collects it (``TestNative`` for ``NativeConformance``).
Adding a first-party component therefore needs no line here. Only
seamline-components' own entry points count: a third party's (an installed plugin)
is its own package's business.

The Pallas kernels run in interpret mode on the CPU. cuDNN has no interpreter, so
off GPU its check runs only where it can say something: that the suite reports its
refusal (see test_check_command.py).
"""

from __future__ import annotations

import re
from importlib.metadata import EntryPoint, entry_points

import jax
import pytest

GROUP = "seamline.conformance"
DISTRIBUTION = "seamline-components"

#: The few fixtures that need a mark, by entry-point name.
MARKS: dict[str, list[pytest.MarkDecorator]] = {
    "attention:cudnn": [
        pytest.mark.skipif(jax.default_backend() != "gpu", reason="cuDNN runs on NVIDIA GPUs only")
    ],
    "model:bert-encoder": [pytest.mark.slow],
}


def _canonical(name: str) -> str:
    """A distribution name as packaging compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def first_party_entry_points() -> list[EntryPoint]:
    """seamline-components' conformance fixtures, one per ``KIND:NAME``, in name order."""
    found: dict[str, EntryPoint] = {}
    for point in entry_points(group=GROUP):
        if point.dist is not None and _canonical(point.dist.name) == DISTRIBUTION:
            found.setdefault(point.name, point)
    return [found[name] for name in sorted(found)]


def _test_class(point: EntryPoint) -> type:
    """A test class for one fixture: ``XConformance`` becomes ``TestX``, with its marks."""
    fixture = point.load()
    name = "Test" + fixture.__name__.removesuffix("Conformance")
    doc = f"The conformance suite over {point.name} ({point.value})."
    namespace = {"__module__": __name__, "__qualname__": name, "__doc__": doc}
    if point.name in MARKS:
        namespace["pytestmark"] = MARKS[point.name]
    return type(name, (fixture,), namespace)


GENERATED: dict[str, type] = {}
for _point in first_party_entry_points():
    _cls = _test_class(_point)
    GENERATED[_point.name] = _cls
    globals()[_cls.__name__] = _cls
