"""A missing optional dependency names the feature and the extra that installs it."""

import pytest

from reinforge.core.optional import MissingDependencyError, require


def test_present_module_is_returned():
    assert require("json", "none", "x").dumps([1]) == "[1]"


def test_missing_module_names_feature_and_extra():
    with pytest.raises(
        MissingDependencyError, match=r"FrozenLake needs the 'no_such_pkg'.*reinforge\[gym\]"
    ):
        require("no_such_pkg.sub", "gym", "FrozenLake")
    assert issubclass(MissingDependencyError, ImportError)
