"""Experience operators: per-step transforms between rollouts and the trainer.

Operators filter, re-score and annotate the experiences of one explore step
(``reward_filter``, ``reward_std_filter``, ``invalid_reward_filter``,
``reward_shaping_mapper``, ``pass_rate_calculator``, ``group_advantage``, ``llm_judge``). Configs
name them (``{"name": ..., "args": {...}}``); ``create_operators`` builds them, and
``reinforge.buffer.pipeline.ExperiencePipeline`` runs them in order. Importing this
package registers the built-ins in ``EXPERIENCE_OPERATORS``.
"""

from reinforge.buffer.operators.base import (
    AuxiliaryModels,
    ExperienceOperator,
    ExperienceOperatorV1,
    OperatorResult,
)
from reinforge.buffer.operators.factory import (
    OperatorConfigError,
    OperatorConfigInput,
    OperatorConfigLike,
    create_operator,
    create_operators,
    operator_config_parts,
)
from reinforge.buffer.operators.group_advantage import GroupAdvantage
from reinforge.buffer.operators.invalid_reward_filter import InvalidRewardFilter
from reinforge.buffer.operators.legacy import LegacyOperatorAdapter, ensure_v1
from reinforge.buffer.operators.llm_judge import LLMJudge
from reinforge.buffer.operators.pass_rate_calculator import PassRateCalculator
from reinforge.buffer.operators.registry import EXPERIENCE_OPERATORS
from reinforge.buffer.operators.reward_filter import RewardFilter
from reinforge.buffer.operators.reward_shaping_mapper import RewardShapingMapper
from reinforge.buffer.operators.reward_std_filter import RewardStdFilter
from reinforge.buffer.operators.shaping_rules import LengthPenalty, MetricTerm, RewardTerm

__all__ = [
    "EXPERIENCE_OPERATORS",
    "AuxiliaryModels",
    "ExperienceOperator",
    "ExperienceOperatorV1",
    "GroupAdvantage",
    "InvalidRewardFilter",
    "LLMJudge",
    "LegacyOperatorAdapter",
    "LengthPenalty",
    "MetricTerm",
    "OperatorConfigError",
    "OperatorConfigInput",
    "OperatorConfigLike",
    "OperatorResult",
    "PassRateCalculator",
    "RewardFilter",
    "RewardShapingMapper",
    "RewardStdFilter",
    "RewardTerm",
    "create_operator",
    "create_operators",
    "ensure_v1",
    "operator_config_parts",
]
