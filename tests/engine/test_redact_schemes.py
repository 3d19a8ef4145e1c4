"""An Authorization value is redacted whole, whatever its scheme: ``Bearer``, ``Basic`` and ``token`` (GitHub-style
``Authorization: token XYZ``), in any case, never leaving the credential after the scheme word."""

from __future__ import annotations

import pytest

from convbench_datasets.engine.redact import REDACTED, redact

SECRET = "ghp_Zx9YwV8uT7sR6qP5oN4m"  # made up, shaped as a GitHub token

TEMPLATES = ["Authorization: {scheme} {secret}", "authorization={scheme} {secret}",
             '{{"Authorization": "{scheme} {secret}"}}', "'authorization': '{scheme} {secret}'"]


@pytest.mark.parametrize("scheme", ["token", "Token", "TOKEN", "bearer", "Bearer", "basic", "Basic"])
@pytest.mark.parametrize("template", TEMPLATES)
def test_every_scheme_is_redacted_with_its_credential(scheme: str, template: str) -> None:
    text = "server said: " + template.format(scheme=scheme, secret=SECRET) + " is not valid"
    shown = redact(text)  # no secret given: the pattern alone must find it
    assert SECRET not in shown and REDACTED in shown, shown
    assert shown.startswith("server said: ") and shown.endswith(" is not valid")


def test_a_token_scheme_value_is_replaced_as_one() -> None:
    # by hand: the header name and separator are kept, the scheme and credential become one [redacted]
    assert redact(f"Authorization: token {SECRET}") == "Authorization: [redacted]"
    assert redact(f"bad header authorization: Token {SECRET}; retry") == "bad header authorization: [redacted]; retry"
    assert redact(f"Authorization: Basic {SECRET} is invalid") == "Authorization: [redacted] is invalid"  # as before


def test_the_word_token_elsewhere_is_left_alone() -> None:
    assert redact("the token limit was reached") == "the token limit was reached"
    assert redact("max tokens: 16") == "max tokens: 16"
