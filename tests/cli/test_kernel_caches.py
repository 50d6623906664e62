"""The ``reinforge`` process bounds oneDNN's and ideep's primitive caches
(``cli/kernel_caches.py``).

Observed, not assumed: a fresh process prepares its runtime as the ``reinforge``
command does, then runs a bf16 matmul (forward and backward) for 300 different row
counts, as micro-batches of changing length do, and reports how much glibc's heap
grew. With the caches at the libraries' own 1024 entries every shape stays cached.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from reinforge.cli.kernel_caches import DEFAULT_CAPACITY, MARKER, VARIABLES, bound_kernel_caches

PROBE = """
import ctypes
import torch
from reinforge.cli.common import prepare_runtime, state
state.standalone = True
prepare_runtime()

class MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in
                "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]
mallinfo2 = ctypes.CDLL("libc.so.6").mallinfo2
mallinfo2.restype = MallInfo2
def heap_mib():
    info = mallinfo2()
    return (info.uordblks + info.hblkhd) / 2**20

torch.set_num_threads(1)
w = torch.randn(256, 256, dtype=torch.bfloat16, requires_grad=True)
(torch.randn(8, 256, dtype=torch.bfloat16) @ w).sum().backward()
start = heap_mib()
for rows in range(9, 309):
    x = torch.randn(rows, 256, dtype=torch.bfloat16, requires_grad=True)
    (x @ w).sum().backward()
print(heap_mib() - start)
"""


def _heap_growth_mib(**env: str) -> float:
    environ = {k: v for k, v in os.environ.items() if k not in (*VARIABLES, MARKER)}
    out = subprocess.run(
        [sys.executable, "-c", PROBE],
        env={**environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return float(out.stdout.strip().splitlines()[-1])


def test_unset_capacities_are_set_and_the_users_own_are_kept() -> None:
    environ = {"LRU_CACHE_CAPACITY": "1024"}
    assert bound_kernel_caches(environ) == {"ONEDNN_PRIMITIVE_CACHE_CAPACITY": "128"}
    assert environ == {
        "LRU_CACHE_CAPACITY": "1024",
        "ONEDNN_PRIMITIVE_CACHE_CAPACITY": "128",
        MARKER: "ONEDNN_PRIMITIVE_CACHE_CAPACITY",
    }
    assert DEFAULT_CAPACITY == 128


def test_a_vllm_server_gets_the_libraries_defaults_back_but_keeps_the_users(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from reinforge.models.engines.vllm.server import VLLMServer

    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv(MARKER, raising=False)
    monkeypatch.setenv("LRU_CACHE_CAPACITY", "512")  # the user's own
    bound_kernel_caches()  # as the reinforge process does at start
    assert os.environ["ONEDNN_PRIMITIVE_CACHE_CAPACITY"] == "128"
    server = VLLMServer(
        "python", "model", served_name="m", log_path=tmp_path / "vllm.log", max_model_len=64
    )
    env = server.environment()
    assert "ONEDNN_PRIMITIVE_CACHE_CAPACITY" not in env and MARKER not in env
    assert env["LRU_CACHE_CAPACITY"] == "512"


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or os.confstr("CS_GNU_LIBC_VERSION") is None,
    reason="the heap is measured with glibc's mallinfo2",
)
def test_a_run_process_does_not_keep_a_primitive_for_every_shape() -> None:
    unbounded = _heap_growth_mib(ONEDNN_PRIMITIVE_CACHE_CAPACITY="1024", LRU_CACHE_CAPACITY="1024")
    if unbounded < 100:
        pytest.skip(f"this CPU's bf16 matmul keeps no per-shape primitives ({unbounded:.0f} MiB)")
    bounded = _heap_growth_mib()
    # 300 shapes against 128 entries per cache: measured 476 MiB unbounded, 67 bounded
    assert bounded < unbounded / 2, (bounded, unbounded)
