import sys

import pytest

from reinforge.trainer import host_memory
from reinforge.trainer.host_memory import release_free_memory


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc only")
def test_release_free_memory_trims_glibc_heaps():
    # the CI and demo machines run glibc: the trainer's memory bound depends on this
    assert release_free_memory() is True


def test_without_glibc_nothing_is_released(monkeypatch):
    monkeypatch.setattr(host_memory, "_malloc_trim", lambda: None)
    assert host_memory.release_free_memory() is False
