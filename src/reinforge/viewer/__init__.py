"""``reinforge view RUN_DIR``: a local web page to browse a run.

It shows the run's curves (metrics.jsonl), its steps, groups and experiences
(buffer.db, read-only) with per-token colours, multi-turn conversations with tool
calls, failed and masked tasks, and one task at two steps side by side. See
docs/viewer.md.
"""

from reinforge.viewer.app import create_app, serve_viewer

__all__ = ["create_app", "serve_viewer"]
