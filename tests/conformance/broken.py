"""Deliberately broken components: each keeps the contract but for one defect.

They are real components (a subclass of the kind's base class with a ``Config``,
a ``name`` and a ``contract_version``), so the suite treats them as it would a
third party's; test_suite_catches_defects.py checks that it catches each defect
with the check meant for it, and says what is wrong. The attention helpers
compute the right answer with the suite's own plain implementation and then break
it. ``ListLoader`` and ``LineSink`` are correct (they are the positive controls of
their broken subclasses, which differ from them by the defect alone).
"""

from __future__ import annotations

import itertools
import json
import os
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np
from pydantic import ConfigDict

from seamline.contracts import (
    Attention,
    AttentionFn,
    AttentionSpec,
    Batch,
    ComponentConfig,
    Document,
    DocumentError,
    Example,
    ExecutionReport,
    Executor,
    Job,
    Loaded,
    Loader,
    Model,
    Monitor,
    OutputRecord,
    RelativeBias,
    SegmentIds,
    Shard,
    ShardFailed,
    ShardReport,
    ShardTask,
    ShardWorker,
    Sink,
    Support,
    UnsupportedError,
    UserError,
)
from seamline.contracts.events import Compiled
from seamline.contracts.testing import dense_attention

# -- attention --------------------------------------------------------------------------


class NoConfig(ComponentConfig):
    """Nothing to configure."""


class _BrokenAttention(Attention[NoConfig]):
    """Claims every case and answers with the suite's plain attention, unless overridden."""

    contract_version: ClassVar[str] = "1.1"
    Config: ClassVar[type[ComponentConfig]] = NoConfig

    def supports(self, spec: AttentionSpec) -> Support:
        return Support.yes()

    def __call__(
        self,
        q: jax.Array,
        k: jax.Array,
        v: jax.Array,
        *,
        segment_ids: SegmentIds | None = None,
        causal: bool = False,
        scale: float | None = None,
        bias: RelativeBias | None = None,
    ) -> jax.Array:
        return dense_attention(
            q, k, v, segment_ids=segment_ids, causal=causal, scale=scale, bias=bias
        )


class OffByOnePercentAttention(_BrokenAttention):
    """Wrong numerics: the right answer times 1.01."""

    name: ClassVar[str] = "off-by-one-percent"

    def __call__(self, q: jax.Array, k: jax.Array, v: jax.Array, **kwargs: Any) -> jax.Array:
        return super().__call__(q, k, v, **kwargs) * jnp.asarray(1.01, q.dtype)


class SlightlyOffAttention(_BrokenAttention):
    """Wrong numerics, barely: the right answer times 1.0001.

    In float32 that is about 2e-4 off on the suite's inputs: ten times under the
    contract's float32 tolerance (2e-3), twenty times over the band the suite allows
    (four times a plain computation's error, at least 1e-5). Only the tight band
    catches it.
    """

    name: ClassVar[str] = "slightly-off"

    def __call__(self, q: jax.Array, k: jax.Array, v: jax.Array, **kwargs: Any) -> jax.Array:
        return super().__call__(q, k, v, **kwargs) * jnp.asarray(1 + 1e-4, q.dtype)


class DroppedHeadAttention(_BrokenAttention):
    """Wrong shape: the last query head is lost."""

    name: ClassVar[str] = "dropped-head"

    def __call__(self, q: jax.Array, k: jax.Array, v: jax.Array, **kwargs: Any) -> jax.Array:
        return super().__call__(q, k, v, **kwargs)[:, :, :-1]


class SegmentBlindAttention(_BrokenAttention):
    """Claims segment ids (it claims everything) and silently computes unmasked."""

    name: ClassVar[str] = "segment-blind"

    def __call__(
        self,
        q: jax.Array,
        k: jax.Array,
        v: jax.Array,
        *,
        segment_ids: SegmentIds | None = None,
        causal: bool = False,
        scale: float | None = None,
        bias: RelativeBias | None = None,
    ) -> jax.Array:
        return dense_attention(q, k, v, causal=causal, scale=scale)


