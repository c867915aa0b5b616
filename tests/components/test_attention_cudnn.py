"""``cudnn``: what it says it can serve, checked without a GPU.

The kernel itself needs an NVIDIA GPU with cuDNN, so these tests never call it.
They hold ``supports()`` to the checks JAX's cuDNN path makes (platform, dtype,
head size) and check that on this CPU the planner would be told no, with reasons
a person can act on, before anything is compiled.
"""

from __future__ import annotations

from importlib.metadata import entry_points

import jax
import pytest
from pydantic import ValidationError

from seamline.components.attention.cudnn import CudnnAttention, CudnnConfig
from seamline.contracts.testing import AttentionCase
from seamline.contracts.versions import compatibility_problem

ATTENTION = CudnnAttention(CudnnConfig())
GPU = ("gpu", "NVIDIA H100 80GB HBM3")


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("causal", [False, True])
def test_serves_half_precision_on_nvidia_gpus(dtype: str, causal: bool) -> None:
    case = AttentionCase(
        q_len=5, kv_len=300, heads=8, kv_heads=2, head_dim=128, dtype=dtype, causal=causal,
        segmented=True,
    )  # fmt: skip
    assert ATTENTION.supports(case.spec(*GPU))


def test_refuses_this_machine_before_any_call() -> None:
    device = jax.devices()[0]
    if device.platform == "gpu":
        pytest.skip("this machine has a GPU: the refusal is for the CPU")
    answer = ATTENTION.supports(AttentionCase(dtype="bfloat16").spec())  # this machine
    assert not answer
    assert answer.reasons == ("cuDNN attention runs only on NVIDIA GPUs; this is cpu",)


def test_refuses_other_platforms_and_non_nvidia_gpus() -> None:
    for platform in ("cpu", "tpu"):
        answer = ATTENTION.supports(AttentionCase(dtype="bfloat16").spec(platform, platform))
        assert answer.reasons == (f"cuDNN attention runs only on NVIDIA GPUs; this is {platform}",)
    answer = ATTENTION.supports(AttentionCase(dtype="bfloat16").spec("gpu", "AMD Instinct MI300X"))
    assert answer.reasons == (
        "cuDNN attention runs only on NVIDIA GPUs; this is AMD Instinct MI300X",
    )


def test_refuses_float32() -> None:
    answer = ATTENTION.supports(AttentionCase(dtype="float32").spec(*GPU))
    assert answer.reasons == ("cuDNN flash attention takes float16 or bfloat16, not float32",)


@pytest.mark.parametrize("head_dim", [4, 36, 136, 256])
def test_refuses_head_sizes_cudnn_cannot_tile(head_dim: int) -> None:
    answer = ATTENTION.supports(AttentionCase(head_dim=head_dim, dtype="float16").spec(*GPU))
    assert not answer
    (reason,) = answer.reasons
    assert reason.startswith("head_dim must be a multiple of 8 and at most 128")
    assert str(head_dim) in reason


def test_gives_every_reason_at_once() -> None:
    answer = ATTENTION.supports(AttentionCase(heads=3, kv_heads=2, head_dim=12).spec("cpu", "cpu"))
    assert len(answer.reasons) == 4
    assert "not a multiple of 2 key heads" in answer.reasons[0]


def test_priority_leads_on_gpus_only() -> None:
    assert ATTENTION.priority(AttentionCase(dtype="bfloat16").spec(*GPU)) == 20
    assert ATTENTION.priority(AttentionCase(dtype="bfloat16").spec("cpu", "cpu")) < 0


def test_is_registered_under_its_name_for_this_contract() -> None:
    (entry,) = [e for e in entry_points(group="seamline.attention") if e.name == "cudnn"]
    assert entry.load() is CudnnAttention
    assert CudnnAttention.name == "cudnn"
    assert compatibility_problem("attention", CudnnAttention.contract_version) is None
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        CudnnConfig(interpret=True)  # type: ignore[call-arg]
