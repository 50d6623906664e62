"""Mirror of ``rllm.trainer.env_agent_mappings``.

rLLM maps short names to its bundled agents and environments; reinforge bundles none,
so both mappings start empty. Name an agent or environment class by dotted path in
``workflow_args`` instead (``agent_cls: my_pkg.agents.MyAgent``): it is imported
before the workflow is built, so a workflow that looks strings up here never sees one.
"""

from typing import Any

AGENT_CLASS_MAPPING: dict[str, Any] = {}
ENV_CLASS_MAPPING: dict[str, Any] = {}
