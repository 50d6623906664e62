"""Registry: registration, unknown-name errors that list what is known, dotted-path import."""

from __future__ import annotations

import collections

import pytest

from reinforge.core import Registry, RegistryError


def make_registry() -> Registry:
    reg = Registry("workflow")

    @reg.register_module("math_workflow")
    class MathWorkflow:
        pass

    @reg.register_module()
    class ChatWorkflow:
        pass

    return reg


def test_register_and_get() -> None:
    reg = make_registry()
    assert reg.get("math_workflow").__name__ == "MathWorkflow"
    assert reg.get("ChatWorkflow").__name__ == "ChatWorkflow"
    assert "math_workflow" in reg
    assert sorted(reg) == ["ChatWorkflow", "math_workflow"]
    assert len(reg) == 2
    assert set(reg.modules) == {"ChatWorkflow", "math_workflow"}
    assert "math_workflow" in repr(reg)


def test_unknown_name_lists_known_names_and_suggests() -> None:
    reg = make_registry()
    with pytest.raises(RegistryError) as info:
        reg.get("math_workflw")
    message = str(info.value)
    assert "unknown workflow 'math_workflw'" in message
    assert "Did you mean 'math_workflow'?" in message
    assert "Known workflows: ChatWorkflow, math_workflow" in message
    assert "dotted path" in message
    assert isinstance(info.value, KeyError)


def test_empty_registry_message() -> None:
    with pytest.raises(RegistryError, match=r"Known reward_fns: \(none\)"):
        Registry("reward_fn").get("x")


def test_dotted_path_import() -> None:
    reg = make_registry()
    assert reg.get("collections.OrderedDict") is collections.OrderedDict
    with pytest.raises(RegistryError, match=r"cannot import module 'no_such_pkg\.mod'"):
        reg.get("no_such_pkg.mod.Thing")
    with pytest.raises(RegistryError, match="module 'collections' has no 'Nope'"):
        reg.get("collections.Nope")


def test_duplicate_name_is_rejected_unless_forced() -> None:
    reg = make_registry()
    with pytest.raises(ValueError, match="'math_workflow' is already registered"):

        @reg.register_module("math_workflow")
        class Other:
            pass

    @reg.register_module("math_workflow", force=True)
    class Replacement:
        pass

    assert reg.get("math_workflow") is Replacement


def test_reregistering_the_same_definition_is_allowed() -> None:
    # e.g. a module imported twice under different names redefines the same class
    reg = Registry("workflow")

    def define() -> type:
        class Same:
            pass

        return Same

    first, second = define(), define()
    reg.register_module("same")(first)
    reg.register_module("same")(second)
    assert reg.get("same") is second


def test_a_users_class_takes_a_builtin_name_with_a_warning(caplog) -> None:
    # code written for Trinity-RFT registers its own ``math_boxed_workflow``: the file
    # the user loads is the one meant; two user classes on one name stay an error
    reg = Registry("workflow")
    builtin = type("Builtin", (), {"__module__": "reinforge.workflows.math"})
    reg.register_module("math_boxed_workflow")(builtin)

    class Mine:
        pass

    with caplog.at_level("WARNING", logger="reinforge.core.registry"):
        reg.register_module("math_boxed_workflow")(Mine)
    assert reg.get("math_boxed_workflow") is Mine
    assert "now names" in caplog.text and "reinforge.workflows.math.Builtin" in caplog.text

    class Theirs:
        pass

    with pytest.raises(ValueError, match="already registered"):
        reg.register_module("math_boxed_workflow")(Theirs)
