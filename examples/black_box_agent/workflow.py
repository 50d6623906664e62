"""The workflow that runs ``agent.py`` as a black box: the command is all it adds.

``black_box_agent_workflow`` does the rest (a recording endpoint per rollout, the task
row on the agent's stdin, its stdout scored by the taskset's reward function). The
same can be said in YAML alone, with ``workflow_args: {command: ...}``; a subclass
keeps the agent's path next to this file, wherever the run starts.
"""

from __future__ import annotations

from pathlib import Path

from reinforge.workflows import WORKFLOWS, BlackBoxAgentWorkflow


@WORKFLOWS.register_module("arithmetic_black_box_agent")
class ArithmeticBlackBoxAgent(BlackBoxAgentWorkflow):
    command = ["{python}", str(Path(__file__).with_name("agent.py"))]
