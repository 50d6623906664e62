"""Mirror of ``rllm.trainer``: only what workflows import from it."""
