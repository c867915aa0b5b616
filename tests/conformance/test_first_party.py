"""Every first-party component passes the conformance suite, as a third party's would.

These are the classes ``seamline check`` uses (entry points ``seamline.conformance``);
subclassing them here runs them in CI. The Pallas kernels run in interpret mode on
the CPU. cuDNN has no interpreter, so off GPU its check runs only where it can say
something: that the suite reports its refusal (see test_check_command.py).
"""

import jax
import pytest

from seamline.components import conformance


class TestNative(conformance.NativeConformance):
    pass


class TestXlaSdpa(conformance.XlaSdpaConformance):
    pass


class TestBlockwise(conformance.BlockwiseConformance):
    pass


class TestTpuFlash(conformance.TpuFlashConformance):
    pass


class TestTpuSplash(conformance.TpuSplashConformance):
    pass


class TestGpuFlash(conformance.GpuFlashConformance):
    pass


@pytest.mark.skipif(jax.default_backend() != "gpu", reason="cuDNN runs on NVIDIA GPUs only")
class TestCudnn(conformance.CudnnConformance):
    pass


@pytest.mark.slow
class TestBertEncoder(conformance.BertEncoderConformance):
    pass


class TestTextFiles(conformance.TextFilesConformance):
    pass


class TestJsonlLoader(conformance.JsonlLoaderConformance):
    pass


class TestLogMonitor(conformance.LogMonitorConformance):
    pass


class TestMemoryMonitor(conformance.MemoryMonitorConformance):
    pass


class TestMetricsMonitor(conformance.MetricsMonitorConformance):
    pass


class TestJsonlSink(conformance.JsonlSinkConformance):
    pass


class TestNpySink(conformance.NpySinkConformance):
    pass