class NanRowsAttention(_BrokenAttention):
    """A textbook masked softmax: a query with no key to attend to gets NaN, not zeros."""

    name: ClassVar[str] = "nan-rows"

    def __call__(
        self,
        q: jax.Array,
        k: jax.Array,
        v: jax.Array,
        *,
        segment_ids: SegmentIds | None = None,
        causal: bool = False,
        scale: float | None = None,
        bias: RelativeBias | None = None,
    ) -> jax.Array:
        group = q.shape[2] // k.shape[2]
        k, v = jnp.repeat(k, group, axis=2), jnp.repeat(v, group, axis=2)
        factor = q.shape[-1] ** -0.5 if scale is None else scale
        logits = jnp.einsum("bqnh,bknh->bnqk", q, k).astype(jnp.float32) * factor
        q_len, kv_len = q.shape[1], k.shape[1]
        mask = jnp.ones((1, 1, q_len, kv_len), bool)
        if segment_ids is not None:
            mask = mask & (segment_ids.q[:, :, None] == segment_ids.kv[:, None, :])[:, None]
        if causal:
            rows = jnp.arange(q_len)[:, None] + (kv_len - q_len)
            mask = mask & (jnp.arange(kv_len)[None, :] <= rows)[None, None]
        weights = jax.nn.softmax(jnp.where(mask, logits, -jnp.inf), axis=-1)  # all -inf: NaN
        return jnp.einsum("bnqk,bknh->bqnh", weights.astype(v.dtype), v).astype(q.dtype)


class Bf16GarbageAttention(_BrokenAttention):
    """Right in float32; in bfloat16 a "fast path" forgets the 1/sqrt(H) scale."""

    name: ClassVar[str] = "bf16-garbage"

    def __call__(
        self,
        q: jax.Array,
        k: jax.Array,
        v: jax.Array,
        *,
        segment_ids: SegmentIds | None = None,
        causal: bool = False,
        scale: float | None = None,
        bias: RelativeBias | None = None,
    ) -> jax.Array:
        if q.dtype == jnp.bfloat16:
            scale = 1.0
        return dense_attention(q, k, v, segment_ids=segment_ids, causal=causal, scale=scale)


class BiasBlindAttention(_BrokenAttention):
    """Declares the relative bias (contract 1.2) and silently leaves it out of the scores."""

    name: ClassVar[str] = "bias-blind"
    contract_version: ClassVar[str] = "1.2"
    score_biases: ClassVar[tuple[str, ...]] = ("relative",)

    def __call__(
        self,
        q: jax.Array,
        k: jax.Array,
        v: jax.Array,
        *,
        segment_ids: SegmentIds | None = None,
        causal: bool = False,
        scale: float | None = None,
        bias: RelativeBias | None = None,
    ) -> jax.Array:
        return dense_attention(q, k, v, segment_ids=segment_ids, causal=causal, scale=scale)


class BiasIndexPositionsAttention(_BrokenAttention):
    """Adds the bias by row index, ignoring the positions it is given.

    Within one contiguous segment the distance between two tokens is the same by
    index as by position, so packed self-attention cannot tell; where queries and
    keys are not aligned index for index (``Tq != Tk``, positions that restart on
    each side), it is wrong.
    """

    name: ClassVar[str] = "bias-index-positions"
    contract_version: ClassVar[str] = "1.2"
    score_biases: ClassVar[tuple[str, ...]] = ("relative",)

    def __call__(
        self,
        q: jax.Array,
        k: jax.Array,
        v: jax.Array,
        *,
        segment_ids: SegmentIds | None = None,
        causal: bool = False,
        scale: float | None = None,
        bias: RelativeBias | None = None,
    ) -> jax.Array:
        if bias is not None:
            batch, q_len, kv_len = q.shape[0], q.shape[1], k.shape[1]
            rows = jnp.broadcast_to(jnp.arange(q_len), (batch, q_len))
            columns = jnp.broadcast_to(jnp.arange(kv_len), (batch, kv_len))
            bias = RelativeBias(bias.values, rows, columns)
        return dense_attention(
            q, k, v, segment_ids=segment_ids, causal=causal, scale=scale, bias=bias
        )


