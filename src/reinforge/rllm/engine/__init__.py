"""Mirror of ``rllm.engine``."""
