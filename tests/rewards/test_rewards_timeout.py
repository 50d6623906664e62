"""The timeout worker: hangs are cut off, workers recover, threads and exit are safe."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from reinforge.rewards.timeout import (
    call_with_timeout,
    shutdown_workers,
    target_name,
    worker_pids,
)


def test_ok_call_returns_value() -> None:
    outcome = call_with_timeout("operator:add", (2, 3), timeout=5)
    assert outcome.ok and outcome.value == 5


def test_callable_target_and_kwargs() -> None:
    outcome = call_with_timeout(sorted, ([3, 1, 2],), {"reverse": True}, timeout=5)
    assert outcome.value == [3, 2, 1]


def test_exception_becomes_error_outcome() -> None:
    outcome = call_with_timeout("operator:truediv", (1, 0), timeout=5)
    assert outcome.status == "error"
    assert "ZeroDivisionError" in (outcome.error or "")
    assert call_with_timeout("no_such_module_xyz:f", timeout=5).status == "error"


def test_sleeping_call_times_out_and_worker_recovers() -> None:
    call_with_timeout("operator:add", (0, 0), timeout=5)  # make sure a worker is warm
    pids_before = worker_pids()
    start = time.monotonic()
    outcome = call_with_timeout("time:sleep", (60,), timeout=1.0)
    elapsed = time.monotonic() - start
    assert outcome.timed_out and outcome.value_or("fallback") == "fallback"
    assert (
        elapsed < 30
    )  # stopped, not waited out (the call sleeps 60 s); loose for a loaded machine
    after = call_with_timeout("operator:mul", (6, 7), timeout=5)
    assert after.ok and after.value == 42
    assert set(worker_pids()) != set(pids_before) or len(pids_before) > 1


def test_cpu_bound_call_holding_the_gil_times_out() -> None:
    start = time.monotonic()
    outcome = call_with_timeout("builtins:sum", (range(10**14),), timeout=1.0)
    assert outcome.timed_out
    assert time.monotonic() - start < 3.0


def test_call_from_worker_threads() -> None:
    results: dict[int, object] = {}

    def run(i: int) -> None:
        results[i] = call_with_timeout("operator:mul", (i, 10), timeout=5).value

    threads = [threading.Thread(target=run, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert results == {i: i * 10 for i in range(8)}


def test_timeout_in_a_thread_does_not_block_other_threads() -> None:
    outcomes: list[object] = []
    hang = threading.Thread(
        target=lambda: outcomes.append(call_with_timeout("time:sleep", (60,), timeout=1.5))
    )
    hang.start()
    assert call_with_timeout("operator:add", (1, 1), timeout=5).value == 2
    hang.join(10)
    assert len(outcomes) == 1 and outcomes[0].timed_out  # type: ignore[attr-defined]


def test_no_timeout_runs_in_process_even_for_lambdas() -> None:
    assert call_with_timeout(lambda x: x + 1, (1,), timeout=None).value == 2
    assert call_with_timeout("operator:neg", (3,), timeout=0).value == -3
    assert call_with_timeout(lambda: 1 / 0, timeout=None).status == "error"


def test_unimportable_functions_are_refused() -> None:
    with pytest.raises(ValueError, match="module-level"):
        call_with_timeout(lambda: 1, timeout=1)
    with pytest.raises(ValueError):
        target_name("no_colon")
    assert target_name(os.getcwd) == "posix:getcwd"


def test_shutdown_reaps_workers() -> None:
    call_with_timeout("operator:add", (1, 1), timeout=5)
    pids = worker_pids()
    assert pids
    shutdown_workers()
    assert worker_pids() == []
    for pid in pids:
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)  # already reaped: no zombie left behind
    assert call_with_timeout("operator:add", (1, 1), timeout=5).value == 2  # restarts lazily


def test_interpreter_exit_kills_busy_workers() -> None:
    script = textwrap.dedent(
        """
        import threading, time
        from reinforge.rewards.timeout import call_with_timeout, worker_pids
        threading.Thread(
            target=call_with_timeout, args=("time:sleep", (60,)), kwargs={"timeout": 50},
            daemon=True,
        ).start()
        while not worker_pids():
            time.sleep(0.05)
        time.sleep(0.3)
        print(worker_pids()[0], flush=True)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    pid = int(done.stdout.split()[-1])
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_unpicklable_arguments_give_an_error_outcome() -> None:
    class Local:
        pass

    outcome = call_with_timeout("builtins:repr", (Local(),), timeout=5)
    assert outcome.status == "error" and "cannot send arguments" in (outcome.error or "")
    assert call_with_timeout("builtins:repr", (1,), timeout=5).value == "1"


def test_workers_skip_heavy_package_imports_until_asked() -> None:
    math = call_with_timeout("reinforge.rewards.math_check:answers_match", ("1", "1"), timeout=30)
    assert math.value is True
    probe = "sorted(m for m in __import__('sys').modules if m == 'torch')"
    assert call_with_timeout("builtins:eval", (probe,), timeout=5).value == []
    # Package attributes still work: the real __init__ runs on first access.
    lazy = "__import__('reinforge.rewards', fromlist=['REWARD_FUNCTIONS']).REWARD_FUNCTIONS.kind"
    assert call_with_timeout("builtins:eval", (lazy,), timeout=60).value == "reward function"
    shutdown_workers()  # drop the worker that now holds torch


CRASHY = """
import os

def dies_once(marker, answer):
    if not os.path.exists(marker):
        open(marker, "w").close()
        os._exit(3)  # like a segfault in a checker: no exception, the process is gone
    return answer == "42"

def always_dies():
    os.kill(os.getpid(), 9)
"""


def test_a_worker_that_dies_mid_call_is_retried_then_fails_loudly(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from reinforge.rewards.worker_pool import RewardWorkerCrashed

    (tmp_path / "crashy_rf.py").write_text(CRASHY)
    monkeypatch.syspath_prepend(str(tmp_path))
    shutdown_workers()  # new workers copy this sys.path
    try:
        outcome = call_with_timeout("crashy_rf:dies_once", (str(tmp_path / "m"), "42"), timeout=20)
        assert outcome.ok and outcome.value is True  # the right answer, not a silent 0
        with pytest.raises(RewardWorkerCrashed, match=r"crashy_rf:always_dies.*twice.*signal 9"):
            call_with_timeout("crashy_rf:always_dies", timeout=20)
        assert call_with_timeout("operator:add", (1, 2), timeout=5).value == 3
    finally:
        shutdown_workers()


def test_a_call_cut_off_by_shutdown_is_an_error_not_a_crash(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from reinforge.rewards.worker_pool import WorkerPool

    pool = WorkerPool(1)
    pool.call("operator:add", (1, 1), {}, timeout=30)  # started and idle
    outcomes = []
    busy = threading.Thread(
        target=lambda: outcomes.append(pool.call("time:sleep", (30,), {}, timeout=60))
    )
    busy.start()
    while not pool.worker_pids() or pool._idle:  # wait until the sleep holds the worker
        time.sleep(0.01)
    pool.shutdown()
    busy.join(timeout=30)
    assert outcomes and outcomes[0].status == "error"  # not retried, not raised
    assert "retrying" not in caplog.text
