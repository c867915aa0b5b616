"""Tiny components for testing the core without the real model's compile times.

They are ordinary contract implementations; a registry is built from them
directly, as discovery would from entry points.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from seamline.components.attention.native import NativeAttention
from seamline.components.executors.local import LocalExecutor
from seamline.contracts import (
    AttentionFn,
    AttentionSpec,
    Batch,
    ComponentConfig,
    Document,
    DocumentError,
    Event,
    Example,
    Loaded,
    Loader,
    Model,
    Monitor,
    OutputRecord,
    SegmentIds,
    Shard,
    Sink,
    Support,
)
from seamline.core.registry import ComponentInfo, Registry


class ListLoaderConfig(ComponentConfig):
    texts: list[str]
    crash_at: str | None = None
    """A document id: reading it raises, as a process dying there would stop the run."""


class LoaderCrash(RuntimeError):
    """What the ``list`` loader raises at ``crash_at``."""


class ListLoader(Loader[ListLoaderConfig]):
    """Documents from a list; a text starting with '!' is unreadable.

    The cursor is the position in the list; ``after`` resumes right after it.
    """

    name: ClassVar[str] = "list"
    contract_version: ClassVar[str] = "1.0"
    Config = ListLoaderConfig

    def read(self, *, shard: Shard = Shard(), after: str | None = None) -> Iterator[Loaded]:
        first = 0 if after is None else int(after) + 1
        for i, text in enumerate(self.config.texts):
            doc_id = f"d{i}"
            if i < first:
                continue
            if doc_id == self.config.crash_at:
                raise LoaderCrash(f"crashed at {doc_id}")
            item: Document | DocumentError = (
                DocumentError(doc_id, "unreadable")
                if text.startswith("!")
                else Document(doc_id, text)
            )
            yield Loaded(str(i), item)


class CountLoaderConfig(ComponentConfig):
    documents: int


class CountLoader(Loader[CountLoaderConfig]):
    """Generates documents lazily, so a test can stream more than it would want to hold."""

    name: ClassVar[str] = "count"
    contract_version: ClassVar[str] = "1.0"
    Config = CountLoaderConfig

    def read(self, *, shard: Shard = Shard(), after: str | None = None) -> Iterator[Loaded]:
        for i in range(self.config.documents):
            yield Loaded(str(i), Document(f"d{i}", " ".join(["w"] * (1 + i % 15))))


class CountingSink(Sink[ComponentConfig]):
    """Counts what it is given and keeps nothing."""

    name: ClassVar[str] = "counting"
    contract_version: ClassVar[str] = "1.0"
    Config = ComponentConfig
    written: ClassVar[int] = 0

    def write(self, records: Sequence[OutputRecord]) -> None:
        CountingSink.written += len(records)

    def write_error(self, error: DocumentError) -> None:
        raise AssertionError("no document should fail")

    def close(self, complete: bool = True) -> None:
        pass


class ToyConfig(ComponentConfig):
    max_length: int = 16
    windows: bool = False
    """One example per word (its span that word) instead of one per document."""
    copy_examples: bool = False
    """``collate`` returns equal copies of its examples, not the objects it was given."""
    bfloat16_error: float = 0.0
    """Extra error the bfloat16 precision adds to every output (to fail the gate)."""
    width_by_length: bool = False
    """Rows 16 wide for batches of at most 4 tokens a row, 32 for longer (a broken model)."""
    nan: bool = False
    """Every output is NaN (a broken model, or broken weights)."""
    span_shift: int = 0
    """Moves every example's span this many characters on (past the text: a broken model)."""


