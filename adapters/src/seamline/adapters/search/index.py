"""An index on disk, as its manifest describes it: which sink wrote it, and where its files are.

Every first-party sink publishes ``<stem>.manifest.json`` beside its output: the
pipeline, the model and its config, the run's ``attention`` section, and
``outputs`` (the sink and the location of each file or table, relative to the
manifest; or ``outputs.parts``, the files of every shard of a run split into shards,
read part after part). Search needs nothing else to find the vectors and rebuild
the model.

The manifest is untrusted input (whoever can write the folder can edit it): it is
read and validated by :mod:`seamline.contracts.manifest` before anything in it is
used, and the files it names are taken only from the manifest's own folder.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from seamline.contracts import ConfigError, UserError
from seamline.contracts.manifest import (
    Manifest,
    Outputs,
    manifest_json,
    manifest_path,
    output_files,
    read_manifest_text,
    validate_manifest,
)
from seamline.core import Located, parse_located

SINKS = ("jsonl", "npy", "parquet", "lancedb")

__all__ = ["SINKS", "Index", "manifest_path", "open_index", "read_manifest"]


@dataclass(frozen=True, slots=True)
class Index:
    """An index on disk, as its validated manifest describes it."""

    manifest_path: Path
    manifest: Manifest
    """The validated manifest (one with a ``model``)."""
    located: Located
    """The manifest as parsed (strict JSON), with the place of every value where it could be
    found (for problems with the model and attention it names)."""
    outputs: Outputs
    parts: tuple[dict[str, Path], ...]
    """The files of each part, by purpose, each in the manifest's folder: one part for a
    whole output, one per shard for a run split into shards (``outputs.parts``)."""

    @property
    def sink(self) -> str:
        return self.outputs.sink

    @property
    def files(self) -> dict[str, Path]:
        """The first part's files (the only part, for a whole output)."""
        return self.parts[0] if self.parts else {}


def open_index(index: Path) -> Index:
    """Read and validate the manifest of ``index``, and find its files from it."""
    path = manifest_path(index)
    if not index.exists() and not path.exists():
        raise UserError(f"index {index} does not exist: run a pipeline whose sink writes it")
    try:
        text = read_manifest_text(path)
    except FileNotFoundError:
        raise UserError(
            f"{path} is missing, so the model that made {index} is unknown; re-run the pipeline "
            f"with one of the sinks {', '.join(SINKS)}, which publish it"
        ) from None
    located = _located(text, str(path))
    manifest = validate_manifest(located.data, str(path), located.where)
    if manifest.model is None:
        raise ConfigError(
            "not a seamline manifest (no 'model' section): search embeds the query with the "
            "model that made the index, and this manifest names none",
            located.where(()),
        )
    outputs = manifest.outputs or _outputs_before_manifests_named_them(index)
    parts = output_files(outputs, path, located.where)
    files = {name: path for part in parts for name, path in part.items()}
    if (
        index != path
        and outputs.parts is None
        and files
        and index.resolve() not in {f.resolve() for f in files.values()}
    ):
        # Outputs of one stem in one folder (emb.jsonl, emb.lance) share the manifest name:
        # the last run's manifest describes its own output, not this one.
        raise UserError(
            f"{path} describes another output ({', '.join(str(f) for f in files.values())}) "
            f"of a {outputs.sink} sink, not {index}: a later run with the same name "
            f"in {path.parent} replaced its manifest. Run the pipeline that writes {index} "
            "again, and give outputs of different sinks different names"
        )
    return Index(path, manifest, located, outputs, parts)


def _located(text: str, source: str) -> Located:
    """The manifest's data as strict JSON reads it, with the place of each value.

    The values come from JSON (a YAML parser reads ``1e-05`` as a string); the places
    from the located YAML parse of the same text, where it succeeds (JSON is YAML's
    flow style). Where it does not, a problem names the file and the field alone.
    """
    data = manifest_json(text, source)
    try:
        places = parse_located(text, source)
    except ConfigError:
        return Located(data, source)
    return Located(data, source, places.values, places.keys)


def _outputs_before_manifests_named_them(index: Path) -> Outputs:
    """The default layout, for indexes published before manifests listed their files."""
    if index.suffix == ".npy":
        files = {"matrix": index.name, "index": index.stem + ".index.jsonl"}
        return Outputs(sink="npy", files=files)
    return Outputs(sink="jsonl", files={"records": index.name})


def read_manifest(index: Path) -> Manifest:
    """The validated manifest of ``index``."""
    return open_index(index).manifest