class LateRefusalAttention(_BrokenAttention):
    """Says yes to every case in ``supports()``, then refuses causal calls when called."""

    name: ClassVar[str] = "late-refusal"

    def __call__(self, q: jax.Array, k: jax.Array, v: jax.Array, **kwargs: Any) -> jax.Array:
        if kwargs.get("causal"):
            raise UnsupportedError("causal masking is not implemented")
        return super().__call__(q, k, v, **kwargs)


class ScaleBlindAttention(_BrokenAttention):
    """Always scales the scores by ``1/sqrt(H)``, whatever ``scale`` the caller passes."""

    name: ClassVar[str] = "scale-blind"

    def __call__(self, q: jax.Array, k: jax.Array, v: jax.Array, **kwargs: Any) -> jax.Array:
        return super().__call__(q, k, v, **{**kwargs, "scale": None})


class FirstKeysAttention(_BrokenAttention):
    """Reads only the first 128 keys (one block of a tiled kernel; the next block lost)."""

    name: ClassVar[str] = "first-keys"

    def __call__(
        self,
        q: jax.Array,
        k: jax.Array,
        v: jax.Array,
        *,
        segment_ids: SegmentIds | None = None,
        **kwargs: Any,
    ) -> jax.Array:
        if segment_ids is not None:
            segment_ids = SegmentIds(segment_ids.q, segment_ids.kv[:, :128])
        return super().__call__(q, k[:, :128], v[:, :128], segment_ids=segment_ids, **kwargs)


class TwoRowsAttention(_BrokenAttention):
    """Batch rows past the second attend to the keys of row ``b % 2`` (a grid of two rows)."""

    name: ClassVar[str] = "two-rows"

    def __call__(self, q: jax.Array, k: jax.Array, v: jax.Array, **kwargs: Any) -> jax.Array:
        rows = jnp.arange(k.shape[0]) % 2
        return super().__call__(q, k[rows], v[rows], **kwargs)


class FirstRowSegmentsAttention(_BrokenAttention):
    """Every row attends as row 0's documents are laid out (one row's segment ids read)."""

    name: ClassVar[str] = "first-row-segments"

    def __call__(self, q: jax.Array, k: jax.Array, v: jax.Array, **kwargs: Any) -> jax.Array:
        ids = kwargs.get("segment_ids")
        if ids is not None:
            kwargs["segment_ids"] = SegmentIds(
                jnp.broadcast_to(ids.q[:1], ids.q.shape), jnp.broadcast_to(ids.kv[:1], ids.kv.shape)
            )
        return super().__call__(q, k, v, **kwargs)


class EightDocumentsAttention(_BrokenAttention):
    """Only the first 8 packed documents of a row kept apart: the rest attend as one."""

    name: ClassVar[str] = "eight-documents"

    def __call__(self, q: jax.Array, k: jax.Array, v: jax.Array, **kwargs: Any) -> jax.Array:
        ids = kwargs.get("segment_ids")
        if ids is not None:
            first = ids.q[:, :1]  # each row's first document id: keep 8 from there
            kwargs["segment_ids"] = SegmentIds(
                jnp.minimum(ids.q, first + 7), jnp.minimum(ids.kv, first + 7)
            )
        return super().__call__(q, k, v, **kwargs)


class FourRowsAttention(_BrokenAttention):
    """Rows past the fourth get row 0's keys and values (a grid of four rows)."""

    name: ClassVar[str] = "four-rows"

    def __call__(self, q: jax.Array, k: jax.Array, v: jax.Array, **kwargs: Any) -> jax.Array:
        if q.shape[0] > 4:
            k, v = k.at[4:].set(k[0:1]), v.at[4:].set(v[0:1])
        return super().__call__(q, k, v, **kwargs)


class TracedChoiceAttention(_BrokenAttention):
    """Picks a factor each time it is traced, as a block size timed by an autotuner.

    Within one compiled function it answers alike every time; compiled again, in this
    process or the next run's, it answers otherwise (by about 1e-6: far inside every
    tolerance, so only a bitwise comparison across compilations sees it).
    """

    name: ClassVar[str] = "traced-choice"
    _traces: ClassVar[itertools.count[int]] = itertools.count(1)

    def __call__(self, q: jax.Array, k: jax.Array, v: jax.Array, **kwargs: Any) -> jax.Array:
        factor = 1 + next(self._traces) * 2**-20
        return super().__call__(q, k, v, **kwargs) * jnp.asarray(factor, q.dtype)