class ToyModel(Model[ToyConfig]):
    """Words to hashed ids, one attention layer of 4 heads of 8, mean pool; 'boom' fails."""

    name: ClassVar[str] = "toy"
    contract_version: ClassVar[str] = "1.0"
    Config = ToyConfig

    @property
    def max_length(self) -> int:
        return self.config.max_length

    def load(self) -> Any:
        return {"table": np.random.default_rng(0).normal(size=(97, 32)).astype(np.float32)}

    def prepare(self, document: Document) -> Sequence[Example]:
        if document.text == "boom":
            raise ValueError("cannot prepare 'boom'")
        if self.config.windows:
            words = [(m.start(), m.end()) for m in re.finditer(r"\S+", document.text)]
            return [
                Example(
                    document.id,
                    i,
                    span,
                    1,
                    {"ids": np.asarray([hash(document.text[slice(*span)]) % 97])},
                )
                for i, span in enumerate(words)
            ]
        ids = [hash(w) % 97 for w in document.text.split()][: self.max_length] or [0]
        shift = self.config.span_shift
        span = (shift, len(document.text) + shift)
        return [Example(document.id, 0, span, len(ids), {"ids": np.asarray(ids)})]

    def collate(self, examples: Sequence[Example], batch_size: int, length: int) -> Batch:
        ids = np.zeros((batch_size, length), np.int32)
        mask = np.zeros((batch_size, length), np.int32)
        for row, example in enumerate(examples):
            ids[row, : example.length] = example.features["ids"]
            mask[row, : example.length] = 1
        if self.config.copy_examples:
            examples = [replace(example) for example in examples]
        return Batch(tuple(examples), {"ids": ids, "mask": mask}, batch_size, length)

    precision: str = "float32"

    def describe(self) -> dict[str, str]:
        return {**super().describe(), "heads": "4", "precision": self.precision}

    def precisions(self) -> Sequence[str]:
        return ("float32", "bfloat16")

    def with_precision(self, precision: str) -> ToyModel:
        if precision not in self.precisions():
            return super().with_precision(precision)  # type: ignore[return-value]
        other = type(self)(self.config)
        other.precision = precision
        return other

    def apply(
        self, params: Any, arrays: Mapping[str, jax.Array], attention: AttentionFn
    ) -> jax.Array:
        x = jnp.take(params["table"], arrays["ids"], axis=0)
        if self.precision == "bfloat16":
            x = x.astype(jnp.bfloat16)
        b, t, _ = x.shape
        heads = x.reshape(b, t, 4, 8)
        seg = arrays["mask"]
        out = attention(heads, heads, heads, segment_ids=SegmentIds(seg, seg)).reshape(b, t, 32)
        out = out.astype(jnp.float32)
        if self.precision == "bfloat16" and self.config.bfloat16_error:
            out = out + self.config.bfloat16_error * jnp.cos(jnp.arange(32, dtype=jnp.float32))
        weights = seg[..., None].astype(jnp.float32)
        pooled = (out * weights).sum(1) / jnp.maximum(weights.sum(1), 1.0)
        if self.config.nan:
            pooled = pooled * jnp.nan
        return pooled[:, :16] if self.config.width_by_length and t <= 4 else pooled


class FolderToyConfig(ToyConfig):
    weights: Path
    """A folder whose ``seed.txt`` seeds the table (a plain ``Path``, as a third party types it)."""


class FolderToy(ToyModel):
    """The toy model with its weights in a folder its config names, as a third party's model
    names a checkpoint: another folder of the same name holds other weights."""

    name: ClassVar[str] = "folder-toy"
    Config = FolderToyConfig  # type: ignore[assignment]
    config: FolderToyConfig  # type: ignore[assignment]

    def load(self) -> Any:
        seed = int((self.config.weights / "seed.txt").read_text(encoding="utf-8"))
        return {"table": np.random.default_rng(seed).normal(size=(97, 32)).astype(np.float32)}


class MemorySinkConfig(ComponentConfig):
    pass


class MemorySink(Sink[MemorySinkConfig]):
    """Keeps everything in class-level lists so a test can read what a run wrote."""

    name: ClassVar[str] = "memory"
    contract_version: ClassVar[str] = "1.0"
    Config = MemorySinkConfig
    records: ClassVar[list[OutputRecord]] = []
    errors: ClassVar[list[DocumentError]] = []
    closed: ClassVar[list[bool]] = []

    def write(self, records: Sequence[OutputRecord]) -> None:
        MemorySink.records.extend(records)

    def write_error(self, error: DocumentError) -> None:
        MemorySink.errors.append(error)

    def close(self, complete: bool = True) -> None:
        MemorySink.closed.append(complete)

    @classmethod
    def reset(cls) -> None:
        cls.records.clear()
        cls.errors.clear()
        cls.closed.clear()


class RecordingMonitor(Monitor[ComponentConfig]):
    name: ClassVar[str] = "recording"
    contract_version: ClassVar[str] = "1.0"
    events: ClassVar[list[Event]] = []

    def observe(self, event: Event) -> None:
        RecordingMonitor.events.append(event)


class ExplodingMonitor(Monitor[ComponentConfig]):
    name: ClassVar[str] = "exploding"
    contract_version: ClassVar[str] = "1.0"

    def observe(self, event: Event) -> None:
        raise RuntimeError("monitor bug")

    def close(self) -> None:
        raise RuntimeError("close bug")


