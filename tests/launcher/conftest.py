"""Puts this folder on ``sys.path``: its test files share helpers from a module beside them
(``run_modes_project.py``), which pytest's importlib import mode would not find by name."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = str(Path(__file__).resolve().parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)