class SlowFirstAnswerAttention(_BrokenAttention):
    """Answers its first ``supports()`` (and first ``priority()``) late, then at once.

    As a kernel that probes its device or imports a compiler on first use: the host
    gives up on the late answer and refuses the shape, so a run that names it stops.
    ``DELAY_S`` is set by the test, past the limit it sets for the suite.
    """

    name: ClassVar[str] = "slow-first-answer"
    DELAY_S: ClassVar[float] = 0.0

    def __init__(self, config: NoConfig) -> None:
        super().__init__(config)
        self._answered: set[str] = set()

    def _first_time(self, question: str) -> None:
        if question not in self._answered:
            self._answered.add(question)
            time.sleep(self.DELAY_S)

    def supports(self, spec: AttentionSpec) -> Support:
        self._first_time("supports")
        return Support.yes()

    def priority(self, spec: AttentionSpec) -> int:
        self._first_time("priority")
        return self.auto_priority


class FutureContractAttention(_BrokenAttention):
    """Declares an attention contract newer than any this seamline-contracts hosts."""

    name: ClassVar[str] = "future-contract"
    contract_version: ClassVar[str] = "1.99"


class MuteRefusalAttention(_BrokenAttention):
    """Refuses everything without a reason (``Support.no()`` would not even allow that)."""

    name: ClassVar[str] = "mute-refusal"

    def supports(self, spec: AttentionSpec) -> Support:
        return Support(False, ())


# -- models -----------------------------------------------------------------------------


class CharModel(Model[NoConfig]):
    """A correct model: characters, one self-attention through the seam, a mean per example.

    Each character code (mod 256) has a random embedding of ``HEADS x HEAD_DIM``; the
    attention is confined to the example by segment ids, padding is segment 0, and the
    output is the mean of the attention's output over the example's own positions.
    """

    name: ClassVar[str] = "chars"
    contract_version: ClassVar[str] = "1.0"
    Config: ClassVar[type[ComponentConfig]] = NoConfig
    HEADS: ClassVar[int] = 2
    HEAD_DIM: ClassVar[int] = 4

    @property
    def max_length(self) -> int:
        return 32

    def load(self) -> Any:
        rng = np.random.default_rng(0)
        return {"embed": rng.standard_normal((256, self.HEADS, self.HEAD_DIM)).astype(np.float32)}

    def prepare(self, document: Document) -> list[Example]:
        text = document.text or " "
        step = self.max_length
        return [
            Example(
                document.id,
                index,
                (min(start, len(document.text)), min(start + step, len(document.text))),
                len(text[start : start + step]),
                {"ids": np.asarray([ord(c) % 256 for c in text[start : start + step]], np.int32)},
            )
            for index, start in enumerate(range(0, len(text), step))
        ]

    def collate(
        self,
        examples: Sequence[Example],
        batch_size: int,
        length: int,
        rows: Sequence[int] | None = None,
    ) -> Batch:
        ids = np.zeros((batch_size, length), np.int32)
        segments = np.zeros((batch_size, length), np.int32)
        for row, example in enumerate(examples):
            ids[row, : example.length] = example.features["ids"]
            segments[row, : example.length] = 1
        return Batch(tuple(examples), {"ids": ids, "segments": segments}, batch_size, length)

    def apply(
        self, params: Any, arrays: Mapping[str, jax.Array], attention: AttentionFn
    ) -> jax.Array:
        x = params["embed"][arrays["ids"]]  # [B, T, N, H]
        segments = arrays["segments"]
        attended = attention(x, x, x, segment_ids=SegmentIds(segments, segments))
        return self.pool(x, attended, segments)

    def pool(self, x: jax.Array, attended: jax.Array, segments: jax.Array) -> jax.Array:
        """The mean of the attention's output over each row's real positions: ``[B, N*H]``."""
        real = (segments != 0)[:, :, None].astype(jnp.float32)
        flat = attended.reshape(*attended.shape[:2], -1)
        return (flat * real).sum(axis=1) / jnp.maximum(real.sum(axis=1), 1.0)


