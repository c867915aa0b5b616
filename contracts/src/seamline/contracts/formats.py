"""The formats of the files seamline writes for itself, in a module that imports nothing:
``seamline --version`` prints them, and importing the sink kit for one number made it four
times slower (numpy and pydantic, 0.3 s)."""

from __future__ import annotations

MANIFEST_FORMAT = 1
"""The manifest format this seamline writes and reads (``seamline_manifest``)."""
CHECKPOINT_FORMAT = 2
"""2: partial files are recorded by name in the destination's folder (1 recorded paths)."""
