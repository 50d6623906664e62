"""Loaded by each vLLM worker (``--worker-extension-cls``); runs in the vLLM venv.

It imports nothing from reinforge (reinforge is not installed there). The engine
calls its methods through vLLM's ``/collective_rpc``.

Importing it also registers the ``reinforge_http`` weight-transfer backend with vLLM's
``WeightTransferEngineFactory`` (the worker imports this module before it loads the
model, where the backend is built). vLLM's own backends (``nccl``, ``ipc``) move
tensors between GPUs; this one takes the weights in the body of the native
``/update_weights`` request (safetensors bytes, base64), so it runs on the CPU and
across hosts, and nothing is written to disk.
"""

import base64
import contextlib
from dataclasses import dataclass

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
        #: one safetensors file's bytes, base64-encoded (JSON carries no raw bytes)
        safetensors_b64: str

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
            from safetensors.torch import load

            tensors = load(base64.b64decode(update_info.safetensors_b64))
            self.model.load_weights(weights=list(tensors.items()))

        def finish_weight_update(self) -> None:
            from vllm.model_executor.model_loader.reload import finalize_layerwise_reload

            finalize_layerwise_reload(self.model, self.model_config)
            refresh_output_layer(self.model)

        def shutdown(self) -> None:
            pass

    with contextlib.suppress(ValueError):  # registered already (imported twice)
        WeightTransferEngineFactory.register_engine(HTTP_BACKEND, HttpWeightTransferEngine)


_register_http_backend()
