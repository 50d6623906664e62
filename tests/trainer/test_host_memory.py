import ctypes
import os
import platform
import subprocess
import sys

import pytest

from reinforge.trainer import host_memory
from reinforge.trainer.host_memory import KEEP_LARGE_ENV, keeps_large_blocks, release_free_memory


class FakeGlibc:
    """A libc handle whose malloc_trim records its calls."""

    def __init__(self) -> None:
        self.trims: list[int] = []

        def malloc_trim(pad: int) -> int:
            self.trims.append(pad)
            return 1

        self.malloc_trim = malloc_trim


class FakeMusl:
    """A libc handle without malloc_trim (musl)."""


@pytest.fixture
def fresh_lookup():
    """_malloc_trim is cached per process: look libc up again, before and after the test."""
    host_memory._malloc_trim.cache_clear()
    yield
    host_memory._malloc_trim.cache_clear()


def _load(monkeypatch, libc) -> list[str]:
    loaded: list[str] = []

    def cdll(name):
        loaded.append(name)
        if isinstance(libc, Exception):
            raise libc
        return libc

    monkeypatch.setattr(host_memory.ctypes, "CDLL", cdll)
    return loaded


def test_release_free_memory_trims_glibc_heaps(monkeypatch, fresh_lookup):
    monkeypatch.setattr(sys, "platform", "linux")
    libc = FakeGlibc()
    loaded = _load(monkeypatch, libc)
    assert release_free_memory() is True
    assert libc.trims == [0]  # pad 0: every free page of every arena goes back
    assert libc.malloc_trim.argtypes == [ctypes.c_size_t]
    assert libc.malloc_trim.restype is ctypes.c_int
    assert release_free_memory() is True
    assert libc.trims == [0, 0]
    assert len(loaded) == 1  # libc is looked up once


@pytest.mark.parametrize(
    "libc", [FakeMusl(), OSError("no libc")], ids=["no-malloc_trim", "no-libc"]
)
def test_without_glibc_nothing_is_released(monkeypatch, fresh_lookup, libc):
    monkeypatch.setattr(sys, "platform", "linux")
    loaded = _load(monkeypatch, libc)
    assert release_free_memory() is False
    assert len(loaded) == 1


def test_off_linux_libc_is_not_loaded(monkeypatch, fresh_lookup):
    monkeypatch.setattr(sys, "platform", "darwin")
    libc = FakeGlibc()
    loaded = _load(monkeypatch, libc)
    assert release_free_memory() is False
    assert loaded == [] and libc.trims == []


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc",
    reason="glibc only",
)
def test_this_glibc_machine_finds_malloc_trim(fresh_lookup):
    # the CI and demo machines run glibc: the trainer's memory bound depends on this
    trim = host_memory._malloc_trim()
    assert trim is not None and trim.__name__ == "malloc_trim"
    assert release_free_memory() is True


# Counts glibc's mapped blocks (mallinfo2's hblks) before and after a 64 MiB tensor:
# one more where large blocks are mapped, none where they come from the heap.
MAPPED_PROBE = """
import ctypes, sys, torch
class MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in
                "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]
libc = ctypes.CDLL("libc.so.6")
libc.mallinfo2.restype = MallInfo2
if sys.argv[1] == "trainer":
    from reinforge.trainer.trainer import Trainer
    from reinforge.trainer.trainer_config import TrainerConfig
    Trainer(sys.argv[2], TrainerConfig(), pad_token_id=0)
before = libc.mallinfo2().hblks
block = torch.empty(64 << 20, dtype=torch.uint8)
print(libc.mallinfo2().hblks - before)
"""

glibc_only = pytest.mark.skipif(
    not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc",
    reason="glibc only",
)


def _mapped_blocks(*args: str, **env: str) -> int:
    environ = {
        k: v
        for k, v in os.environ.items()
        if k not in (KEEP_LARGE_ENV, "MALLOC_MMAP_MAX_", "MALLOC_TRIM_THRESHOLD_")
    }
    done = subprocess.run(
        [sys.executable, "-c", MAPPED_PROBE, *args],
        env={**environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return int(done.stdout.split()[-1])


@glibc_only
def test_a_cpu_trainer_serves_large_blocks_from_the_heap(tiny_model_path):
    assert _mapped_blocks("none") == 1  # glibc's default: a fresh mapping
    assert _mapped_blocks("trainer", str(tiny_model_path)) == 0
    assert _mapped_blocks("trainer", str(tiny_model_path), **{KEEP_LARGE_ENV: "0"}) == 1
    assert _mapped_blocks("trainer", str(tiny_model_path), MALLOC_MMAP_MAX_="65536") == 1


def test_keeping_large_blocks_is_refused_for_an_unclear_value():
    assert keeps_large_blocks({}) is True
    assert keeps_large_blocks({KEEP_LARGE_ENV: "0"}) is False
    assert keeps_large_blocks({"MALLOC_TRIM_THRESHOLD_": "1"}) is False  # the user's own
    with pytest.raises(ValueError, match=KEEP_LARGE_ENV):
        keeps_large_blocks({KEEP_LARGE_ENV: "yes"})
