"""What every component declares, whatever its kind.

A component is a class registered under an entry point. It declares, as class
attributes, the name it is registered under, the contract and contract version it
implements, and a pydantic ``Config`` model that is both its constructor's input
and the schema of its ``with:`` block in a pipeline file.
"""

from __future__ import annotations

from typing import ClassVar, Generic, TypeVar

from pydantic import BaseModel, ConfigDict

from seamline.contracts.versions import Kind


class ComponentConfig(BaseModel):
    """Base of every component's ``Config``: unknown fields are errors, values are frozen.

    ``extra="forbid"`` is what lets a typo in a pipeline file be reported with the
    list of allowed fields instead of being silently ignored.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)


ConfigT = TypeVar("ConfigT", bound=ComponentConfig)


class Component(Generic[ConfigT]):
    """Base of all components.

    Subclasses set ``name``, ``contract_version`` and ``Config`` explicitly: the
    contract version is the one the author wrote against, which is why it is not
    inherited from seamline at import time.
    """

    kind: ClassVar[Kind]
    name: ClassVar[str]
    contract_version: ClassVar[str]
    Config: ClassVar[type[ComponentConfig]] = ComponentConfig

    def __init__(self, config: ConfigT) -> None:
        self.config: ConfigT = config

    def close(self) -> None:
        """Release resources. The orchestrator calls it once, at the end of a run."""

    def describe(self) -> dict[str, str]:
        """Attributes that identify this instance in spans, logs and listings."""
        return {"kind": self.kind, "name": self.name, "contract_version": self.contract_version}
