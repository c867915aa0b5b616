"""Components for the scaling tests, discoverable by worker processes too.

An executor's workers rebuild the pipeline from entry points in their own
processes, so the tests' components are an installed-looking distribution (this
module and its ``dist-info``, put on ``PYTHONPATH``), not classes defined in a test.

- ``lines``: documents from a list, sharded round-robin, the position as cursor;
  ``raise_at`` names a document whose reading raises, on every try or on the first
  ``raise_times`` (counted in the file ``tries``, one line per raise, so that the
  count survives the process: a retry may run in another actor).
- ``tiny``: a one-layer attention encoder over words hashed with CRC-32 (stable across
  processes, unlike ``hash()``), so runs in different processes can be compared.
- ``faults``: a monitor that kills its process (``os._exit``) at a chosen batch,
  once per marker file, and can slow every batch down; or fails as it is built
  (``fail_at_build``: ``user``, a ``UserError``; ``crash``, a ``RuntimeError``), which
  only a worker does (the driver builds no monitor).
"""

from __future__ import annotations

import os
import time
import zlib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from seamline.contracts import (
    AttentionFn,
    Batch,
    BatchDone,
    ComponentConfig,
    Document,
    DocumentError,
    Event,
    Example,
    Loaded,
    Loader,
    Model,
    Monitor,
    SegmentIds,
    Shard,
    UserError,
)


class LinesConfig(ComponentConfig):
    texts: list[str]
    raise_at: str | None = None
    raise_times: int | None = None
    """Raise at ``raise_at`` this many times in all (needs ``tries``); None: every time."""
    tries: str | None = None
    """A file that gets one line (the process id) each time ``raise_at`` raises."""


class LinesLoader(Loader[LinesConfig]):
    """``d<i>`` for text ``i``; a text starting with '!' is unreadable."""

    name: ClassVar[str] = "lines"
    contract_version: ClassVar[str] = "1.0"
    Config = LinesConfig

    def read(self, *, shard: Shard = Shard(), after: str | None = None) -> Iterator[Loaded]:
        first = 0 if after is None else int(after) + 1
        for i, text in enumerate(self.config.texts):
            if i < first or not shard.owns(i):
                continue
            doc_id = f"d{i}"
            if doc_id == self.config.raise_at and self._raise_again():
                raise OSError(f"cannot read {doc_id}: the disk is on fire")
            item: Document | DocumentError = (
                DocumentError(doc_id, "unreadable")
                if text.startswith("!")
                else Document(doc_id, text)
            )
            yield Loaded(str(i), item)

    def _raise_again(self) -> bool:
        """Whether reading ``raise_at`` raises this time; each raise is counted in ``tries``."""
        tries = Path(self.config.tries) if self.config.tries else None
        if tries is not None:
            raised = len(tries.read_text().splitlines()) if tries.exists() else 0
            if self.config.raise_times is not None and raised >= self.config.raise_times:
                return False
            with tries.open("a") as record:
                record.write(f"{os.getpid()}\n")
        return True


class TinyConfig(ComponentConfig):
    max_length: int = 16
    load_seconds: float = 0.0
    """Sleep this long in ``load`` (a model slow to load: a server's warm-up, say)."""
    collate_seconds: float = 0.0
    """Sleep this long in each ``collate`` (a pass of many batches slow enough to stop)."""


class TinyModel(Model[TinyConfig]):
    """Hashed words, one attention layer of 4 heads of 8, mean pooled."""

    name: ClassVar[str] = "tiny"
    contract_version: ClassVar[str] = "1.0"
    Config = TinyConfig

    @property
    def max_length(self) -> int:
        return self.config.max_length

    def load(self) -> Any:
        time.sleep(self.config.load_seconds)
        return {"table": np.random.default_rng(0).normal(size=(97, 32)).astype(np.float32)}

    def prepare(self, document: Document) -> Sequence[Example]:
        words = document.text.split()[: self.max_length]
        ids = [zlib.crc32(w.encode()) % 97 for w in words] or [0]
        return [
            Example(document.id, 0, (0, len(document.text)), len(ids), {"ids": np.asarray(ids)})
        ]

    def collate(self, examples: Sequence[Example], batch_size: int, length: int) -> Batch:
        time.sleep(self.config.collate_seconds)
        ids = np.zeros((batch_size, length), np.int32)
        mask = np.zeros((batch_size, length), np.int32)
        for row, example in enumerate(examples):
            ids[row, : example.length] = example.features["ids"]
            mask[row, : example.length] = 1
        return Batch(tuple(examples), {"ids": ids, "mask": mask}, batch_size, length)

    def apply(
        self, params: Any, arrays: Mapping[str, jax.Array], attention: AttentionFn
    ) -> jax.Array:
        x = jnp.take(params["table"], arrays["ids"], axis=0)
        b, t, _ = x.shape
        heads = x.reshape(b, t, 4, 8)
        seg = arrays["mask"]
        out = attention(heads, heads, heads, segment_ids=SegmentIds(seg, seg)).reshape(b, t, 32)
        weights = seg[..., None].astype(jnp.float32)
        return (out * weights).sum(1) / jnp.maximum(weights.sum(1), 1.0)


class FaultsConfig(ComponentConfig):
    exit_at_batch: int | None = None
    """Kill this process when a run of it reaches this batch (1-based)..."""
    marker: str | None = None
    """...unless this file exists; it is created just before, so the kill happens once."""
    sleep: float = 0.0
    """Seconds to sleep after every batch (to make a run slow enough to interrupt)."""
    fail_at_build: str | None = None
    """``user``: a ``UserError`` as the monitor is built; ``crash``: a ``RuntimeError``."""


class FaultMonitor(Monitor[FaultsConfig]):
    name: ClassVar[str] = "faults"
    contract_version: ClassVar[str] = "1.0"
    Config = FaultsConfig

    def __init__(self, config: FaultsConfig) -> None:
        super().__init__(config)
        if config.fail_at_build == "user":
            raise UserError("faults: /etc/faults.key is missing; create it")
        if config.fail_at_build == "crash":
            raise RuntimeError("faults: cannot open its device")

    def observe(self, event: Event) -> None:
        if not isinstance(event, BatchDone):
            return
        if self.config.sleep:
            time.sleep(self.config.sleep)
        if self.config.exit_at_batch is not None and event.index == self.config.exit_at_batch:
            marker = Path(self.config.marker or "")
            if self.config.marker and marker.exists():
                return
            if self.config.marker:
                marker.write_text(str(os.getpid()), encoding="utf-8")
            os._exit(17)
