"""Whether an index was written by another seamline than the one searching it.

A query is embedded here, by this seamline's code and runtime; the index's vectors were
computed by whatever wrote it, which its manifest's ``versions`` records (the runtime,
the tokenizers library and a digest of seamline's own code: what ``--resume`` refuses to
splice). Where they differ, the query's vector and the documents' may not be comparable
(another tokenizer cuts the text otherwise; another XLA sums otherwise), and a search
answered silently as if they were. Search still answers, and says so once, on stderr:
which versions differ, and that re-running the pipeline writes the index anew.
"""

from __future__ import annotations

from pathlib import Path

from seamline.adapters.search.index import Index
from seamline.contracts.untrusted import visible
from seamline.core import run_versions

SHOWN_VERSION = 40
"""The most characters of a recorded version a warning shows (the manifest is untrusted)."""


def written_by_another(path: Path, index: Index) -> str | None:
    """Why ``index`` (opened from ``path``) may not compare with a query embedded here: the
    versions its manifest records that differ from this seamline's, then and now, and how to
    mend it; None where they are the same, or where the manifest records none (an output from
    before versions were recorded, 2026-12-05: nothing to name)."""
    data = index.located.data
    recorded = data.get("versions") if isinstance(data, dict) else None
    if not isinstance(recorded, dict):
        return None
    current = run_versions()
    names = sorted(set(current) | {name for name in recorded if name in _KNOWN})
    changes = [
        f"{name} {_shown(recorded.get(name), 'not recorded')} then, "
        f"{_shown(current.get(name), 'absent')} now"
        for name in names
        if recorded.get(name) != current.get(name)
    ]
    if not changes:
        return None
    return (
        f"{visible(str(path))} was written by another seamline version ({'; '.join(changes)}): "
        "its vectors may differ from what this one computes for a query, so scores and ranking "
        "may be off; run the pipeline again to write it with this version"
    )


_KNOWN = frozenset(
    {"seamline-core", "seamline-contracts", "jax", "jaxlib", "numpy", "tokenizers", "seamline-code"}
)
"""The versions a manifest records that this seamline knows (a hostile manifest's other keys
are not named); one of them not installed here is ``absent`` now, and one the writer did
not record is ``not recorded`` then (an older seamline recorded fewer: numpy was there)."""


def _shown(version: object, missing: str) -> str:
    """A recorded version for a one-line message: ``missing``, or at most a few dozen
    characters, its control characters shown."""
    if version is None:
        return missing
    text = visible(version if isinstance(version, str) else repr(version))
    return text if len(text) <= SHOWN_VERSION else text[: SHOWN_VERSION - 1] + "…"
