"""The ``hf`` engine: a transformers causal LM driven by reinforge's own continuous
batching (``engine``: the engine and its worker thread; ``batch_admission`` and
``decode_loop``: the running batch; ``kv_cache``: its KV layout;
``logits_padding``: the CPU projection padding)."""

from reinforge.models.engines.hf.engine import HFEngine
from reinforge.models.engines.hf.loading import load_causal_lm

__all__ = ["HFEngine", "load_causal_lm"]
