"""rLLM's module paths over reinforge: ``rllm.X`` becomes ``reinforge.rllm.X``.

Each module re-exports the reinforge names that rLLM code imports from the module of
the same path (see docs/migrating.md; ``reinforge migrate`` rewrites the imports)."""
