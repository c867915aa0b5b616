"""seamline-cpu-flash: a compiled, fused attention kernel for CPUs, behind seamline's seam."""

from seamline_cpu_flash.attention import CpuFlashAttention, CpuFlashConfig

__all__ = ["CpuFlashAttention", "CpuFlashConfig"]
