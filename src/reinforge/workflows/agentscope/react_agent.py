"""An AgentScope ReAct agent set up for training, and the tools the built-in workflows
give it.

AgentScope 2.0's ``Agent`` is a reasoning-acting loop: it calls the model with its
tool kit, runs the tools the reply calls, and repeats until the model answers (or,
with a structured schema, until it calls the ``GenerateStructuredOutput`` tool with
the answer's fields). Its memory is ``agent.state.context``. For training, the
runtime-state injection (the current time and context usage written into the
prompt) is turned off, so a task's prompt is the same on every run, and every tool
given here is allowed to run without asking a user.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from typing import Any

#: how long a ``execute_python_code`` call may run (seconds) unless the task says otherwise
PYTHON_TIMEOUT = 10.0
#: characters of a tool's output the agent sees
TOOL_OUTPUT_LIMIT = 2000


def allowed_tool(func: Callable[..., Any], name: str | None = None) -> Any:
    """``func`` as an AgentScope tool that runs without asking for permission (its
    description and parameters come from its docstring and annotations)."""
    from agentscope.permission import PermissionBehavior, PermissionDecision
    from agentscope.tool import FunctionTool

    return FunctionTool(
        func,
        name=name,
        permission=PermissionDecision(
            behavior=PermissionBehavior.ALLOW, message="allowed during training"
        ),
    )


def python_code_tool(timeout: float = PYTHON_TIMEOUT) -> Any:
    """A tool that runs Python code in a fresh interpreter and returns what it printed."""

    async def execute_python_code(code: str) -> str:
        """Execute Python code in a fresh interpreter and return what it printed.

        Use print() to see values; each call starts from scratch.

        Args:
            code (str): The Python source to run.
        """
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-I",
            "-c",
            code,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        try:
            out, _ = await asyncio.wait_for(proc.communicate(), timeout)
        except TimeoutError:
            return f"Error: the code ran past {timeout:g} s and was stopped."
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
        text = out.decode(errors="replace")
        if proc.returncode:
            text += f"\n(exit status {proc.returncode})"
        return text[-TOOL_OUTPUT_LIMIT:] or "(no output)"

    return allowed_tool(execute_python_code)


def react_agent(
    chat_model: Any,
    system_prompt: str,
    *,
    tools: list[Any] = (),  # type: ignore[assignment]
    max_iters: int = 10,
    name: str = "react_agent",
) -> Any:
    """An AgentScope ``Agent`` (ReAct loop) over ``chat_model`` with ``tools``."""
    from agentscope.agent import Agent, InjectionConfig, ReActConfig
    from agentscope.tool import Toolkit

    return Agent(
        name=name,
        system_prompt=system_prompt,
        model=chat_model,
        toolkit=Toolkit(tools=list(tools)),
        react_config=ReActConfig(max_iters=max_iters),
        injection_config=InjectionConfig(inject_runtime_state=False),
    )


def user_message(text: str) -> Any:
    from agentscope.message import UserMsg

    return UserMsg(name="user", content=text)


def reply_text(msg: Any) -> str:
    """The text of an agent's reply message."""
    if msg is None:
        return ""
    get_text = getattr(msg, "get_text_content", None)
    if callable(get_text):
        return get_text() or ""
    content = getattr(msg, "content", msg)
    if isinstance(content, str):
        return content
    return "".join(getattr(block, "text", "") or "" for block in content or [])


def structured_field(msg: Any, field: str) -> str:
    """``field`` of the reply's structured output, or the reply's text when the agent
    gave none (e.g. it ran out of iterations)."""
    structured = getattr(msg, "structured_output", None)
    if isinstance(structured, dict) and field in structured:
        return str(structured[field])
    return reply_text(msg)


def memory_length(agent: Any) -> int:
    """How many messages the agent's memory holds."""
    return len(getattr(getattr(agent, "state", None), "context", []) or [])
