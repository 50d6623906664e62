"""The environment state a step acted in, as a short hash stored on the step's experience.

Step-level credit assignment that compares steps taken from the same state (GiGPO's
anchor states) needs to know which steps share a state. Step-wise workflows put a
hash of the observation the agent acted on into ``Experience.info[STATE_HASH]``;
the advantage estimator groups steps of one task by it. The hash is of the text the
agent saw, whitespace-normalised, so two runs that reach the same page or board get
the same key whatever their history.

It lives in ``core`` because both sides use it: workflows write the key and the
algorithms (which import only ``core``) read it.
"""

from __future__ import annotations

import hashlib

#: the ``Experience.info`` key holding the hash of the state a step acted in
STATE_HASH = "state_hash"


def state_hash(observation: str) -> str:
    """A 16-hex-digit SHA-256 prefix of ``observation`` with runs of whitespace collapsed."""
    if not isinstance(observation, str):
        raise TypeError(f"a state is hashed from its text, got {type(observation).__name__}")
    text = " ".join(observation.split())
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
