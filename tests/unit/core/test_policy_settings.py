"""Policy settings arrive as JSON (``HENGE_POLICY_PARAMS``, ``--params``): every policy's
settings take each of their own values back and refuse a value of the wrong type by name."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from scheduler.core.policies.registry import available_policies, get_policy
from scheduler.core.policy import PolicySettingsError


def _settings(name: str) -> Any:
    settings = get_policy(name).settings
    assert dataclasses.is_dataclass(settings)
    return settings


def _wrong(value: object) -> object:
    """A JSON value of another type than ``value``: text for a number or a switch, a
    switch for text."""
    return True if isinstance(value, str) else str(value).lower()


@pytest.mark.parametrize("name", available_policies())
def test_every_setting_takes_its_own_value_as_json_gives_it(name: str) -> None:
    settings = _settings(name)
    given = {f.name: getattr(settings, f.name) for f in dataclasses.fields(settings)}
    assert get_policy(name, given).settings == settings


@pytest.mark.parametrize(
    "name", [n for n in available_policies() if dataclasses.fields(_settings(n))]
)
def test_every_setting_refuses_a_value_of_another_type_by_name(name: str) -> None:
    settings = _settings(name)
    for field in dataclasses.fields(settings):
        wrong = _wrong(getattr(settings, field.name))
        with pytest.raises(PolicySettingsError, match=f"setting {field.name} of .* not {wrong!r}"):
            get_policy(name, {field.name: wrong})


@pytest.mark.parametrize(
    ("params", "kind"),
    [
        ({"peak_by_rises": "false"}, "true or false"),
        ({"peak_by_rises": 0}, "true or false"),
        ({"settle_rounds": 2.5}, "a whole number"),
        ({"settle_rounds": True}, "a whole number"),
        ({"quiesce_s": None}, "a number"),
        ({"quiesce_s": False}, "a number"),
    ],
)
def test_a_wrong_type_says_what_the_setting_takes(params: dict[str, Any], kind: str) -> None:
    with pytest.raises(PolicySettingsError, match=kind):
        get_policy("henge", params)


def test_a_whole_number_is_taken_where_a_number_goes() -> None:
    settings = get_policy("henge", {"quiesce_s": 30, "backlog_debt": 0}).settings
    assert settings.quiesce_s == 30 and settings.backlog_debt == 0
