"""An index on disk, as its manifest describes it: which sink wrote it, and where its files are.

Every first-party sink publishes ``<stem>.manifest.json`` beside its output: the
pipeline, the model and its config, the run's ``attention`` section, and
``outputs`` (the sink and the location of each file or table, relative to the
manifest; or ``outputs.parts``, the files of every shard of a run split into shards,
read part after part). Search needs nothing else to find the vectors and rebuild
the model.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from seamline.contracts import ConfigError, UserError
from seamline.core.config.located import Located, parse_located

MANIFEST_SUFFIX = ".manifest.json"
SINKS = ("jsonl", "npy", "parquet", "lancedb")


@dataclass(frozen=True, slots=True)
class Index:
    """An index on disk, as its manifest describes it."""

    manifest_path: Path
    located: Located
    """The manifest, with the place of every value (for errors about its contents)."""
    sink: str
    parts: tuple[dict[str, Path], ...]
    """The files of each part, by purpose: one part for a whole output, one per shard for a
    run split into shards (``outputs.parts``)."""

    @property
    def files(self) -> dict[str, Path]:
        """The first part's files (the only part, for a whole output)."""
        return self.parts[0] if self.parts else {}

    @property
    def manifest(self) -> dict[str, Any]:
        return cast(dict[str, Any], self.located.data)

    @property
    def outputs(self) -> dict[str, Any]:
        """What the sink recorded about its output (``files``, and e.g. the lancedb index)."""
        return dict(self.manifest.get("outputs") or {})


def manifest_path(index: Path) -> Path:
    """The manifest of ``index``: the file itself if it is one, else the one beside it.

    ``out/emb.jsonl``, ``out/emb.parquet`` and the LanceDB table ``out/emb.lance`` all
    have ``out/emb.manifest.json``.
    """
    if index.name.endswith(MANIFEST_SUFFIX):
        return index
    return index.with_name(index.stem + MANIFEST_SUFFIX)


def open_index(index: Path) -> Index:
    """Read the manifest of ``index`` and find its files from it."""
    path = manifest_path(index)
    if not index.exists() and not path.exists():
        raise UserError(f"index {index} does not exist: run a pipeline whose sink writes it")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(
            f"{path} is missing, so the model that made {index} is unknown; re-run the pipeline "
            f"with one of the sinks {', '.join(SINKS)}, which publish it"
        ) from None
    located = parse_located(text, str(path))
    manifest = located.data
    if not isinstance(manifest, dict) or "model" not in manifest:
        raise ConfigError("not a seamline manifest (no 'model' section)", located.where(()))
    outputs = manifest.get("outputs") or _outputs_before_manifests_named_them(index)
    base = path.parent
    listed = outputs.get("parts", [outputs])
    parts = tuple(
        {purpose: base / name for purpose, name in part.get("files", {}).items()} for part in listed
    )
    files = {name: path for part in parts for name, path in part.items()}
    if (
        index != path
        and "parts" not in outputs
        and files
        and index.resolve() not in {f.resolve() for f in files.values()}
    ):
        # Outputs of one stem in one folder (emb.jsonl, emb.lance) share the manifest name:
        # the last run's manifest describes its own output, not this one.
        raise UserError(
            f"{path} describes another output ({', '.join(str(f) for f in files.values())}) "
            f"of a {outputs.get('sink')} sink, not {index}: a later run with the same name "
            f"in {base} replaced its manifest. Run the pipeline that writes {index} again, "
            "and give outputs of different sinks different names"
        )
    return Index(path, located, str(outputs.get("sink", "")), parts)


def _outputs_before_manifests_named_them(index: Path) -> dict[str, Any]:
    """The default layout, for indexes published before manifests listed their files."""
    if index.suffix == ".npy":
        return {
            "sink": "npy",
            "files": {"matrix": index.name, "index": index.stem + ".index.jsonl"},
        }
    return {"sink": "jsonl", "files": {"records": index.name}}


def read_manifest(index: Path) -> dict[str, Any]:
    """The manifest of ``index`` as plain data."""
    return open_index(index).manifest