class HangingMonitor(Monitor[ComponentConfig]):
    """Blocks in its first ``observe`` until the test sets ``release`` (a hung exporter)."""

    name: ClassVar[str] = "hanging"
    contract_version: ClassVar[str] = "1.0"
    release: ClassVar[threading.Event] = threading.Event()
    seen: ClassVar[list[Event]] = []

    def observe(self, event: Event) -> None:
        HangingMonitor.seen.append(event)
        HangingMonitor.release.wait()


class NeverAttention(NativeAttention):
    name: ClassVar[str] = "never"
    contract_version: ClassVar[str] = "1.1"
    is_reference: ClassVar[bool] = False
    auto_priority: ClassVar[int] = 10

    def supports(self, spec: AttentionSpec) -> Support:
        return Support.no(f"refuses head_dim {spec.head_dim}")


class WrongShapeAttention(NativeAttention):
    name: ClassVar[str] = "wrong-shape"
    contract_version: ClassVar[str] = "1.1"
    is_reference: ClassVar[bool] = False

    def __call__(self, q: jax.Array, k: jax.Array, v: jax.Array, **kwargs: Any) -> jax.Array:  # type: ignore[override]
        return super().__call__(q, k, v, **kwargs)[:, :, :1]


class OffByTenPercentAttention(NativeAttention):
    """Wrong numbers of the plausible kind: the right shape, 10 % off."""

    name: ClassVar[str] = "off-by-ten"
    contract_version: ClassVar[str] = "1.1"
    is_reference: ClassVar[bool] = False

    def __call__(self, q: jax.Array, k: jax.Array, v: jax.Array, **kwargs: Any) -> jax.Array:  # type: ignore[override]
        return super().__call__(q, k, v, **kwargs) * 1.1


class UncompilableAttention(NativeAttention):
    """Fails while being traced, as a kernel that cannot lower for a shape does."""

    name: ClassVar[str] = "uncompilable"
    contract_version: ClassVar[str] = "1.1"
    is_reference: ClassVar[bool] = False

    def __call__(self, q: jax.Array, k: jax.Array, v: jax.Array, **kwargs: Any) -> jax.Array:  # type: ignore[override]
        if isinstance(q, jax.core.Tracer) and q.shape[1] > 4:
            raise NotImplementedError(f"no lowering for length {q.shape[1]}")
        return super().__call__(q, k, v, **kwargs)


class LongOnlyAttention(NativeAttention):
    """Prefers itself for long sequences only (as a blockwise kernel does on a CPU)."""

    name: ClassVar[str] = "long-only"
    contract_version: ClassVar[str] = "1.1"
    is_reference: ClassVar[bool] = False

    def priority(self, spec: AttentionSpec) -> int:
        return 10 if spec.kv_len >= 8 else -1


def toy_registry(without: tuple[type[Any], ...] = ()) -> Registry:
    """The toy components as discovery would register them, less those in ``without``."""
    components: list[type[Any]] = [
        ListLoader,
        CountLoader,
        CountingSink,
        ToyModel,
        MemorySink,
        RecordingMonitor,
        ExplodingMonitor,
        HangingMonitor,
        NativeAttention,
        NeverAttention,
        WrongShapeAttention,
        OffByTenPercentAttention,
        UncompilableAttention,
        LongOnlyAttention,
        LocalExecutor,
    ]
    return Registry(
        ComponentInfo(
            c.kind, c.name, f"{c.__module__}:{c.__name__}", "tests", "0", "ok", "", c, "1.0"
        )
        for c in components
        if c not in without
    )


def with_attention(registry: Registry, cls: type[Any], distribution: str, version: str) -> Registry:
    """``registry`` and one more attention, ``cls``, as ``distribution`` would register it."""
    info = ComponentInfo(
        "attention", cls.name, f"{cls.__module__}:{cls.__name__}", distribution, version, "ok",
        "", cls, "1.1",
    )  # fmt: skip
    return Registry([*registry.entries(), info])


def two_document_pipeline(attention: str, registry: Registry) -> Any:
    """The toy pipeline of two short documents with ``attention`` (its YAML), parsed."""
    from seamline.core.config import parse_pipeline

    text = (
        "pipeline: toy\n"
        "loader: {use: list, with: {texts: ['one two three', 'four five']}}\n"
        "model: {use: toy}\n"
        f"attention: {attention}\n"
        "sink: {use: memory}\n"
        "run: {batch_size: 2, buckets: [4]}\n"
    )
    return parse_pipeline(text, "p.yaml", registry)
