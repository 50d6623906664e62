"""Loaded by each vLLM worker (``--worker-extension-cls``); runs in the vLLM venv.

It imports nothing from reinforge (reinforge is not installed there). The engine
calls its methods through vLLM's ``/collective_rpc``.

Importing it also registers the ``reinforge_http`` weight-transfer backend with vLLM's
``WeightTransferEngineFactory`` (the worker imports this module before it loads the
model, where the backend is built). vLLM's own backends (``nccl``, ``ipc``) move
tensors between GPUs; with this one the native ``/update_weights`` request carries a
small descriptor (a URL; each tensor's name, dtype, shape and offset) and the worker
pulls the chunk's raw bytes from the driver with one HTTP GET (``fetch_tensors``), so
it runs on the CPU and across hosts, and nothing is written to disk.
"""

import contextlib
import math
import urllib.request
from dataclasses import dataclass
from typing import Any

HTTP_BACKEND = "reinforge_http"


class ReinforgeWorkerExtension:
    def reinforge_reload_weights(self, weights_path: str) -> str:
        """Reload the policy from ``weights_path`` (safetensors) in place.

        vLLM's in-place reload processes only the layers whose tensors it read. With
        tied input/output embeddings the checkpoint has no ``lm_head.weight``, so the
        output layer's CPU-packed copy of the embedding matrix would stay stale and
        every logprob would be wrong; re-running the layer's post-load step fixes it.
        """
        self.model_runner.reload_weights(weights_path=weights_path)
        refresh_output_layer(self.model_runner.get_model())
        return weights_path


def refresh_output_layer(model: object) -> None:
    """Redo the output layer's post-load step (see ``reinforge_reload_weights``)."""
    head = getattr(model, "lm_head", None)
    method = getattr(head, "quant_method", None)
    if method is not None:
        method.process_weights_after_loading(head)


def fetch_tensors(
    url: str, nbytes: int, tensors: list[dict[str, Any]], timeout: float = 600.0
) -> list[tuple[str, Any]]:
    """Pull one chunk's bytes from ``url`` into one buffer and view its tensors there
    (``(name, tensor)`` pairs, no copy): the chunk ``bucket_transfer.Chunk`` lays out."""
    import torch

    buffer = torch.empty(nbytes, dtype=torch.uint8)
    view = memoryview(buffer.numpy())
    got = 0
    # straight to the driver: a proxy set in the server's environment is not in the path
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with direct.open(url, timeout=timeout) as response:
        while got < nbytes:
            n = response.readinto(view[got:])
            if not n:
                break
            got += n
    if got != nbytes:
        raise RuntimeError(f"reinforge_http: {url} sent {got} of the chunk's {nbytes} bytes")
    out = []
    for spec in tensors:
        dtype = getattr(torch, spec["dtype"])
        shape = spec["shape"]
        start = spec["offset"]
        end = start + math.prod(shape) * dtype.itemsize
        if end > nbytes:
            raise RuntimeError(
                f"reinforge_http: tensor {spec['name']} ends at byte {end}, "
                f"past the chunk's {nbytes}"
            )
        out.append((spec["name"], buffer[start:end].view(dtype).view(shape)))
    return out


def _register_http_backend() -> None:
    try:
        from vllm.distributed.weight_transfer.base import (
            WeightTransferEngine,
            WeightTransferInitInfo,
            WeightTransferUpdateInfo,
        )
        from vllm.distributed.weight_transfer.factory import WeightTransferEngineFactory
    except ImportError:  # a vLLM without the weight-transfer API: the files path only
        return

    @dataclass
    class HttpInitInfo(WeightTransferInitInfo):
        """Nothing to rendezvous: each update carries its tensors."""

    @dataclass
    class HttpUpdateInfo(WeightTransferUpdateInfo):
        #: where the driver serves the chunk's raw bytes
        url: str
        #: the chunk's length in bytes
        nbytes: int
        #: each tensor: name, dtype (a torch attribute name), shape, byte offset
        tensors: list

    class HttpWeightTransferEngine(WeightTransferEngine):
        """Loads each chunk's tensors with the model's ``load_weights`` inside vLLM's
        layerwise reload (``start``/``finish``), as the NCCL backend does."""

        init_info_cls = HttpInitInfo
        update_info_cls = HttpUpdateInfo
        supports_draft_weight_update = False

        def init_transfer_engine(self, init_info: HttpInitInfo) -> None:
            pass

        def start_weight_update(self) -> None:
            from vllm.model_executor.model_loader.reload import initialize_layerwise_reload

            initialize_layerwise_reload(self.model)

        def update_weights(self, update_info: dict) -> None:
            # the base class synchronises an accelerator afterwards; the copies here
            # are synchronous host work, and a CPU worker has no accelerator
            self.receive_weights(self.parse_update_info(update_info))

        def receive_weights(self, update_info: HttpUpdateInfo) -> None:
            info = update_info
            self.model.load_weights(weights=fetch_tensors(info.url, info.nbytes, info.tensors))

        def finish_weight_update(self) -> None:
            from vllm.model_executor.model_loader.reload import finalize_layerwise_reload

            finalize_layerwise_reload(self.model, self.model_config)
            refresh_output_layer(self.model)

        def shutdown(self) -> None:
            pass

    with contextlib.suppress(ValueError):  # registered already (imported twice)
        WeightTransferEngineFactory.register_engine(HTTP_BACKEND, HttpWeightTransferEngine)


_register_http_backend()
