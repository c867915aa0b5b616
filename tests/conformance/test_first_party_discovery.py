"""test_first_party.py finds its classes by entry point: check that it finds all, and only ours.

Every component seamline-components registers (``seamline.attention``,
``seamline.model``, ...) must have a conformance fixture (``seamline.conformance``,
same ``KIND:NAME``), and each fixture must become exactly one collected test class.
Fixtures other distributions register (an installed plugin) are theirs to run.
"""

from __future__ import annotations

from importlib.metadata import entry_points

from seamline.contracts.versions import KINDS
from tests.conformance import test_first_party
from tests.conformance.test_first_party import DISTRIBUTION, GENERATED, GROUP, MARKS


def _ours(group: str) -> set[str]:
    return {
        point.name
        for point in entry_points(group=group)
        if point.dist is not None and point.dist.name.replace("_", "-").lower() == DISTRIBUTION
    }


def test_every_first_party_component_has_one_collected_conformance_class() -> None:
    components = {f"{kind}:{name}" for kind in KINDS for name in _ours(f"seamline.{kind}")}
    assert len(components) >= 15, components  # 7 attention kernels, a model, 7 more
    assert set(GENERATED) == components
    names = [cls.__name__ for cls in GENERATED.values()]
    assert len(set(names)) == len(names), names
    for cls in GENERATED.values():
        assert cls.__name__.startswith("Test")
        assert getattr(test_first_party, cls.__name__) is cls


def test_every_mark_names_a_fixture_that_exists() -> None:
    """A renamed entry point must not silently lose its mark (cuDNN's skip, bert's slow)."""
    assert set(MARKS) <= set(GENERATED)
    for name, marks in MARKS.items():
        assert vars(GENERATED[name])["pytestmark"] == marks


def test_other_distributions_fixtures_are_left_to_them() -> None:
    ours = _ours(GROUP)
    for point in entry_points(group=GROUP):
        if point.name not in ours:
            assert point.name not in GENERATED, point
