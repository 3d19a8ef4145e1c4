"""Keeping credentials out of messages: servers sometimes echo the key they were sent in an error body.

Example:
    >>> redact("Incorrect API key provided: Bearer sk-abc123def456", ["sk-abc123def456"])
    'Incorrect API key provided: Bearer [redacted]'
    >>> redact("Authorization: Basic dXNlcjpwYXNz is invalid")
    'Authorization: [redacted] is invalid'
    >>> redact("no route to http://user:sk-abc@host/v1")
    'no route to http://[redacted]@host/v1'
"""

from __future__ import annotations

import re
from collections.abc import Iterable

REDACTED = "[redacted]"
# An Authorization header's value (scheme and credentials) and any "Bearer <token>".
_AUTHORIZATION = re.compile(r"(authorization[\"']?\s*[:=]\s*[\"']?)(?:(?:bearer|basic|token)\s+)?[^\s\"',;]+", re.IGNORECASE)
_BEARER = re.compile(r"(bearer\s+)(?!\[redacted\])[^\s\"',;]+", re.IGNORECASE)
# a URL's user-info (scheme://user:password@): base URLs with it are refused, but a server may echo one
_USERINFO = re.compile(r"([a-z][a-z0-9+.-]*://)(?!\[redacted\]@)[^/\s@\"']+@", re.IGNORECASE)


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with each secret (longest first), every URL's user-info and every Authorization / Bearer
    value replaced.

    Call it before shortening a message: a cut could leave the head of a key that no longer matches.
    """
    # keys of 1-3 characters are left to the patterns: replacing them everywhere would garble the message
    for secret in sorted({s for s in secrets if s and len(s) >= 4}, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    text = _USERINFO.sub(lambda m: m.group(1) + REDACTED + "@", text)
    text = _AUTHORIZATION.sub(lambda m: m.group(1) + REDACTED, text)
    return _BEARER.sub(lambda m: m.group(1) + REDACTED, text)
