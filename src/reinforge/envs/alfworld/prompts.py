"""What the ALFWorld agent is told, and how its replies become commands (Trinity-RFT's formats).

Two reply formats:

* ``think`` (``alfworld_workflow``, ``step_wise_alfworld_workflow``): reason in
  ``<think>...</think>``, then one command in ``<action>...</action>``;
* ``raft`` (the RAFT workflows): ``<experience>`` (general lessons for this kind of
  task), then ``<think>``, then ``<action>``, all three required; a reply missing one
  makes the trajectory ill-formed (not kept for training).

Observations go to the model as ``Observation: ...``; ``Nothing happens.`` (the
engine's answer to a command that is not admissible) gets a hint appended.
"""

from __future__ import annotations

import re

COMMANDS = """\
  look:                             look around where you are
  inventory:                        list what you carry (you can carry one object)
  go to (receptacle):               walk to a receptacle
  open (receptacle):                open a receptacle
  close (receptacle):               close a receptacle
  take (object) from (receptacle):  pick an object up from a receptacle
  move (object) to (receptacle):    put the object you carry in or on a receptacle
  examine (something):              look closely at a receptacle or an object
  use (object):                     switch an object (a lamp) on or off
  heat (object) with (receptacle):  heat an object with a microwave
  clean (object) with (receptacle): clean an object in a sink basin
  cool (object) with (receptacle):  cool an object in a fridge
  slice (object) with (object):     slice an object with a knife"""

THINK_PROMPT = f"""You are an agent in a text-based household environment. You are given a task \
and must finish it by acting in the room, one command at a time.

## Format
At every step, first reason inside <think> </think>, then give exactly one command inside \
<action> </action>. Never ask the user anything: finish the task by yourself within \
{{max_steps}} steps.

## Commands
{COMMANDS}

Write objects and receptacles with their numbers, exactly as the observations name them. \
For example:
<think>The task needs a spraybottle; cabinets often hold one, so I start with cabinet 1.\
</think><action>go to cabinet 1</action>"""

RAFT_PROMPT = f"""You are an agent in a text-based household environment. You are given a task \
and must finish it by acting in the room, one command at a time.

## Format
Every reply must have these three parts, in this order:
<experience>general principles, strategies and pitfalls for this kind of task</experience>
<think>your reasoning about the current step</think>
<action>exactly one command</action>

## Commands
{COMMANDS}

Write objects and receptacles with their numbers, exactly as the observations name them. \
For example:
<experience>Objects are usually inside or on receptacles of a fitting kind; closed \
receptacles must be opened before their contents can be seen or taken.</experience>
<think>The task needs a spraybottle; cabinets often hold one, so I start with cabinet 1.\
</think>
<action>go to cabinet 1</action>

Your <experience> part must hold lessons that carry over to other tasks of this kind, not \
placeholders and not a plan for this one room. Finish within {{max_steps}} steps."""

NOTHING_HAPPENS = "Nothing happens."
INVALID_HINT = (
    " Check that the command is one of the available commands, written exactly as the "
    "observation names things, and that it is wrapped in <action> </action>."
)

_ACTION = re.compile(r"<action>\s*(.*?)\s*</action>", re.DOTALL)
_RAFT = re.compile(
    r"<experience>\s*(.*?)\s*</experience>.*?<think>\s*(.*?)\s*</think>.*?"
    r"<action>\s*(.*?)\s*</action>",
    re.DOTALL,
)


def system_prompt(style: str, max_steps: int) -> str:
    text = RAFT_PROMPT if style == "raft" else THINK_PROMPT
    return text.replace("{max_steps}", str(max_steps))


def observation_message(observation: str, admissible: list[str] | None = None) -> str:
    """``Observation: ...`` (with the hint after ``Nothing happens.``), followed by the
    admissible commands when ``admissible`` is given."""
    text = observation.strip()
    if NOTHING_HAPPENS in text:
        text += INVALID_HINT
    out = "Observation: " + text
    if admissible is not None:
        out += "\n\nAvailable commands: " + ", ".join(admissible)
    return out


def parse_action(reply: str) -> str:
    """The command inside the reply's first ``<action>...</action>`` ("" if none)."""
    match = _ACTION.search(reply or "")
    return match.group(1).strip() if match else ""


def parse_raft(reply: str) -> dict[str, str]:
    """The ``experience``, ``think`` and ``action`` parts of a RAFT reply ("" if absent)."""
    match = _RAFT.search(reply or "")
    if match is None:
        return {"experience": "", "think": "", "action": ""}
    return {"experience": match[1].strip(), "think": match[2].strip(), "action": match[3].strip()}


def well_formed(reply: str, style: str) -> bool:
    """Whether a reply has every part its format asks for, each non-empty."""
    if style == "raft":
        return all(parse_raft(reply).values())
    return bool(parse_action(reply)) and bool(re.search(r"<think>\s*\S", reply or ""))


def reflection_message(reward: float, steps: int, won: bool, max_steps: int) -> str:
    """What the model is told about its first attempt before it tries again."""
    if won:
        how = f"You finished the task in {steps} steps (reward {reward:.2f}); finish it in fewer."
    elif steps >= max_steps:
        how = (
            f"You used all {max_steps} steps without finishing the task (reward {reward:.2f}): "
            "be more direct."
        )
    else:
        how = (
            f"You stopped after {steps} steps without finishing the task (reward {reward:.2f}), "
            "for example by repeating one command: change your approach."
        )
    return (
        f"That was your first attempt. {how}\n\nThe task now starts again from the beginning. "
        "Update your <experience> with what the first attempt taught you about this kind of "
        "task, never repeat a command that did nothing, and answer as if this were your first "
        "try: do not mention the earlier attempt."
    )
