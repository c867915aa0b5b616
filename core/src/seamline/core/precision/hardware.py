"""Does this hardware run a precision natively? Asked of the device, never assumed.

A lower precision pays only where the hardware has instructions for it; elsewhere it
is emulated and slower than float32. So a candidate is refused unless:

* ``float32``: always native.
* ``bfloat16``: on a TPU, always; on an NVIDIA GPU, compute capability 8.0 or newer
  (Ampere's bfloat16 tensor cores); on a CPU, one of the CPU features in
  :data:`BF16_CPU_FEATURES` (x86 AVX-512 BF16 or AMX-BF16, Arm's BF16 extension), as
  the kernel reports them in ``/proc/cpuinfo``.

``$SEAMLINE_CPU_FEATURES_HIDDEN`` (comma-separated feature names) hides features from
this check, as ``ONEDNN_MAX_CPU_ISA`` caps oneDNN: to see what ``precision: auto`` does
on a CPU without them, or to keep a fleet of mixed machines on one precision. It is
read as untrusted input: names only, bounded, and only the names this check looks for
(:data:`BF16_CPU_FEATURES`): a misspelling (``avx512bf16``) hid nothing, silently, and
the run chose the bfloat16 it was meant to keep away from. Nothing else reads it (the
``cpu-flash`` kernel asks the CPU itself which copy to run).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

from seamline.contracts import UserError

HIDDEN_VARIABLE = "SEAMLINE_CPU_FEATURES_HIDDEN"
BF16_CPU_FEATURES = ("avx512_bf16", "amx_bf16", "bf16")
"""CPU features that run bfloat16 matmuls natively (x86 AVX-512 BF16, AMX, Arm BF16)."""

CPUINFO = "/proc/cpuinfo"
_CPUINFO_LIMIT = 1 << 20
"""Bytes of /proc/cpuinfo read at most (the first processor's flags come first)."""
_FEATURE = re.compile(r"[a-z0-9_]{1,40}")
_MAX_HIDDEN = 64
MIN_BF16_CAPABILITY = (8, 0)


@dataclass(frozen=True, slots=True)
class Hardware:
    """What the precision check needs to know about the device a run computes on."""

    platform: str
    """JAX's platform name: cpu, gpu (cuda, rocm) or tpu."""
    device_kind: str
    cpu_features: frozenset[str] | None
    """The CPU's feature flags (after hiding), or None where they could not be read."""
    hidden: frozenset[str] = frozenset()
    compute_capability: str | None = None
    """An NVIDIA GPU's compute capability (``"9.0"``), else None."""

    @classmethod
    def detect(cls, environ: Mapping[str, str] | None = None) -> Hardware:
        """The first local device's platform, kind and, on a CPU, its feature flags."""
        from seamline.core.devices import jax_devices  # JAX only now: start-up costs

        env = os.environ if environ is None else environ
        device = jax_devices(local=True)[0]
        hidden = hidden_features(env.get(HIDDEN_VARIABLE, ""))
        features = read_cpu_features()
        if features is not None:
            features = features - hidden
        capability = getattr(device, "compute_capability", None)
        return cls(
            platform=device.platform,
            device_kind=str(device.device_kind),
            cpu_features=features,
            hidden=hidden,
            compute_capability=str(capability) if capability else None,
        )

    def native(self, precision: str) -> tuple[bool, str]:
        """Whether ``precision`` runs natively here, and the reason in words."""
        if precision == "float32":
            return True, "float32 runs natively everywhere"
        if precision != "bfloat16":
            return False, f"seamline knows no native support for {precision}"
        if self.platform == "tpu":
            return True, f"TPUs compute in bfloat16 natively ({self.device_kind})"
        if self.platform in ("gpu", "cuda", "rocm"):
            return self._gpu_bf16()
        return self._cpu_bf16()

    def _gpu_bf16(self) -> tuple[bool, str]:
        if self.compute_capability is None:
            return False, (
                f"the GPU {self.device_kind} reports no compute capability, so bfloat16 tensor "
                "cores cannot be confirmed"
            )
        try:
            major, minor = (int(part) for part in self.compute_capability.split(".")[:2])
        except ValueError:
            return False, f"unreadable compute capability {self.compute_capability!r}"
        if (major, minor) >= MIN_BF16_CAPABILITY:
            return True, (
                f"{self.device_kind} (compute capability {self.compute_capability}) has "
                "bfloat16 tensor cores"
            )
        return False, (
            f"{self.device_kind} (compute capability {self.compute_capability}) has no "
            "bfloat16 tensor cores (8.0 or newer needed): it would be emulated, slower than "
            "float32"
        )

    def _cpu_bf16(self) -> tuple[bool, str]:
        if self.cpu_features is None:
            return False, (
                f"this CPU's features could not be read from {CPUINFO}, so bfloat16 "
                "instructions cannot be confirmed"
            )
        found = [flag for flag in BF16_CPU_FEATURES if flag in self.cpu_features]
        hidden = [flag for flag in BF16_CPU_FEATURES if flag in self.hidden]
        why = f"; ${HIDDEN_VARIABLE} hides {', '.join(hidden)}" if hidden else ""
        if found:
            return True, f"this CPU has bfloat16 instructions ({', '.join(found)}{why})"
        return False, (
            f"this CPU has no bfloat16 instructions (looked for "
            f"{', '.join(BF16_CPU_FEATURES)}{why}): bfloat16 would be emulated, slower than "
            "float32"
        )

    def describe(self) -> dict[str, str]:
        """Span and record attributes: what was asked of the hardware."""
        out = {"platform": self.platform, "device_kind": self.device_kind}
        if self.compute_capability:
            out["compute_capability"] = self.compute_capability
        if self.cpu_features is not None:
            present = [f for f in BF16_CPU_FEATURES if f in self.cpu_features]
            out["bf16_features"] = ",".join(present) or "none"
        if self.hidden:
            out["hidden"] = ",".join(sorted(self.hidden))
        return out


def hidden_features(value: str) -> frozenset[str]:
    """The feature names in ``$SEAMLINE_CPU_FEATURES_HIDDEN``; a malformed value is refused."""
    names = [part.strip() for part in value.split(",") if part.strip()]
    bad = [name for name in names if not _FEATURE.fullmatch(name)]
    if bad or len(names) > _MAX_HIDDEN:
        shown = bad[0][:40] if bad else f"{len(names)} names"
        raise UserError(
            f"${HIDDEN_VARIABLE} must be comma-separated CPU feature names as /proc/cpuinfo "
            f"writes them (lower case, digits, '_'; at most {_MAX_HIDDEN}), e.g. "
            f"'avx512_bf16,amx_bf16'; found {shown!r}"
        )
    unknown = [name for name in names if name not in BF16_CPU_FEATURES]
    if unknown:
        raise UserError(
            f"${HIDDEN_VARIABLE} names {unknown[0]!r}, which is not a feature the precision "
            f"check looks for, so it would hide nothing: use {', '.join(BF16_CPU_FEATURES)} "
            "(as /proc/cpuinfo writes them)"
        )
    return frozenset(names)


def read_cpu_features(path: str = CPUINFO) -> frozenset[str] | None:
    """The first processor's ``flags`` (x86) or ``Features`` (Arm) line, or None."""
    value = first_cpuinfo_field(("flags", "Features"), path)
    if value is None:
        return None
    return frozenset(flag for flag in value.split() if _FEATURE.fullmatch(flag))


def first_cpuinfo_field(names: tuple[str, ...], path: str = CPUINFO) -> str | None:
    """The value of the first line of ``path`` whose field is one of ``names``, or None
    (unreadable, or no such line): the first processor's, whose lines come first."""
    try:
        with open(path, encoding="ascii", errors="replace") as handle:
            text = handle.read(_CPUINFO_LIMIT)
    except OSError:
        return None
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() in names:
            return value.strip()
    return None
