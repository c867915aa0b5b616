"""Outputs whose name already holds what they can never be published over: refused while
the pipeline is validated.

``mkdir results; seamline validate p.yaml --set sink.with.path=results`` said ok, and the
run failed only when it published, after embedding every document ("cannot write the
records to '.../results': it is a directory"). The sink kit's config says which of its
outputs are occupied (:meth:`seamline.contracts.sink_kit.OutputConfig.occupied`: a
directory where a file is published, anything but a folder where a table folder goes),
and the sink asks it again before the run's work; here each is placed at the ``with:``
field it comes from. A sink not built on the kit is not judged: its paths' meaning is
its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel

from seamline.contracts import ConfigError
from seamline.contracts.sink_kit import OutputConfig

if TYPE_CHECKING:
    from seamline.core.config.located import Located


def occupied_problems(located: Located, sink: str, config: BaseModel) -> list[ConfigError]:
    """A problem for each output of the sink named ``sink`` that ``config`` says is occupied."""
    if not isinstance(config, OutputConfig):
        return []
    return [
        ConfigError(f"{sink} sink: {problem}", located.where(("sink", "with", field)))
        for field, problem in config.occupied()
    ]
