"""``VLLMEngine``: vLLM servers that reinforge starts, feeds, updates and stops.

Each replica is a ``vllm.entrypoints.openai.api_server`` process (see ``server``)
serving the policy; requests are token-exact completions through the ``openai``
engine's client, sent to the least-loaded healthy replica. A monitor thread
restarts a replica that dies (from the newest synced weights); meanwhile its
requests are retried on the others.

Weight sync, one version at a time, each step under a deadline:

* streamed full weights (``receive_weights``, the default): every replica pauses
  (keeping its queued requests) and opens a weight update through vLLM's native
  protocol; each bucket of the trainer's weights goes to every replica in chunks
  whose raw bytes the workers pull from this process (``bucket_transfer``,
  ``chunk_server``) and load in memory; then the
  update is finished, the prefix cache dropped (cached prompts hold old-weight KV)
  and the replicas resume. No file is written: a replica that restarts after such a
  sync comes back with the base weights and stays out of the pool until the next
  sync brings it the newest;
* whole full weights (``update_weights``, the fallback): the state dict is written
  as safetensors to ``work_dir/weights/v{version}``; every replica pauses, reloads
  in place (with the tied-embedding fix of the worker extension), drops its prefix
  cache, resumes;
* LoRA: the adapter folder is hot-loaded as ``policy-v{version}``; new requests
  name the newest adapter, and the ``keep_versions`` newest stay loaded so
  requests in flight finish on the version they started with.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from reinforge.models.engine import Completion, ImageSource, SamplingParams, failed_future
from reinforge.models.engines.openai.engine import OpenAIEngine
from reinforge.models.engines.openai.protocol import stamp_version
from reinforge.models.engines.vllm.bucket_transfer import WEIGHT_TRANSFER_ARGS, Chunk, pack_chunks
from reinforge.models.engines.vllm.chunk_server import ChunkServer, address_for
from reinforge.models.engines.vllm.multimodal import (
    GENERATE_PATH,
    SCALE_OUT_FLAG,
    generate_body,
    parse_generate,
)
from reinforge.models.engines.vllm.server import VLLMServer
from reinforge.models.engines.vllm.weights import prune_versions, write_full_weights
from reinforge.models.engines.vllm.work_dir import make_work_dir

logger = logging.getLogger(__name__)


class WeightSyncError(RuntimeError):
    """A replica did not take new weights within the sync deadline."""


def _say(message: str) -> None:
    print(f"[reinforge] {message}", file=sys.stderr, flush=True)


class VLLMEngine(OpenAIEngine):
    """One or more vLLM replicas of the policy, owned by this process."""

    def __init__(
        self,
        model_path: str | Path,
        *,
        python: str | Path,
        replicas: int = 1,
        max_model_len: int = 2048,
        dtype: str = "float32",
        kv_cache_gb: float = 2.0,
        enforce_eager: bool = True,
        max_lora_rank: int | None = None,
        keep_versions: int = 2,
        work_dir: str | Path | None = None,
        startup_timeout: float = 600.0,
        sync_timeout: float = 300.0,
        health_interval: float = 2.0,
        request_timeout: float = 600.0,
        max_retries: int = 3,
        extra_args: list[str] | None = None,
        env: dict[str, str] | None = None,
        server_factory: Callable[..., Any] = VLLMServer,
    ) -> None:
        if replicas < 1:
            raise ValueError(f"vllm.replicas must be >= 1, got {replicas}")
        self.base_model_path = Path(model_path)
        self._own_work_dir = work_dir is None
        self.work_dir = Path(work_dir) if work_dir else make_work_dir()
        self.keep_versions = max(1, keep_versions)
        #: LoRA adapters can be hot-loaded (the servers were started with a max rank)
        self.lora_enabled = bool(max_lora_rank)
        self.startup_timeout = startup_timeout
        self.sync_timeout = sync_timeout
        #: what the servers compute in: synced weights are written in it (half the bytes
        #: of the trainer's fp32 for bf16 servers)
        self.dtype = dtype
        self.restarts = 0
        self._weights_dir: Path | None = None  # newest full weights (restarts load these)
        #: the newest weights were streamed (no folder): a restarted replica waits for
        #: the next sync; the indices of those waiting
        self._streamed = False
        self._awaiting: set[int] = set()
        self._adapters: list[tuple[int, str, Path]] = []  # (version, name, folder), oldest first
        self._sync_lock = threading.Lock()
        from reinforge.models.vision.loading import is_vision_language

        vision = is_vision_language(model_path)
        if vision and SCALE_OUT_FLAG not in (extra_args or []):
            # prompts with images go to the token-in/token-out endpoint it mounts
            extra_args = [*(extra_args or []), SCALE_OUT_FLAG]
        # the in-memory weight-update backend (streamed syncs)
        extra_args = [*WEIGHT_TRANSFER_ARGS, *(extra_args or [])]
        self.servers = [
            server_factory(
                python=python,
                model_dir=model_path,
                served_name="policy",
                log_path=self.work_dir / "logs" / f"replica-{i}.log",
                max_model_len=max_model_len,
                dtype=dtype,
                kv_cache_gb=kv_cache_gb,
                enforce_eager=enforce_eager,
                max_lora_rank=max_lora_rank,
                max_loras=self.keep_versions,
                extra_args=extra_args,
                env=env,
            )
            for i in range(replicas)
        ]
        self._start_all()
        try:
            super().__init__(
                [s.url for s in self.servers],
                model="policy",
                tokenizer_path=model_path,
                max_model_len=max_model_len,
                timeout=request_timeout,
                max_retries=max_retries,
            )
        except BaseException:
            self._stop_servers()
            raise
        if vision:
            from transformers import AutoProcessor

            self.processor = AutoProcessor.from_pretrained(model_path, local_files_only=True)
            self.needs_image_source = True
        self._closing = threading.Event()
        self._monitor = threading.Thread(
            target=self._watch, args=(health_interval,), name="reinforge-vllm-monitor", daemon=True
        )
        self._monitor.start()

    # ---- lifecycle -----------------------------------------------------------------------

    def _start_all(self) -> None:
        _say(f"starting {len(self.servers)} vLLM replica(s) of {self.base_model_path} ...")
        start = time.monotonic()
        try:
            for server in self.servers:
                server.start()
            for i, server in enumerate(self.servers):
                server.wait_ready(self.startup_timeout, progress=_say)
                _say(
                    f"vLLM replica {i} ready on port {server.port} ({time.monotonic() - start:.0f}s)"
                )
        except BaseException:
            self._stop_servers()
            raise

    def _watch(self, interval: float) -> None:
        retry_at = [0.0] * len(self.servers)  # back off after a failed restart
        failures = [0] * len(self.servers)
        while not self._closing.wait(interval):
            for i, server in enumerate(self.servers):
                if self._closing.is_set() or server.alive() or time.monotonic() < retry_at[i]:
                    continue
                self.pool.set_healthy(i, False)
                code = server.process.returncode if server.process else None
                logger.warning("vLLM replica %d exited (code %s); restarting it", i, code)
                try:
                    self._restart(i)
                    failures[i] = 0
                except Exception as exc:  # keep watching; try again later
                    failures[i] += 1
                    retry_at[i] = time.monotonic() + min(300.0, 5.0 * 2 ** failures[i])
                    logger.error("could not restart vLLM replica %d: %s", i, exc)

    def _restart(self, index: int) -> None:
        server = self.servers[index]
        with self._sync_lock:  # no sync while a replica comes back with older weights
            server.stop(grace=1)
            server.start(self._weights_dir or self.base_model_path)
            server.wait_ready(self.startup_timeout)
            self.pool.endpoints[index].url = server.url
            for version, name, folder in self._adapters:
                self._call(server, "POST", "/v1/load_lora_adapter",
                           json={"lora_name": name, "lora_path": str(folder)},
                           stage=f"reloading adapter v{version}")  # fmt: skip
            self.restarts += 1
            if self._streamed:  # its weights are the base model's until the next sync
                self._awaiting.add(index)
                logger.warning("vLLM replica %d waits for the next sync to serve", index)
                return
            self.pool.set_healthy(index, True)
        logger.warning("vLLM replica %d is back on port %d", index, server.port)

    def _stop_servers(self) -> None:
        for server in self.servers:
            server.stop()

    def close(self) -> None:
        closing = getattr(self, "_closing", None)
        if closing is not None:
            closing.set()
            self._monitor.join(timeout=5)
        if hasattr(self, "http"):
            super().close()
        self._stop_servers()
        if self._own_work_dir:
            shutil.rmtree(self.work_dir, ignore_errors=True)

    # ---- requests ------------------------------------------------------------------------

    def request_model(self) -> str:
        adapters = getattr(self, "_adapters", None)
        return adapters[-1][1] if adapters else "policy"

    def submit_multimodal(
        self,
        prompt_ids: list[int],
        params: SamplingParams,
        multi_modal_inputs: dict[str, Any],
        source: ImageSource | None = None,
    ) -> Any:
        """A prompt with images: sent as ``source`` (ids before expansion, images as data
        URLs) to vLLM's generate endpoint; see ``vllm.multimodal``."""
        if self.processor is None or source is None:
            return super().submit_multimodal(prompt_ids, params, multi_modal_inputs, source)
        if len(prompt_ids) >= self.max_model_len:
            return failed_future(
                ValueError(
                    f"prompt has {len(prompt_ids)} tokens; max_model_len is {self.max_model_len}"
                )
            )
        body = generate_body(self.request_model(), source, params)
        version = self.model_version  # with the model name the request carries

        def parse(data: dict, url: str) -> list[Completion]:
            return stamp_version(parse_generate(data, params, url, prompt_ids), version)

        return self.http.submit(GENERATE_PATH, body, parse)

    def policy_state(self) -> tuple[tuple[str, ...], str, int]:
        """(replica URLs, model name to request, weight version): what a remote runner needs."""
        urls = tuple(e.url for e in self.pool.endpoints if e.healthy)
        return urls, self.request_model(), self.model_version

    # ---- weight sync ---------------------------------------------------------------------

    def _call(self, server: VLLMServer, method: str, path: str, *, stage: str, **kw: Any) -> Any:
        async def go() -> Any:
            response = await self.http.request(
                method, server.url + path, timeout=self.sync_timeout, **kw
            )
            if response.status_code != 200:
                raise WeightSyncError(
                    f"vLLM replica on port {server.port}: {stage} ({method} {path}) answered "
                    f"{response.status_code}: {response.text[:300]}"
                )
            return response

        try:
            return self.http.call(go(), timeout=self.sync_timeout + 5)
        except WeightSyncError:
            raise
        except Exception as exc:
            raise WeightSyncError(
                f"vLLM replica on port {server.port}: {stage} ({method} {path}) did not finish "
                f"within {self.sync_timeout:g}s: {type(exc).__name__}: {exc}"
            ) from exc

    def _each_replica(self, fn: Any) -> None:
        """``fn(server)`` on every healthy replica (and each restarted one that waits for
        weights), in parallel; the first error is raised once all are done."""
        live = [
            s
            for i, s in enumerate(self.servers)
            if self.pool.endpoints[i].healthy or (i in self._awaiting and s.alive())
        ]
        if not live:
            raise WeightSyncError("no healthy vLLM replica to sync")
        with ThreadPoolExecutor(len(live)) as pool:
            for future in [pool.submit(fn, s) for s in live]:
                future.result()

    def _synced_all(self, version: int, streamed: bool) -> None:
        """Every replica serves ``version`` now: those that waited rejoin the pool."""
        for index in sorted(self._awaiting):
            if self.servers[index].alive():
                self.pool.set_healthy(index, True)
        self._awaiting.clear()
        self._streamed = streamed
        self._model_version = version

    def score_replicas(self, token_ids: list[int]) -> list[tuple[str, list[float]]]:
        """``score`` from every healthy replica in turn, under the model name new requests
        use (the newest adapter with LoRA): the weight check after a sync asks each one,
        since the pool would send a request to whichever replica is least loaded."""
        from reinforge.models.engines.openai.protocol import parse_prompt_logprobs, score_body

        body = score_body(self.request_model(), token_ids)
        out = []
        for i, server in enumerate(self.servers):
            if not self.pool.endpoints[i].healthy:
                continue
            answer = self._call(server, "POST", "/v1/completions", json=body,
                                stage="score the weight-check probe")  # fmt: skip
            out.append(
                (f"replica {i} (port {server.port})",
                 parse_prompt_logprobs(answer.json(), token_ids, server.url))
            )  # fmt: skip
        return out

    def update_weights(self, state_dict: dict[str, Any], version: int | None = None) -> None:
        """Full weights: write them once, then every replica reloads them in place."""
        version = self.model_version + 1 if version is None else int(version)
        with self._sync_lock:
            folder = write_full_weights(
                state_dict,
                self.base_model_path,
                self.work_dir / "weights" / f"v{version}",
                dtype=self.dtype,
            )

            def reload(server: VLLMServer) -> None:
                self._call(server, "POST", "/pause", params={"mode": "keep"}, stage="pause")
                try:
                    self._call(server, "POST", "/collective_rpc", stage="reload weights",
                               json={"method": "reinforge_reload_weights",
                                     "kwargs": {"weights_path": str(folder)}})  # fmt: skip
                    self._call(server, "POST", "/reset_prefix_cache", stage="reset prefix cache",
                               params={"reset_running_requests": "true"})  # fmt: skip
                finally:
                    self._call(server, "POST", "/resume", stage="resume")

            self._each_replica(reload)
            self._weights_dir = folder
            self._synced_all(version, streamed=False)
            prune_versions(folder.parent, "v", 1)

    def receive_weights(
        self, buckets: Iterable[dict[str, Any]], version: int | None = None
    ) -> None:
        """Streamed full weights: each bucket goes to every replica as it comes, through
        vLLM's ``start_weight_update`` / ``update_weights`` / ``finish_weight_update``;
        each request names a chunk the workers pull raw from this process's chunk
        server and load in memory. Nothing is written to disk (``bucket_transfer``)."""
        version = self.model_version + 1 if version is None else int(version)
        with self._sync_lock:
            self._each_replica(lambda s: self._call(s, "POST", "/pause", params={"mode": "keep"},
                                                    stage="pause"))  # fmt: skip
            try:
                self._each_replica(lambda s: self._call(s, "POST", "/start_weight_update",
                                                        stage="start the weight update"))  # fmt: skip
                try:
                    bind, advertised = address_for(s.url for s in self.servers)
                    with ChunkServer(bind, advertised) as chunks:
                        for bucket in buckets:
                            for chunk in pack_chunks(bucket, self.dtype):
                                self._send_chunk(chunks, chunk)
                            del bucket
                finally:  # closes the session even when a bucket failed (then reraises)
                    self._each_replica(
                        lambda s: self._call(s, "POST", "/finish_weight_update",
                                             json={"weight_version": str(version)},
                                             stage="finish the weight update"))  # fmt: skip
                self._each_replica(
                    lambda s: self._call(s, "POST", "/reset_prefix_cache",
                                         stage="reset prefix cache",
                                         params={"reset_running_requests": "true"}))  # fmt: skip
            finally:
                self._each_replica(lambda s: self._call(s, "POST", "/resume", stage="resume"))
            self._weights_dir = None
            self._synced_all(version, streamed=True)
            prune_versions(self.work_dir / "weights", "v", 0)  # older files: never loaded again

    def _send_chunk(self, chunks: ChunkServer, chunk: Chunk) -> None:
        """Every replica loads ``chunk`` (served while they pull it, then dropped)."""
        info = chunks.publish(chunk)
        try:
            self._each_replica(
                lambda s: self._call(s, "POST", "/update_weights", json={"update_info": info},
                                     stage="load a bucket of weights"))  # fmt: skip
        finally:
            chunks.retire(info)

    def update_lora_adapter(self, adapter_dir: str | Path, version: int) -> None:
        """Hot-load a PEFT adapter folder as the newest policy version."""
        version = int(version)
        name = f"policy-v{version}"
        with self._sync_lock:
            folder = self.work_dir / "lora" / f"v{version}"
            shutil.rmtree(folder, ignore_errors=True)
            shutil.copytree(adapter_dir, folder)

            def load(server: VLLMServer) -> None:
                self._call(server, "POST", "/v1/load_lora_adapter", stage=f"load adapter {name}",
                           json={"lora_name": name, "lora_path": str(folder),
                                 "load_inplace": True})  # fmt: skip

            self._each_replica(load)
            self._adapters.append((version, name, folder))
            while len(self._adapters) > self.keep_versions:
                _, old, old_folder = self._adapters.pop(0)

                def unload(server: VLLMServer, old: str = old) -> None:
                    with contextlib.suppress(WeightSyncError):
                        self._call(server, "POST", "/v1/unload_lora_adapter",
                                   stage=f"unload adapter {old}", json={"lora_name": old})  # fmt: skip

                self._each_replica(unload)
                shutil.rmtree(old_folder, ignore_errors=True)
            self._model_version = version
