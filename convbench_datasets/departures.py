"""How a run departs from its paper's setup, read from its signature: the report's "not directly comparable".

Nothing here is a list of settings to remember: a benchmark's settings each declare the paper's value
(:mod:`.settings`); what every run has is read the same way for every benchmark: the rows it scored
(``--limit``, ``--sample``, ``--shard``), the request parameters each model role was sent (``--param``,
``--judge-param``: recorded in the roles' identities), the judge, and the dataset build the rows came from
(``dataset_build``, which a benchmark fills and judges through its ``build_departures``).

Example:
    >>> from convbench_datasets.registry import get_benchmark
    >>> nico = get_benchmark("nico")
    >>> run_departures(nico, {"task": "open_domain", "limit": 5, "model_identity": {"params": {"temperature": 0.7}}})
    ['only the first 5 rows (--limit)', 'generator request parameters temperature=0.7 (--param; paper: none)']
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from .settings import setting_departures


def run_departures(bench: Any, signature: Mapping[str, Any], records: Sequence[Mapping[str, Any]] = ()) -> list[str]:
    """Every way ``signature`` (a run of ``bench``) departs from the paper's setup, one line each; empty when
    its numbers are the paper's kind. The judge first, then the benchmark's settings, the rows, the roles'
    request parameters and the dataset build."""
    lines = judge_departures(bench, signature)
    settings = getattr(bench, "settings", None)
    if settings is not None:
        lines += setting_departures(settings, signature, records)
    lines += row_departures(signature)
    lines += request_departures(signature)
    build = signature.get("dataset_build")
    judge_build = getattr(bench, "build_departures", None)
    if isinstance(build, Mapping) and judge_build is not None:
        lines += judge_build(build)
    return lines


def judge_departures(bench: Any, signature: Mapping[str, Any]) -> list[str]:
    """The primary judge, when it is not the paper's (its name in the judge spec, any provider)."""
    paper = getattr(bench, "paper_judge", None)
    if not paper:
        return []
    judge = str(signature.get("judge") or "")
    return [] if paper.lower() in judge.lower() else [f"judge {judge or 'not recorded'} (paper: {paper})"]


def row_departures(signature: Mapping[str, Any]) -> list[str]:
    """A run that scored part of the rows: the first N (``limit``), a sample, one shard."""
    lines = []
    if signature.get("limit") is not None:
        lines.append(f"only the first {signature['limit']} rows (--limit)")
    sample = signature.get("sample")
    if isinstance(sample, Mapping):
        by = sample.get("by") or []
        spread = f", spread over {' and '.join(map(str, by))}" if by else ""
        lines.append(f"a sample of {sample.get('n')} rows (--sample, seed {sample.get('seed')}{spread})")
    shard = signature.get("shard")
    if isinstance(shard, Mapping):
        rows = f", {shard['rows']} rows" if isinstance(shard.get("rows"), int) else ""
        lines.append(f"shard {shard.get('index')}/{shard.get('count')} only (--shard{rows})")
    return lines


def role_params(signature: Mapping[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """``(role, flag, params)`` for each model role sent request parameters of the user's (the generator,
    the judge, each further judge), read from the identities the signature records."""
    found = []
    roles = [("generator", "--param", signature.get("model_identity"))]
    identities = signature.get("judge_identities")
    if isinstance(identities, list) and len(identities) > 1:
        roles += [(f"judge {k + 1}", "--judge-param", identity) for k, identity in enumerate(identities)]
    else:
        roles.append(("judge", "--judge-param", signature.get("judge_identity")))
    for role, flag, identity in roles:
        params = identity.get("params") if isinstance(identity, Mapping) else None
        if isinstance(params, Mapping) and params:
            found.append((role, flag, dict(params)))
    return found


def request_departures(signature: Mapping[str, Any]) -> list[str]:
    """Request parameters the user added to a role's requests: the paper sent none (``null``: a field left out)."""
    lines = []
    for role, flag, params in role_params(signature):
        shown = ", ".join(f"{key}={json.dumps(value, ensure_ascii=False)}" for key, value in sorted(params.items()))
        lines.append(f"{role} request parameters {shown} ({flag}; paper: none)")
    return lines


__all__ = ["judge_departures", "request_departures", "role_params", "row_departures", "run_departures"]
