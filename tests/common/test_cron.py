"""Kubernetes CronJob schedules as the API server parses them (robfig/cron's standard parser)."""

from __future__ import annotations

import re

import pytest

from common.cron import led_cron, validate_cron


@pytest.mark.parametrize("schedule", ["0 8 * * mon-fri", "*/15 * * * *", "0 19 * * 1-5", "@daily", "0 0 29 2 *"])
def test_schedules_the_api_server_takes(schedule: str) -> None:
    assert validate_cron(schedule) == schedule


@pytest.mark.parametrize(
    ("schedule", "refusal"),
    [
        ("0 \uff18 * * mon-fri", "is not a hour (0-23)"),  # a full-width digit: strconv.Atoi refuses it
        ("0 \u00b3 * * *", "is not a hour (0-23)"),  # a superscript digit (Python's int() refused it with its own text)
        ("0 \u0664 * * *", "is not a hour (0-23)"),  # an Arabic-Indic digit
        ("0 19 * * */99999999999999999999", "at most 9223372036854775807"),  # beyond int64
        ("0 8 * * 7", "Kubernetes refuses 7"),
        ("0 0 30 2 *", "never fires"),
        ("0 8 * * 1-", "'' is not a day of week"),  # strconv.Atoi("") fails
        ("0 8 * * 1/", "must be a positive number"),
    ],
)
def test_schedules_the_api_server_refuses(schedule: str, refusal: str) -> None:
    with pytest.raises(ValueError, match=re.escape(refusal)):
        validate_cron(schedule)


@pytest.mark.parametrize(
    ("cron", "lead", "expected"),
    [
        ("0 8 * * 1,2,3,4,5", 960, "44 7 * * 1,2,3,4,5"),
        ("0 8 * * 1,2,3,4,5", 961, "43 7 * * 1,2,3,4,5"),  # whole minutes, rounded up
        ("10 0 * * 0,6", 1200, "50 23 * * 5,6"),  # Sunday's wake on Saturday
        ("30 9 * * 1", 0, "30 9 * * 1"),
    ],
)
def test_led_cron(cron: str, lead: int, expected: str) -> None:
    assert led_cron(cron, lead) == expected
