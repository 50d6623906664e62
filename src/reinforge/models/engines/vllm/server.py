"""One vLLM OpenAI-compatible server process that reinforge starts and owns.

The server runs from the vLLM virtualenv's Python (vLLM pins a transformers that
cannot share reinforge's venv), bound to loopback on a free port. It is started in
a process group of its own under a small supervisor that the kernel signals when
reinforge dies (``PR_SET_PDEATHSIG``) and that then stops the server and kills the
group (vLLM's engine-core and worker processes outlive a killed server), so no
server outlives reinforge, even after a SIGKILL.
Its output goes to a log file whose tail is quoted when it fails to start.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import httpx

VLLM_SIDE_DIR = Path(__file__).parent / "vllm_side"
WORKER_EXTENSION_CLS = "reinforge_vllm_worker.ReinforgeWorkerExtension"
SUPERVISOR = VLLM_SIDE_DIR / "reinforge_vllm_supervisor.py"


class VLLMStartError(RuntimeError):
    """A vLLM server exited or did not become ready in time."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("", 0))
        return int(s.getsockname()[1])


def log_tail(path: Path, lines: int = 25) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return "(no log)"
    keep = [line for line in text if "Route:" not in line]
    return "\n".join(keep[-lines:])


class VLLMServer:
    """A ``vllm.entrypoints.openai.api_server`` child process on 127.0.0.1."""

    def __init__(
        self,
        python: str | Path,
        model_dir: str | Path,
        *,
        served_name: str,
        log_path: Path,
        max_model_len: int,
        dtype: str = "float32",
        kv_cache_gb: float = 2.0,
        enforce_eager: bool = True,
        max_lora_rank: int | None = None,
        max_loras: int = 2,
        extra_args: list[str] | None = None,
        env: dict[str, str] | None = None,
        host: str = "127.0.0.1",
    ) -> None:
        self.python = str(python)
        self.host = host
        self.model_dir = str(model_dir)
        self.tokenizer_dir = str(model_dir)  # synced weight folders hold no tokenizer
        self.served_name = served_name
        self.log_path = log_path
        self.max_model_len = max_model_len
        self.dtype = dtype
        self.kv_cache_gb = kv_cache_gb
        self.enforce_eager = enforce_eager
        self.max_lora_rank = max_lora_rank
        self.max_loras = max_loras
        self.extra_args = list(extra_args or [])
        self.extra_env = dict(env or {})
        self.port = 0
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def command(self) -> list[str]:
        cmd = [
            self.python, "-m", "vllm.entrypoints.openai.api_server",
            "--model", self.model_dir,
            "--tokenizer", self.tokenizer_dir,
            "--served-model-name", self.served_name,
            "--host", self.host,
            "--port", str(self.port),
            "--max-model-len", str(self.max_model_len),
            "--dtype", self.dtype,
            "--worker-extension-cls", WORKER_EXTENSION_CLS,
        ]  # fmt: skip
        if self.enforce_eager:
            cmd.append("--enforce-eager")
        if self.max_lora_rank:
            cmd += ["--enable-lora", "--max-lora-rank", str(self.max_lora_rank)]
            cmd += ["--max-loras", str(self.max_loras)]
        return cmd + self.extra_args

    def environment(self) -> dict[str, str]:
        env = dict(os.environ)
        for key in ("VIRTUAL_ENV", "PYTHONHOME"):
            env.pop(key, None)
        # the cache bounds the reinforge process chose for its own matmuls (not the
        # user's): vLLM keeps its libraries' defaults (cli/kernel_caches.py)
        for key in env.pop("REINFORGE_KERNEL_CACHES_SET", "").split(","):
            env.pop(key, None)
        path = env.get("PYTHONPATH")
        env["PYTHONPATH"] = str(VLLM_SIDE_DIR) + (os.pathsep + path if path else "")
        env.update(
            {
                "VLLM_HOST_IP": self.host,
                "VLLM_CPU_KVCACHE_SPACE": f"{self.kv_cache_gb:g}",
                "HF_HUB_OFFLINE": "1",
                "TRANSFORMERS_OFFLINE": "1",
                "VLLM_SERVER_DEV_MODE": "1",  # /collective_rpc and /reset_prefix_cache
                "VLLM_ALLOW_RUNTIME_LORA_UPDATING": "1",
                "VLLM_NO_USAGE_STATS": "1",
                "DO_NOT_TRACK": "1",
                # every process of this server carries its log path: findable, killable
                "REINFORGE_VLLM_LOG": str(self.log_path),
            }
        )
        env.update(self.extra_env)
        return env

    def start(self, model_dir: str | Path | None = None) -> None:
        """Launch the process (from ``model_dir`` if given: e.g. the newest synced weights)."""
        if model_dir is not None:
            self.model_dir = str(model_dir)
        if not Path(self.python).exists():
            raise VLLMStartError(
                f"vLLM Python '{self.python}' does not exist; create the vLLM venv with "
                "`make vllm-venv` (or set model.vllm.python)"
            )
        self.port = free_port()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            log.write(f"\n==== {time.strftime('%H:%M:%S')} {' '.join(self.command())}\n".encode())
            log.flush()
            self.process = subprocess.Popen(
                [self.python, str(SUPERVISOR), str(os.getpid()), "--", *self.command()],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self.environment(),
                start_new_session=True,
            )

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def wait_ready(
        self, timeout: float, progress: Callable[[str], None] | None = None, every: float = 15.0
    ) -> float:
        """Block until ``/health`` answers 200; raise ``VLLMStartError`` if it exits or times out."""
        start = time.monotonic()
        next_note = start + every
        while True:
            if not self.alive():
                code = self.process.returncode if self.process else None
                raise VLLMStartError(
                    f"vLLM server (port {self.port}) exited with code {code} while starting; "
                    f"last lines of {self.log_path}:\n{log_tail(self.log_path)}"
                )
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(self.url + "/health", timeout=2).status_code == 200:
                    return time.monotonic() - start
            now = time.monotonic()
            if now - start > timeout:
                self.stop()
                raise VLLMStartError(
                    f"vLLM server (port {self.port}) not ready after {timeout:.0f}s; last lines "
                    f"of {self.log_path}:\n{log_tail(self.log_path)}"
                )
            if progress is not None and now >= next_note:
                progress(
                    f"waiting for vLLM on port {self.port} ({now - start:.0f}s; log {self.log_path})"
                )
                next_note = now + every
            time.sleep(0.5)

    def stop(self, grace: float = 10.0) -> None:
        """Stop the server and everything it started (its process group)."""
        proc = self.process
        if proc is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(grace)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(5)
