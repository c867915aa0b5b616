"""What every contract class checks, whatever the kind: identity, configuration, version.

Each kind's contract class names its component through one fixture (``attention``,
``model``, ``make_loader``...) and maps it to ``component`` here, so these checks
run for every kind without the author writing anything.
"""

from __future__ import annotations

import json
import os
from typing import Any, ClassVar

import pytest
from pydantic import ValidationError

from seamline.contracts.component import Component, ComponentConfig
from seamline.contracts.conformance import config_of
from seamline.contracts.untrusted import is_count
from seamline.contracts.versions import Kind, compatibility_problem

EXAMPLES_VARIABLE = "SEAMLINE_CONFORMANCE_EXAMPLES"
DEFAULT_EXAMPLES = 8
IDENTITY_PROPERTY = "seamline_component"


def max_examples() -> int:
    """How many generated cases each property-based check tries (bounded: the suite stays fast)."""
    text = os.environ.get(EXAMPLES_VARIABLE, "")
    return int(text) if is_count(text, 6) and int(text) > 0 else DEFAULT_EXAMPLES


def identity(component: Component[Any], with_config: bool = True) -> str:
    """The JSON text a test report carries to say which component and configuration it tested.

    Loaders and sinks are built by the author's fixture per test, over temporary
    paths, so their configuration names no particular setup and is left out.
    """
    cls = type(component)
    return json.dumps(
        {
            "kind": component.kind,
            "name": component.name,
            "class": f"{cls.__module__}:{cls.__qualname__}",
            "contract_version": component.contract_version,
            "config": config_of(component) if with_config else None,
        },
        sort_keys=True,
    )


def _fixture_type() -> type | None:
    """The type ``pytest.fixture`` gives a fixture, found through pytest's public API only.

    Since pytest 8.4 a fixture is an object of its own type, not a function; asking
    pytest itself for one (rather than importing its private "is this a fixture" helper)
    keeps the suite working across pytest's upgrades. Older pytest returns the function
    itself: then fixtures cannot be told from methods, and None says so.
    """

    def probe() -> None:
        """A function for pytest to wrap."""

    kind = type(pytest.fixture(probe))
    return None if kind is type(probe) else kind


FIXTURE_TYPE = _fixture_type()


def hidden_fixture(cls: type) -> str | None:
    """A fixture of a base class that ``cls`` redefines as something else, in words; or None.

    ``make_loader(directory, texts)`` reads like a method, and a subclass that writes it
    as one hides the suite's fixture: pytest then errors every check with a long "fixture
    'make_loader' not found" that never says why. Found when the class is defined, it
    is one line naming the fix. (With a pytest older than 8.4, which cannot tell a
    fixture from a method, nothing is found and pytest's own error stands.)
    """
    if FIXTURE_TYPE is None:
        return None
    for name, value in vars(cls).items():
        if isinstance(value, FIXTURE_TYPE):
            continue
        if any(isinstance(vars(base).get(name), FIXTURE_TYPE) for base in cls.__mro__[1:]):
            return (
                f"{cls.__qualname__}.{name} is not a pytest fixture, so it hides the suite's "
                f"'{name}' fixture and every check would error with \"fixture '{name}' not "
                f"found\": write it as a fixture, '@pytest.fixture' above 'def {name}(self)', "
                "that returns what the checks use (for make_loader, make_sink and "
                "read_output: a fixture that returns the function the checks call)"
            )
    return None


class ComponentContract:
    """Checks shared by every kind. Subclasses set ``kind`` and provide ``component``."""

    kind: ClassVar[Kind]
    #: Whether a record pins the configuration (not for components built over temporary paths).
    config_in_record: ClassVar[bool] = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Refuse a subclass that hides one of the suite's fixtures (``hidden_fixture``)."""
        super().__init_subclass__(**kwargs)
        problem = hidden_fixture(cls)
        if problem is not None:
            raise TypeError(problem)

    @pytest.fixture
    def component(self) -> Component[Any]:
        raise NotImplementedError("a contract class maps its kind's fixture to 'component'")

    @pytest.fixture(autouse=True)
    def _seamline_identity(self, request: pytest.FixtureRequest, component: Component[Any]) -> None:
        # Reports carry the component they were about, so a record can be written from them.
        about = identity(component, self.config_in_record)
        request.node.user_properties.append((IDENTITY_PROPERTY, about))

    def test_is_a_component_of_this_kind(self, component: Component[Any]) -> None:
        declared = getattr(type(component), "kind", None)
        assert declared == self.kind, (
            f"{type(component).__qualname__} declares kind {declared!r} but is tested as a "
            f"{self.kind}: subclass the {self.kind} contract's base class"
        )
        assert isinstance(component.name, str), "the component's name is not a string"
        assert component.name, "the component has no name"

    def test_declared_contract_version_is_supported(self, component: Component[Any]) -> None:
        problem = compatibility_problem(self.kind, component.contract_version)
        assert problem is None, f"{self.kind} {component.name!r} {problem}"

    def test_config_has_a_json_schema(self, component: Component[Any]) -> None:
        config_class = type(component).Config
        assert issubclass(config_class, ComponentConfig), (
            f"{component.name!r}: Config must subclass seamline.contracts.ComponentConfig, "
            f"not {config_class.__qualname__}"
        )
        schema = config_class.model_json_schema()
        assert schema.get("type") == "object", (
            f"{component.name!r}: Config's JSON schema is not an object schema: {schema}"
        )
        assert isinstance(component.config, config_class), (
            f"{component.name!r}: the instance's config is a "
            f"{type(component.config).__qualname__}, not its declared Config "
            f"{config_class.__qualname__}"
        )

    def test_config_rejects_unknown_fields(self, component: Component[Any]) -> None:
        config_class = type(component).Config
        values = {**component.config.model_dump(), "seamline_conformance_no_such_field": 1}
        try:
            config_class.model_validate(values)
        except ValidationError:
            return
        pytest.fail(
            f"{component.name!r}: Config accepted an unknown field; a typo in a pipeline file "
            "would be ignored silently. Subclass ComponentConfig (extra='forbid')"
        )
