"""Several local devices are used data-parallel, and give the one-device run's embeddings.

JAX fixes its device count when it starts, so each run is a process of its own:
one as the machine is, one with the CPU split into four devices
(``--xla_force_host_platform_device_count=4``). The real model runs in both; every
window's vector must agree within 1e-6, and the second run must really have split
its batches over four devices.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.readback import read_records

ROOT = Path(__file__).parents[2]


def _run(out: Path, devices: int | None) -> dict[str, object]:
    env = dict(os.environ)
    flags = env.get("XLA_FLAGS", "")
    if devices is not None:
        flags = f"{flags} --xla_force_host_platform_device_count={devices}".strip()
    env.update({"XLA_FLAGS": flags, "JAX_PLATFORMS": "cpu"})
    done = subprocess.run(
        [sys.executable, "-m", "tests.scaling._device_run", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


@pytest.mark.slow
def test_four_devices_give_the_one_device_embeddings(tmp_path: Path) -> None:
    one = _run(tmp_path / "one", None)
    four = _run(tmp_path / "four", 4)
    assert one == {"devices": 1, "split_over": [1]}
    assert four == {"devices": 4, "split_over": [4]}, four
    single = {(r.doc_id, r.index): r for r in read_records(tmp_path / "one" / "emb.jsonl") or []}
    split = {(r.doc_id, r.index): r for r in read_records(tmp_path / "four" / "emb.jsonl") or []}
    assert single
    assert sorted(split) == sorted(single)
    for key, record in single.items():
        np.testing.assert_allclose(split[key].vector, record.vector, atol=1e-6, rtol=0)