class AttentionDiscardingModel(CharModel):
    """Calls the attention it is given and pools its input instead: the result is lost."""

    name: ClassVar[str] = "attention-discarding"

    def pool(self, x: jax.Array, attended: jax.Array, segments: jax.Array) -> jax.Array:
        return super().pool(x, x, segments)


class LengthWidthModel(CharModel):
    """Past 16 positions, appends a second pooling (here the same mean): rows twice as wide."""

    name: ClassVar[str] = "length-width"

    def pool(self, x: jax.Array, attended: jax.Array, segments: jax.Array) -> jax.Array:
        mean = super().pool(x, attended, segments)
        if segments.shape[1] <= 16:
            return mean
        return jnp.concatenate([mean, mean], axis=1)


class SpanPastTheTextModel(CharModel):
    """Gives each window the span 1000 characters on from its own: past any sample text."""

    name: ClassVar[str] = "span-past-the-text"

    def prepare(self, document: Document) -> list[Example]:
        return [
            replace(example, span=(example.span[0] + 1000, example.span[1] + 1000))
            for example in super().prepare(document)
        ]


# -- monitors ---------------------------------------------------------------------------


class RaisingMonitor(Monitor[NoConfig]):
    """Breaks on one event type, as a monitor reading a field that is not there would."""

    name: ClassVar[str] = "raising"
    contract_version: ClassVar[str] = "1.1"
    Config: ClassVar[type[ComponentConfig]] = NoConfig

    def observe(self, event: Any) -> None:
        if isinstance(event, Compiled):
            raise KeyError("compile_seconds")


class LaxConfig(ComponentConfig):
    """A config that lets unknown fields through: a typo would be ignored silently."""

    model_config = ConfigDict(extra="allow", frozen=True)

    verbose: bool = False


class LaxConfigMonitor(Monitor[LaxConfig]):
    """Correct in what it does; its Config accepts unknown fields."""

    name: ClassVar[str] = "lax-config"
    contract_version: ClassVar[str] = "1.1"
    Config: ClassVar[type[ComponentConfig]] = LaxConfig

    def observe(self, event: Any) -> None:
        pass


class NamesForTypesMonitor(Monitor[NoConfig]):
    """Says which events it observes by name, not by type: a host cannot route by it."""

    name: ClassVar[str] = "names-for-types"
    contract_version: ClassVar[str] = "1.6"
    Config: ClassVar[type[ComponentConfig]] = NoConfig

    @property
    def observes(self) -> Any:
        return ("BatchDone", "RunFinished")

    def observe(self, event: Any) -> None:
        pass


# -- loaders ----------------------------------------------------------------------------


class ListLoaderConfig(ComponentConfig):
    path: Path


def write_texts(directory: Path, texts: Sequence[str | None]) -> Path:
    """The input of the list loaders: a JSON list of texts, null for an unreadable one."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "texts.json"
    path.write_text(json.dumps(list(texts)), encoding="utf-8")
    return path


class ListLoader(Loader[ListLoaderConfig]):
    """A correct loader over a JSON list of texts; the cursor is the item's position."""

    name: ClassVar[str] = "list"
    contract_version: ClassVar[str] = "1.2"
    Config: ClassVar[type[ComponentConfig]] = ListLoaderConfig

    def read(self, *, shard: Shard = Shard(), after: str | None = None) -> Iterator[Loaded]:
        texts = json.loads(self.config.path.read_text(encoding="utf-8"))
        first = self.first_position(after)
        for position, text in enumerate(texts):
            if position < first or not self.owns(shard, position):
                continue
            item = self.item(position, text)
            if item is not None:
                yield Loaded(str(position), item)

    def size(self, *, shard: Shard = Shard()) -> int | None:
        """The texts the shard owns (loader contract 1.1)."""
        texts = json.loads(self.config.path.read_text(encoding="utf-8"))
        return sum(1 for position in range(len(texts)) if self.owns(shard, position))

    def position(self, after: str, *, shard: Shard = Shard()) -> int | None:
        """The items the shard owns up to and including the cursor's (loader contract 1.2)."""
        return sum(1 for position in range(int(after) + 1) if self.owns(shard, position))

    def first_position(self, after: str | None) -> int:
        return 0 if after is None else int(after) + 1

    def owns(self, shard: Shard, position: int) -> bool:
        return shard.owns(position)

    def item(self, position: int, text: str | None) -> Document | DocumentError | None:
        if text is None:
            return DocumentError(f"doc-{position}", "null: unreadable")
        return Document(f"doc-{position}", text)


