"""Gate figures kept between runs: a precision checked once for a pipeline is not checked again.

The gate embeds the run's first documents twice; a record of its figures, keyed by
everything that could change them (the model and its settings, its weights pinned by
their digest (:mod:`seamline.core.pinning`), the attention section and every installed
attention's distribution and version, the sample's texts (:func:`texts_digest`: the
documents the gate embeds, not the loader section, whose relative ``root: docs`` names
another folder in each project), the hardware, the JAX and model versions, the
candidate and the sample's size), lets the next run of the same pipeline on the same
documents reuse them.
Thresholds are not in the key: the recorded figures are judged by the pipeline's
thresholds of the day.

Records live in ``$SEAMLINE_PRECISION_DIR``, else ``$XDG_CACHE_HOME/seamline/precision``.
A record is read back as untrusted input: bounded in size, validated by a schema, and
one that fails either is ignored (the gate measures again and writes a good one).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from seamline.contracts.home import no_home_reason
from seamline.contracts.logs import get_logger
from seamline.contracts.sink_kit import write_bytes_atomically
from seamline.contracts.untrusted import NotRegularFile, read_regular
from seamline.core.directories import cache_home, named_directory, under
from seamline.core.precision.decision import GateFigures

log = get_logger("seamline.core")

DIRECTORY_VARIABLE = "SEAMLINE_PRECISION_DIR"
RECORD_LIMIT = 64 * 1024
"""Bytes a record may have; a larger file is not read."""


class _Figures(BaseModel):
    # Not finite is not a figure: an Infinity read from a record went into the manifest.
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

    windows: int = Field(ge=1, le=10_000_000)
    min_cosine: float = Field(ge=-1.0, le=1.0 + 1e-6)
    median_cosine: float = Field(ge=-1.0, le=1.0 + 1e-6)
    max_abs: float = Field(ge=0.0)
    top_k: int = Field(ge=0, le=1000)
    neighbours: float | None = Field(ge=0.0, le=1.0)
    worst_neighbours: float | None = Field(ge=0.0, le=1.0)


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    key: str = Field(pattern=r"^[0-9a-f]{64}$")
    candidate: str = Field(pattern=r"^[a-z0-9_]{1,32}$")
    figures: _Figures


def directory(environ: Mapping[str, str] | None = None) -> Path | None:
    """Where records are kept (not created until one is written); None where there is no
    home and the variable is unset: no record is read or kept, the gate measures."""
    return named_directory(
        DIRECTORY_VARIABLE, lambda: under(cache_home(environ), "seamline", "precision"), environ
    )


_said_no_home: list[bool] = []
"""Whether this process has said that records are not kept for want of a home."""


def record_key(material: Mapping[str, Any]) -> str:
    """sha256 of ``material`` as canonical JSON."""
    text = json.dumps(material, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def texts_digest(texts: Sequence[str]) -> str:
    """sha256 of ``texts`` in order, each one's length first (no two lists share one)."""
    digest = hashlib.sha256()
    for text in texts:
        data = text.encode("utf-8", "surrogatepass")
        digest.update(len(data).to_bytes(8, "big"))
        digest.update(data)
    return digest.hexdigest()


def record_path(folder: Path, key: str) -> Path:
    """Where the record of ``key`` is kept."""
    return folder / f"{key}.json"


def find(folder: Path | None, key: str, candidate: str) -> GateFigures | None:
    """The figures recorded under ``key`` for ``candidate``, or None (absent or unusable;
    no ``folder``: no home to keep records in).

    Read as untrusted input: a regular file only (a FIFO put there would hang the run;
    it is opened non-blocking and checked on the descriptor), bounded, then a schema.
    """
    if folder is None:
        return None
    path = record_path(folder, key)
    try:
        raw = read_regular(path, RECORD_LIMIT)
    except FileNotFoundError:
        return None
    except NotRegularFile as err:
        log.warning(
            "precision record is not a regular file; ignored", path=str(path), kind=str(err)
        )
        return None
    except OSError as err:
        log.warning(
            "precision record unreadable; the gate measures again", path=str(path), error=str(err)
        )
        return None
    if len(raw) > RECORD_LIMIT:
        log.warning("precision record too large; ignored", path=str(path), limit=RECORD_LIMIT)
        return None
    try:
        record = _Record.model_validate_json(raw)
    except ValidationError as err:
        log.warning(
            "precision record invalid; ignored", path=str(path), error=err.errors()[0]["msg"]
        )
        return None
    if record.key != key or record.candidate != candidate:
        log.warning("precision record is for another pipeline; ignored", path=str(path))
        return None
    return GateFigures(**record.figures.model_dump())


def store(folder: Path | None, key: str, candidate: str, figures: GateFigures) -> Path | None:
    """Write the record atomically; a folder that cannot be written is said, not fatal,
    and so is none at all (no home, and ``$SEAMLINE_PRECISION_DIR`` unset): once."""
    if folder is None:
        if not _said_no_home:
            _said_no_home.append(True)
            log.warning(
                "precision record not kept; the next run checks again",
                error=no_home_reason(),
                fix=f"set {DIRECTORY_VARIABLE} to a directory you can write",
            )
        return None
    record = _Record(key=key, candidate=candidate, figures=_Figures(**_plain(figures)))
    path = record_path(folder, key)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        write_bytes_atomically(path, record.model_dump_json(indent=2).encode())
    except OSError as err:
        log.warning(
            "precision record not kept; the next run checks again", path=str(path), error=str(err)
        )
        return None
    return path


def _plain(figures: GateFigures) -> dict[str, Any]:
    return {name: getattr(figures, name) for name in _Figures.model_fields}
