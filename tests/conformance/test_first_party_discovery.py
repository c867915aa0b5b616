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


def unmatched(components: set[str], fixtures: set[str]) -> str:
    """What to do about each component without a conformance class, and each class without
    a component: the bare set difference named ``loader:csv`` and not where to fix it."""
    lines = [
        f"{name}: seamline-components registers this {name.split(':')[0]} but no conformance "
        f"class for it; write one in components/src/seamline/components/conformance.py (as "
        f"its neighbours of that kind are) and register it in components/pyproject.toml under "
        f'[project.entry-points."{GROUP}"] as "{name}" = '
        f'"seamline.components.conformance:CLASS"; then make setup (it re-installs, so the '
        f"new entry point is seen)"
        for name in sorted(components - fixtures)
    ]
    lines += [
        f"{name}: a {GROUP} entry point of seamline-components names no component it "
        f"registers; rename or remove it in components/pyproject.toml"
        for name in sorted(fixtures - components)
    ]
    return "\n".join(lines)


def test_a_component_without_a_conformance_class_is_told_where_to_register_one() -> None:
    message = unmatched({"loader:csv", "loader:jsonl"}, {"loader:jsonl", "sink:gone"})
    csv, gone = message.split("\n")
    assert csv.startswith("loader:csv: seamline-components registers this loader but no")
    assert "components/src/seamline/components/conformance.py" in csv
    assert '[project.entry-points."seamline.conformance"] as "loader:csv"' in csv
    assert "make setup" in csv
    assert gone.startswith("sink:gone: a seamline.conformance entry point")


def test_every_first_party_component_has_one_collected_conformance_class() -> None:
    components = {f"{kind}:{name}" for kind in KINDS for name in _ours(f"seamline.{kind}")}
    assert len(components) >= 15, components  # 7 attention kernels, a model, 7 more
    assert set(GENERATED) == components, unmatched(components, set(GENERATED))
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