class OverlappingShardsLoader(ListLoader):
    """Every shard also reads the first item (an off-by-one in the ownership test)."""

    name: ClassVar[str] = "overlapping-shards"

    def owns(self, shard: Shard, position: int) -> bool:
        return position == 0 or shard.owns(position)


class RepeatingResumeLoader(ListLoader):
    """Resumes *at* the cursor instead of after it: the last item is read twice."""

    name: ClassVar[str] = "repeating-resume"

    def first_position(self, after: str | None) -> int:
        return 0 if after is None else int(after)


class MiscountingLoader(ListLoader):
    """Says the whole input's size for every shard (the shard forgotten in ``size``)."""

    name: ClassVar[str] = "miscounting"

    def size(self, *, shard: Shard = Shard()) -> int | None:
        return super().size()


class PositionBeforeLoader(ListLoader):
    """``position()`` counts the items before the cursor, not up to and including it."""

    name: ClassVar[str] = "position-before"

    def position(self, after: str, *, shard: Shard = Shard()) -> int | None:
        counted = super().position(after, shard=shard)
        return None if counted is None else counted - 1


class DroppingLoader(ListLoader):
    """Skips what it cannot read instead of yielding a DocumentError."""

    name: ClassVar[str] = "dropping"

    def item(self, position: int, text: str | None) -> Document | DocumentError | None:
        return None if text is None else Document(f"doc-{position}", text)


class SidecarLoader(ListLoader):
    """Its configuration names one file, but it also reads the ``.md`` files beside it (one
    document per line): files the host does not fingerprint, so a resume would not see
    them change."""

    name: ClassVar[str] = "sidecar"

    def read(self, *, shard: Shard = Shard(), after: str | None = None) -> Iterator[Loaded]:
        yield from super().read(shard=shard, after=after)
        if shard.index != 0:
            return
        beside = sorted(self.config.path.parent.glob("*.md"))
        lines = [line for note in beside for line in note.read_text("utf-8").splitlines()]
        first = 0 if after is None or not after.startswith("md-") else int(after[3:]) + 1
        for number in range(first, len(lines)):
            yield Loaded(f"md-{number}", Document(f"md-{number}", lines[number]))


# -- sinks ------------------------------------------------------------------------------


class LineSinkConfig(ComponentConfig):
    path: Path


class LineSink(Sink[LineSinkConfig]):
    """A correct resumable JSON-lines sink: a hidden partial file, a checkpoint, a rename.

    ``commit`` records the cursor and the partial file's length; ``recover`` cuts the
    file back to that length; ``close(True)`` renames it into place. It stores each
    record's text (sink contract 1.2) and metadata, and its errors among the records.
    """

    name: ClassVar[str] = "lines"
    contract_version: ClassVar[str] = "1.4"
    Config: ClassVar[type[ComponentConfig]] = LineSinkConfig
    resumable: ClassVar[bool] = True

    def __init__(self, config: LineSinkConfig) -> None:
        super().__init__(config)
        self._closed = False

    @property
    def partial(self) -> Path:
        return self.config.path.with_name(f".{self.config.path.name}.partial")

    @property
    def checkpoint(self) -> Path:
        return self.config.path.with_name(f".{self.config.path.name}.checkpoint")

    def start(self, manifest: Mapping[str, Any]) -> None:
        self.checkpoint.unlink(missing_ok=True)
        self.partial.parent.mkdir(parents=True, exist_ok=True)
        self.partial.write_bytes(b"")

    def recover(self, manifest: Mapping[str, Any]) -> str | None:
        if not self.checkpoint.exists():
            self.start(manifest)
            return None
        state = json.loads(self.checkpoint.read_text(encoding="utf-8"))
        self.cut_back(int(state["bytes"]))
        return str(state["cursor"])

    def cut_back(self, length: int) -> None:
        """Drop what was written after the last commit."""
        os.truncate(self.partial, length)

    def commit(self, cursor: str) -> None:
        state = {"cursor": cursor, "bytes": self.partial.stat().st_size}
        self.checkpoint.write_text(json.dumps(state), encoding="utf-8")

    def _append(self, lines: Sequence[dict[str, Any]]) -> None:
        with self.partial.open("a", encoding="utf-8") as out:
            out.writelines(json.dumps(line) + "\n" for line in lines)

    def write(self, records: Sequence[OutputRecord]) -> None:
        self._append([self.line(r) for r in records])

    def line(self, record: OutputRecord) -> dict[str, Any]:
        """One record as a JSON object."""
        return {
            "id": record.doc_id,
            "window": int(record.index),
            "span": [int(record.span[0]), int(record.span[1])],
            "text": record.text,
            "metadata": dict(record.metadata),
            "embedding": np.asarray(record.vector, np.float64).tolist(),
        }

    def write_error(self, error: DocumentError) -> None:
        self._append([{"error": error.id, "reason": error.reason}])

    def close(self, complete: bool = True) -> None:
        if self._closed:
            return
        self._closed = True
        if complete:
            self.checkpoint.unlink(missing_ok=True)
            os.replace(self.partial, self.config.path)
        elif not self.checkpoint.exists():
            self.partial.unlink(missing_ok=True)


