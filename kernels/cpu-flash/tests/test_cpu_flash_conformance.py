"""cpu-flash passes seamline's conformance suite, in both thread settings."""

from seamline_cpu_flash.conformance import CpuFlashConformance


class TestCpuFlash(CpuFlashConformance):
    pass
