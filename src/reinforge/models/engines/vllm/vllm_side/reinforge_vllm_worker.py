"""Loaded by each vLLM worker (``--worker-extension-cls``); runs in the vLLM venv.

It imports nothing from reinforge (reinforge is not installed there). The engine
calls its methods through vLLM's ``/collective_rpc``.
"""


class ReinforgeWorkerExtension:
    def reinforge_reload_weights(self, weights_path: str) -> str:
        """Reload the policy from ``weights_path`` (safetensors) in place.

        vLLM's in-place reload processes only the layers whose tensors it read. With
        tied input/output embeddings the checkpoint has no ``lm_head.weight``, so the
        output layer's CPU-packed copy of the embedding matrix would stay stale and
        every logprob would be wrong; re-running the layer's post-load step fixes it.
        """
        self.model_runner.reload_weights(weights_path=weights_path)
        model = self.model_runner.get_model()
        head = getattr(model, "lm_head", None)
        method = getattr(head, "quant_method", None)
        if method is not None:
            method.process_weights_after_loading(head)
        return weights_path