def read_lines(path: Path) -> list[OutputRecord] | None:
    """What a reader sees at ``path`` (a LineSink's output): None when nothing is there."""
    if not path.exists():
        return None
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return [
        OutputRecord(
            row["id"],
            row["window"],
            tuple(row["span"]),
            np.asarray(row["embedding"], np.float32),
            row["metadata"],
            row["text"],
        )
        for row in rows
        if "error" not in row
    ]


def read_line_errors(path: Path) -> list[dict[str, Any]] | None:
    """The errors a reader sees at ``path`` (a LineSink's output): None when nothing is there."""
    if not path.exists():
        return None
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return [{"id": row["error"], "reason": row["reason"]} for row in rows if "error" in row]


class DuplicatingSink(LineSink):
    """Claims to resume, but recover() keeps what was written after the last commit."""

    name: ClassVar[str] = "duplicating"

    def cut_back(self, length: int) -> None:
        pass


class TextDroppingSink(LineSink):
    """Declares sink contract 1.4 and stores no text (a column forgotten in its schema)."""

    name: ClassVar[str] = "text-dropping"

    def line(self, record: OutputRecord) -> dict[str, Any]:
        return {**super().line(record), "text": None}


class MetadataAsTextSink(LineSink):
    """Stores every metadata value as a string (``"line": "0"``, not ``0``)."""

    name: ClassVar[str] = "metadata-as-text"

    def line(self, record: OutputRecord) -> dict[str, Any]:
        metadata = {key: str(value) for key, value in record.metadata.items()}
        return {**super().line(record), "metadata": metadata}


class OverflowDroppingSink(LineSink):
    """Buffers records until commit or close, and drops what overflows its 1,000 rows."""

    name: ClassVar[str] = "overflow-dropping"
    CAPACITY: ClassVar[int] = 1000

    def __init__(self, config: LineSinkConfig) -> None:
        super().__init__(config)
        self._buffer: list[dict[str, Any]] = []

    def write(self, records: Sequence[OutputRecord]) -> None:
        room = self.CAPACITY - len(self._buffer)
        self._buffer.extend(self.line(r) for r in records[: max(room, 0)])

    def flush(self) -> None:
        """Append the buffered records to the partial file."""
        self._append(self._buffer)
        self._buffer = []

    def commit(self, cursor: str) -> None:
        self.flush()
        super().commit(cursor)

    def close(self, complete: bool = True) -> None:
        self.flush()
        super().close(complete)


class ErrorDroppingSink(LineSink):
    """Accepts the documents set aside and keeps none of them."""

    name: ClassVar[str] = "error-dropping"

    def write_error(self, error: DocumentError) -> None:
        pass


