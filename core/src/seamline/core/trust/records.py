"""Conformance records on this host: where they are kept, and whose they are.

The record *schema* is in the contracts (:mod:`seamline.contracts.conformance`);
what depends on this installation lives here:

* the **store**: one JSON file per record key in ``$SEAMLINE_CONFORMANCE_DIR``, else
  the user's data directory;
* **attribution**: which distribution registers the component a record is about,
  as the registry found it (the registry is the one place that maps entry points
  to distributions).

What a record vouches for (a component is trusted when a passing record matches
exactly what is installed now) is :mod:`seamline.core.trust.earned`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from seamline.contracts import UserError
from seamline.contracts.conformance import RECORD_FORMAT, ConformanceRecord
from seamline.contracts.home import no_home_reason
from seamline.contracts.logs import get_logger
from seamline.contracts.ownership import owned_by_another
from seamline.contracts.sink_kit import write_bytes_atomically
from seamline.contracts.untrusted import NotRegularFile, read_regular
from seamline.core.code_digest import component_digest
from seamline.core.directories import data_home, named_directory, under
from seamline.core.private_cache import folder_not_private

if TYPE_CHECKING:  # the registry holds the trust policy, so this package never imports it
    from seamline.core.registry import Registry

log = get_logger("seamline.core")

STORE_VARIABLE = "SEAMLINE_CONFORMANCE_DIR"
"""Environment variable naming the directory records are kept in."""

MAX_RECORD_BYTES = 1 << 20
"""The largest record file read (a record of the whole suite is a few kilobytes)."""


def store_directory() -> Path | None:
    """Where records live: ``$SEAMLINE_CONFORMANCE_DIR``, else the user's data directory (a
    variable that names something other than a directory is a user error:
    :mod:`seamline.core.directories`); None where there is no home and the variable is
    unset (no records: none is read, and writing one asks for a place)."""
    return named_directory(STORE_VARIABLE, lambda: under(data_home(), "seamline", "conformance"))


def no_store_error() -> UserError:
    """What writing a record without a place says where there is no home."""
    return UserError(
        f"conformance records have no default folder: {no_home_reason()}; point "
        f"${STORE_VARIABLE} at a directory you can write to"
    )


def save(record: ConformanceRecord, directory: Path | None = None) -> Path:
    """Write ``record`` into the store (replacing an older one with the same key), atomically."""
    target_dir = directory if directory is not None else store_directory()
    if target_dir is None:
        raise no_store_error()
    target_dir.mkdir(parents=True, exist_ok=True)
    path = target_dir / f"{record.kind}-{record.name}-{record.key()}.json"
    write_bytes_atomically(path, (record.model_dump_json(indent=2) + "\n").encode())
    return path


def load_records(
    directory: Path | None = None, pattern: str = "*.json", quiet: bool = False
) -> list[ConformanceRecord]:
    """Every readable record in the store; a damaged file or another format proves nothing.

    ``pattern`` reads only the files it matches (one component's: ``sink-csv-*.json``);
    ``quiet`` skips what is not read without a warning, for a caller that only advises
    (:func:`~seamline.core.trust.earned.failing_record_warning`), where a store the user
    never asked to be checked should not warn on every run.

    The store is read by every run that requires conformance, so what is in it is
    untrusted input: a FIFO or a device in place of a record would block the run or
    never end, and a huge file would fill the memory. Such a file is skipped, with a
    warning naming it; only a regular file of at most :data:`MAX_RECORD_BYTES`, valid
    against the record's schema and of its format (:data:`RECORD_FORMAT`), counts. A
    record decides what a pipeline trusts, so one another user could have written is
    ignored, with a warning, as the compile cache refuses such entries: every record of a
    folder others can write (:func:`~seamline.core.private_cache.folder_not_private`:
    by its owner, its mode or an ACL, as the compile cache asks), and
    a file another user owns.
    """
    source = directory if directory is not None else store_directory()
    if source is None or not source.is_dir():
        return []
    unsafe = folder_not_private(source)
    if unsafe is not None and quiet:
        return []
    if unsafe is not None:
        log.warning(
            "conformance records not read: their folder is not private, and a record decides "
            "what a pipeline trusts",
            directory=str(source),
            why=unsafe.why,
            fix=f"make it yours alone (chmod go-w {source}), or point ${STORE_VARIABLE} at a "
            "folder only you can write",
        )
        return []
    records = []
    warning = _quiet if quiet else log.warning
    for path in sorted(source.glob(pattern)):
        try:
            data = read_regular(path, MAX_RECORD_BYTES)
            found = path.stat()
        except (OSError, NotRegularFile) as err:
            warning("conformance record not read", file=str(path), reason=str(err))
            continue
        reason = owned_by_another(found)
        if reason is not None:
            warning("conformance record not read", file=str(path), reason=reason)
            continue
        if len(data) > MAX_RECORD_BYTES:
            warning("conformance record not read", file=str(path), reason="larger than 1 MiB")
            continue
        try:
            record = ConformanceRecord.model_validate_json(data)
        except ValueError:
            continue
        if record.format != RECORD_FORMAT:  # it was read as this format, and could clear
            warning(
                "conformance record not read",
                file=str(path),
                reason=f"format {record.format}; this seamline reads format {RECORD_FORMAT}",
            )
            continue
        records.append(record)
    return records


def _quiet(event: str, **fields: Any) -> None:
    """A skipped record, said nowhere (``load_records(quiet=True)``)."""


def attribute(record: ConformanceRecord, registry: Registry) -> ConformanceRecord:
    """``record`` with the distribution that registers its component, as the registry found it,
    and the digest of that component's code (:func:`~seamline.core.code_digest.component_digest`).

    The suite itself runs without a host and cannot know which distribution an
    entry point belongs to; a record about a class no entry point registers (a test
    double, say) keeps ``None``, and so does one whose class was imported from a file
    that distribution did not install (:func:`unattributed`).
    """
    info = registry.info_for_target(record.kind, record.component_class)
    if info is None or info.doubt:
        return record
    return record.model_copy(
        update={
            "distribution": info.distribution,
            "distribution_version": info.version,
            "code_digest": component_digest(info.module) or None,
        }
    )


def unattributed(record: ConformanceRecord, registry: Registry) -> str | None:
    """Why :func:`attribute` credits ``record`` to no distribution, or None when it does.

    Such a record can never earn trust under ``require_conformance``, which asks for a
    record of the distribution installed. Tests run from a source folder ahead of an
    installed build (``PYTHONPATH=src``, pytest's ``pythonpath``) tested the source, and
    the record was credited to the installed build, so code that failed the suite was
    trusted.
    """
    info = registry.info_for_target(record.kind, record.component_class)
    if info is None:
        return (
            f"no installed distribution registers {record.component_class} (in the entry-point "
            f"group 'seamline.{record.kind}')"
        )
    if info.doubt:
        return f"the class tested is not {info.distribution} {info.version}'s: {info.doubt}"
    return None
