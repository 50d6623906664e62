import sys

import pytest

from reinforge.trainer.host_memory import release_free_memory


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc only")
def test_release_free_memory_trims_glibc_heaps():
    # the CI and demo machines run glibc: the trainer's memory bound depends on this
    assert release_free_memory() is True


def test_release_free_memory_is_safe_to_call_repeatedly():
    results = {release_free_memory() for _ in range(3)}
    assert len(results) == 1
