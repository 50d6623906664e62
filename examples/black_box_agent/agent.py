"""A black-box agent: a standalone program on the plain ``openai`` SDK, nothing of reinforge.

It reads a task row (JSON) on standard input, asks the model the question, asks it to
check its answer, and prints the final reply. The base URL, key and model name come
from the environment (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``, ``OPENAI_MODEL``), as
for any OpenAI-compatible server: under reinforge they point at the recording endpoint
of the workflow that started this process, which records both calls token-exact.

Try it by hand against ``reinforge serve``::

    reinforge serve --model smollm2-135m-instruct &
    echo '{"question": "What is 12 + 30?"}' | OPENAI_BASE_URL=http://127.0.0.1:8000/v1 \\
        OPENAI_API_KEY=none OPENAI_MODEL=smollm2-135m-instruct python agent.py
"""

from __future__ import annotations

import json
import os
import sys

import openai

CHECK = "Check your answer. Reply with just the final number."


def main() -> None:
    task = json.loads(sys.stdin.read())
    client = openai.OpenAI(max_retries=0)
    model = os.environ["OPENAI_MODEL"]
    sampling = {"temperature": 1.0, "max_tokens": int(os.environ.get("AGENT_MAX_TOKENS", 32))}
    messages = [{"role": "user", "content": f"{task['question']} Answer with just the number."}]
    first = client.chat.completions.create(model=model, messages=messages, **sampling)
    messages.append({"role": "assistant", "content": first.choices[0].message.content or ""})
    messages.append({"role": "user", "content": CHECK})
    final = client.chat.completions.create(model=model, messages=messages, **sampling)
    print(final.choices[0].message.content or "")


if __name__ == "__main__":
    main()
