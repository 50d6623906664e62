"""Modules that run inside the vLLM virtualenv (put on its PYTHONPATH, never imported by
reinforge itself): the worker extension and the server supervisor."""
