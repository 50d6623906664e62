"""Mirror of ``trinity.common.rewards.basic_reward`` (older Trinity-RFT kept every reward
here): the same names as ``reinforge.trinity.common.rewards``."""

from reinforge.trinity.common.rewards import *  # noqa: F403
from reinforge.trinity.common.rewards import __all__  # noqa: F401
