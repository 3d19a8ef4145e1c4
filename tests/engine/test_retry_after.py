"""A server's Retry-After is honoured, but never for more than RetryPolicy.max_retry_after (600 s), and its
HTTP-date form is read as a date (seconds from now), never as a count of seconds: a run must not stall."""

from __future__ import annotations

import random
import time
from email.utils import formatdate

import pytest

from convbench_datasets.engine.backends.openai_compat import RetryPolicy, _retry_after

CAP = 600.0  # the cap the bug report states (10 minutes): a longer Retry-After must not stall a run


def test_the_default_cap_is_ten_minutes() -> None:
    assert RetryPolicy().max_retry_after == CAP


@pytest.mark.parametrize("asked", [601.0, 3600.0, 86400.0 * 365, 1.7e9])
def test_a_huge_retry_after_is_capped(asked: float) -> None:
    rng = random.Random(0)
    assert RetryPolicy().delay(0, asked, rng) == CAP  # more than 600 s asked: 600 s waited
    assert RetryPolicy().delay(5, asked, rng) == CAP  # whatever the attempt
    assert RetryPolicy(max_retry_after=30.0).delay(0, asked, rng) == 30.0  # a policy's own cap holds as well


def test_a_retry_after_under_the_cap_is_waited_as_given() -> None:
    rng = random.Random(0)
    assert RetryPolicy().delay(0, 7.0, rng) == 7.0
    assert RetryPolicy().delay(0, 600.0, rng) == 600.0
    assert RetryPolicy().delay(0, 0.0, rng) == 0.0


def test_a_huge_retry_after_from_the_header_is_capped() -> None:
    # the path a reply takes: header -> seconds -> the policy's wait
    asked = _retry_after({"Retry-After": "999999"})
    assert asked == 999999.0
    assert RetryPolicy().delay(0, asked, random.Random(0)) == CAP


def test_an_http_date_a_few_seconds_ahead_is_a_few_seconds() -> None:
    # by hand: a date 5 s from now (RFC 7231's IMF-fixdate, whole seconds) is 4 to 5 s away when read back
    # (formatdate drops the fraction of the second; the read takes far less than a second)
    ahead = time.time() + 5
    waited = _retry_after({"Retry-After": formatdate(ahead, usegmt=True)})
    assert waited is not None and 3.0 <= waited <= 5.0, waited
    assert RetryPolicy().delay(0, waited, random.Random(0)) == waited  # under the cap: waited as given


def test_an_http_date_in_the_past_is_no_wait() -> None:
    # a date already gone (60 s ago): retry at once, never a negative wait nor the date read as seconds
    assert _retry_after({"Retry-After": formatdate(time.time() - 60, usegmt=True)}) == 0.0


def test_retry_after_values_that_say_nothing() -> None:
    assert _retry_after({}) is None and _retry_after(None) is None
    assert _retry_after({"Retry-After": "soon"}) is None  # neither seconds nor a date
    assert _retry_after({"Retry-After": "-5"}) == 0.0  # a negative count: no wait
    assert _retry_after({"Retry-After": "3"}) == 3.0
