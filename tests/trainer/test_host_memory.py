import ctypes
import platform
import sys

import pytest

from reinforge.trainer import host_memory
from reinforge.trainer.host_memory import release_free_memory


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
