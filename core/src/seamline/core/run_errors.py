"""A loader's refusal during a run, placed in the pipeline file like a validation error.

``seamline validate`` does not read the input (a pipeline is often checked before its
data exists), so a loader refuses a ``root`` that does not exist, or a Parquet file
without the column it was told to read, only once the run asks it for documents. Its
message names the setting, but not where the setting is: which file, which line, and
whether the value came from the command line or from an environment variable
(``root: ${SEAMLINE_CORPUS:-build/corpus}`` fails as ``root 'build/corpus' does not
exist``, and the user is left to guess why it is ``build/corpus``). So the host places
it: at the loader's ``with:`` block, naming the ``--set`` overrides that changed it and
the settings filled from the environment, as they are written in the file (never a
variable's value: it may be a secret). The loader's own message may quote such a value
(``root 'hunter2' does not exist``): it is shown with the variable's name in its place,
or withheld, by the rule of :mod:`seamline.core.config.redact`.
"""

from __future__ import annotations

from seamline.contracts import ConfigError, UserError
from seamline.core.config import ResolvedPipeline
from seamline.core.config.overrides import is_override
from seamline.core.config.redact import scrub
from seamline.core.seams import failed_at

WITH = ("loader", "with")


def placed_loader_error(error: BaseException, pipeline: ResolvedPipeline) -> BaseException:
    """``error`` placed at the loader's settings, if it is the loader's own refusal (a plain
    :class:`UserError` that left a loader call); any other error as it is."""
    where = failed_at(error)
    if type(error) is not UserError or where is None or not where.startswith("loader "):
        return error
    given = pipeline.overrides_under(WITH)
    notes = [f"given {', '.join(given)}"] if given else []
    loader = pipeline.loader
    said = scrub(str(error), loader.filled, f"{loader.kind} {loader.name!r}")
    located = pipeline.located
    if located is None:  # built without a file: no place, nothing interpolated
        return ConfigError(_detail(said.text, notes), loader.location)
    for path, (template, _filled) in sorted(located.templates.items()):
        if path[: len(WITH)] == WITH and not is_override(located.where(path)):
            notes.append(f"{'.'.join(map(str, path))} is written {template}")
    return ConfigError(_detail(said.text, notes), said.place or located.where(WITH))


def _detail(message: str, notes: list[str]) -> str:
    return message + (f" ({'; '.join(notes)})" if notes else "")
