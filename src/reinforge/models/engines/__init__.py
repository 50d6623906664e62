"""Inference engines, one package each.

* ``hf``: a transformers model embedded in the process, with continuous batching.
* ``mock``: a deterministic scripted policy that needs no weights.
* ``openai``: any OpenAI-compatible server by URL (vLLM, SGLang, ``reinforge serve``),
  driven with token-id prompts so experiences stay token-exact.
* ``vllm``: vLLM servers that reinforge starts, health-checks, load-balances and
  updates with the trainer's weights.
"""
