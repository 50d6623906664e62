"""Mirror of ``rllm.globals``: the thought delimiters rLLM's rewards split on, and the
SWE-bench harness settings rLLM keeps beside them (read by nothing in reinforge)."""

import os
import tempfile

from reinforge.rewards.rllm_math import THOUGHT_DELIMITER_END, THOUGHT_DELIMITER_START

SWEBENCH_DATASET_NAME = "princeton-nlp/SWE-bench_Verified"
MAX_WORKERS = 4
FORCE_REBUILD = False
CACHE_LEVEL = "None"
CLEAN = False
OPEN_FILE_LIMIT = 4096
TIMEOUT = 1_800
NAMESPACE = None
REWRITE_REPORTS = False
SPLIT = "test"
INSTANCE_IMAGE_TAG = "latest"
REPORT_DIR = os.path.join(tempfile.gettempdir(), "rllm_swebench_reports")
MODEL_NAME_OR_PATH = "rllm"

__all__ = [
    "CACHE_LEVEL",
    "CLEAN",
    "FORCE_REBUILD",
    "INSTANCE_IMAGE_TAG",
    "MAX_WORKERS",
    "MODEL_NAME_OR_PATH",
    "NAMESPACE",
    "OPEN_FILE_LIMIT",
    "REPORT_DIR",
    "REWRITE_REPORTS",
    "SPLIT",
    "SWEBENCH_DATASET_NAME",
    "THOUGHT_DELIMITER_END",
    "THOUGHT_DELIMITER_START",
    "TIMEOUT",
]
