"""The ``vllm`` engine: vLLM servers (replicas) that reinforge starts and keeps in sync."""

from reinforge.models.engines.vllm.engine import VLLMEngine, WeightSyncError
from reinforge.models.engines.vllm.server import VLLMServer, VLLMStartError

__all__ = ["VLLMEngine", "VLLMServer", "VLLMStartError", "WeightSyncError"]