class EagerSink(LineSink):
    """Writes straight to the final path: readers see a run before it is complete."""

    name: ClassVar[str] = "eager"

    @property
    def partial(self) -> Path:
        return self.config.path


class PathSpellingSink(LineSink):
    """Records its partial file's absolute path in the checkpoint and compares it, on
    resume, with the configured path as given: relative paths refuse their own checkpoint."""

    name: ClassVar[str] = "path-spelling"

    def commit(self, cursor: str) -> None:
        super().commit(cursor)
        state = json.loads(self.checkpoint.read_text(encoding="utf-8"))
        state["partial"] = str(self.partial.absolute())
        self.checkpoint.write_text(json.dumps(state), encoding="utf-8")

    def recover(self, manifest: Mapping[str, Any]) -> str | None:
        if self.checkpoint.exists():
            recorded = Path(json.loads(self.checkpoint.read_text(encoding="utf-8"))["partial"])
            if recorded.parent != self.config.path.parent:
                raise UserError(
                    f"cannot resume: the checkpoint was written for other files ({recorded})"
                )
        return super().recover(manifest)


# -- executors -------------------------------------------------------------------------------


class SerialExecutor(Executor[ComponentConfig]):
    """Correct: two shards, one after the other, in one worker here (a positive control)."""

    name: ClassVar[str] = "serial"
    contract_version: ClassVar[str] = "1.0"

    def tasks_to_run(self, tasks: Sequence[ShardTask]) -> list[ShardTask]:
        return list(tasks)

    def execute(self, job: Job) -> ExecutionReport:
        tasks = job.plan(2)
        worker = job.worker()
        reports: list[ShardReport] = []
        try:
            for task in self.tasks_to_run(tasks):
                try:
                    reports.append(worker.run(task))
                except ShardFailed:
                    if not self.swallow_failures:
                        raise
        finally:
            worker.close()
        return ExecutionReport(self.name, tuple(reports), 1, 0.0)

    swallow_failures: ClassVar[bool] = False


class TwiceExecutor(SerialExecutor):
    """Runs every task twice (an at-least-once retry policy)."""

    name: ClassVar[str] = "twice"

    def tasks_to_run(self, tasks: Sequence[ShardTask]) -> list[ShardTask]:
        return [*tasks, *tasks]


class ContextDroppingExecutor(SerialExecutor):
    """Sends tasks without the job's trace context (spans leave the run's trace)."""

    name: ClassVar[str] = "context-dropping"

    def tasks_to_run(self, tasks: Sequence[ShardTask]) -> list[ShardTask]:
        return [ShardTask(t.run_id, t.shard, t.resume) for t in tasks]


class SwallowingExecutor(SerialExecutor):
    """Reports the shards that succeeded and drops the one that failed."""

    name: ClassVar[str] = "swallowing"
    swallow_failures: ClassVar[bool] = True


class ThreadedExecutor(Executor[ComponentConfig]):
    """Correct at executor contract 1.2: two shards on threads, with workers built as for
    other processes (``worker_factory``), their progress forwarded while they run."""

    name: ClassVar[str] = "threaded"
    contract_version: ClassVar[str] = "1.2"
    forwards: ClassVar[bool] = True

    def execute(self, job: Job) -> ExecutionReport:
        tasks = job.plan(2)
        factory = job.worker_factory()
        workers = [factory() for _ in tasks]
        reports: dict[int, ShardReport] = {}

        def run(worker: ShardWorker, task: ShardTask) -> None:
            reports[task.shard.index] = worker.run(task)

        threads = [
            threading.Thread(target=run, args=pair) for pair in zip(workers, tasks, strict=True)
        ]
        for thread in threads:
            thread.start()
        while any(thread.is_alive() for thread in threads):
            for worker in workers:
                progress = worker.progress()
                if progress is not None and self.forwards:
                    job.progress(progress)
            time.sleep(0.05)
        done = tuple(reports[task.shard.index] for task in tasks if task.shard.index in reports)
        return ExecutionReport(self.name, done, len(workers), 0.0)


class SilentExecutor(ThreadedExecutor):
    """Declares executor contract 1.2, and forwards no progress: the bar sits at 0."""

    name: ClassVar[str] = "silent"
    forwards: ClassVar[bool] = False
