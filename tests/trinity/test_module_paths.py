"""Trinity-RFT imports work under ``reinforge.trinity`` with the names Trinity code uses."""

from __future__ import annotations

import importlib

import pytest

IMPORTS = {
    "reinforge.trinity.common.workflows.on_policy_distill_workflow": [
        "OnPolicyDistillWorkflow", "OnPolicyDistillMathWorkflow",
    ],
    "reinforge.trinity.common.workflows": [
        "OnPolicyDistillWorkflow", "OnPolicyDistillMathWorkflow",
        "AsyncOnPolicyDistillWorkflow", "AsyncOnPolicyDistillMathWorkflow",
        "WORKFLOWS", "Workflow", "SimpleWorkflow", "Task", "AgentScopeWorkflowAdapter",
        "AgentScopeReActWorkflow", "AgentScopeReactMathWorkflow", "AgentScopeV0ReactMathWorkflow",
        "AgentScopeV1ReactSearchWorkflow", "AlfworldWorkflow", "StepWiseAlfworldWorkflow",
        "RAFTAlfworldWorkflow", "RAFTReflectAlfworldWorkflow",
    ],
    "reinforge.trinity.common.workflows.workflow": [
        "WORKFLOWS", "Workflow", "SimpleWorkflow", "MultiTurnWorkflow", "Task",
    ],
    "reinforge.trinity.common.workflows.step_wise_workflow": [
        "StepWiseRewardWorkflow", "RewardPropagationWorkflow",
    ],
    "reinforge.trinity.common.workflows.customized_math_workflows": ["MathBoxedWorkflow"],
    "reinforge.trinity.common.workflows.math_workflows": ["MathWorkflow"],
    "reinforge.trinity.common.workflows.envs.frozen_lake.workflow": ["FrozenLakeWorkflow"],
    "reinforge.trinity.common.workflows.envs.webshop.webshop_workflow": [
        "WebShopWorkflow", "parse_action", "validate_action",
    ],
    "reinforge.trinity.common.workflows.envs.alfworld.alfworld_workflow": [
        "AlfworldWorkflow", "StepWiseAlfworldWorkflow", "parse_action", "format_observation",
    ],
    "reinforge.trinity.common.workflows.envs.alfworld.RAFT_alfworld_workflow": [
        "RAFTAlfworldWorkflow", "parse_response",
    ],
    "reinforge.trinity.common.workflows.envs.alfworld.RAFT_reflect_alfworld_workflow": [
        "RAFTReflectAlfworldWorkflow", "parse_response",
    ],
    "reinforge.trinity.common.workflows.agentscope_workflow": [
        "AgentScopeWorkflowAdapter", "AgentScopeWorkflowAdapterV1", "WorkflowOutput", "JudgeOutput",
    ],
    "reinforge.trinity.common.workflows.agentscope.react.react_workflow": [
        "AgentScopeReActWorkflow",
    ],
    "reinforge.trinity.common.workflows.envs.agentscope.agentscopev1_react_workflow": [
        "AgentScopeReactMathWorkflow",
    ],
    "reinforge.trinity.common.workflows.envs.agentscope.agentscopev0_react_workflow": [
        "AgentScopeV0ReactMathWorkflow",
    ],
    "reinforge.trinity.common.workflows.envs.agentscope.agentscopev1_search_workflow": [
        "AgentScopeV1ReactSearchWorkflow",
    ],
    "reinforge.trinity.common.experience": ["Experience", "group_by"],
    "reinforge.trinity.common.models.model": ["ModelWrapper"],
    "reinforge.trinity.common.config": ["FormatConfig", "GenerationConfig", "InferenceModelConfig"],
    "reinforge.trinity.common.rewards.reward_fn": ["REWARD_FUNCTIONS", "RewardFn", "RMGalleryFn"],
    "reinforge.trinity.common.rewards.basic_reward": ["MathBoxedRewardFn", "AccuracyReward"],
    "reinforge.trinity.common.rewards.accuracy_reward": ["AccuracyReward"],
    "reinforge.trinity.common.rewards.format_reward": ["FormatReward"],
    "reinforge.trinity.common.rewards.countdown_reward": ["CountDownRewardFn"],
    "reinforge.trinity.common.rewards.math_reward": ["MathRewardFn", "MathBoxedRewardFn"],
    "reinforge.trinity.buffer.operators": ["ExperienceOperator", "EXPERIENCE_OPERATORS"],
    "reinforge.trinity.buffer.operators.experience_operator": ["ExperienceOperator"],
    "reinforge.trinity.utils.log": ["get_logger"],
    "reinforge.trinity.utils.registry": ["Registry"],
}  # fmt: skip


@pytest.mark.parametrize("module", sorted(IMPORTS))
def test_trinity_module_paths_export_the_names(module: str) -> None:
    loaded = importlib.import_module(module)
    for name in IMPORTS[module]:
        assert hasattr(loaded, name), f"{module} has no {name}"


def test_they_are_reinforge_objects() -> None:
    import reinforge
    from reinforge.trinity.common.experience import Experience
    from reinforge.trinity.common.models.model import ModelWrapper
    from reinforge.trinity.common.workflows import WORKFLOWS, Workflow

    assert Workflow is reinforge.Workflow and WORKFLOWS is reinforge.WORKFLOWS
    assert Experience is reinforge.Experience and ModelWrapper is reinforge.ModelWrapper


def test_a_trinity_style_filter_with_group_by() -> None:
    """A filter written like Trinity-RFT's (its metrics, its ``group_by`` import)."""
    import numpy as np

    from reinforge import EID
    from reinforge.trinity.buffer.operators import ExperienceOperator
    from reinforge.trinity.common.experience import Experience, group_by

    class SpreadFilter(ExperienceOperator):
        def __init__(self, threshold: float = 0.0):
            self.threshold = threshold

        def process(self, exps):
            kept = []
            for _, group in group_by(exps, id_type="task").items():
                if np.std([e.reward for e in group]) > self.threshold:
                    kept.extend(group)
            return kept, {"filtered_count": len(exps) - len(kept)}

    exps = [
        Experience(tokens=[1, 2], prompt_length=1, reward=r, eid=EID(task=t, run=i))
        for t, rewards in enumerate([[0.0, 1.0], [1.0, 1.0]])
        for i, r in enumerate(rewards)
    ]
    kept, metrics = SpreadFilter().process(exps)
    assert [e.eid.task for e in kept] == [0, 0] and metrics == {"filtered_count": 2}


def test_get_logger() -> None:
    from reinforge.trinity.utils.log import get_logger

    logger = get_logger(__name__, in_ray_actor=True)
    assert logger.name == __name__
