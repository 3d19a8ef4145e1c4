"""The NC-Bench judge prompt: a row and a model response in, the judge's chat messages out.

Two wordings. ``released`` (the default) is the released pipeline's prompt, read from the pinned
upstream ``utils.py`` and rendered byte for byte as it renders it (``released_prompt.py``): use it for
numbers that stand next to the paper's. ``convbench`` is convbench's own rewording, described below, or
a user's YAML file with the same keys; results judged with it are not comparable with the paper's.

The ``convbench`` transcript is numbered by message index, so with the system message at index 0 the first turn is
line 1 and the model's response is line ``len(messages)``. Label definitions name the line of the
AGENT's last turn and of its prior turn, and DetailRequest labels name the row's request details.
Wording lives in data files (``templates/judge.yaml``, ``labels.yaml``); a user may pass their own
template file with the same keys.

Example:
    >>> row = {"messages": [{"role": "system", "content": "Be brief."},
    ...                     {"role": "user", "content": "Is it far?"},
    ...                     {"role": "assistant", "content": "Two blocks."},
    ...                     {"role": "user", "content": "Sorry?"}],
    ...        "label_set": ["Repeat", "Other"], "request_details": ""}
    >>> messages = judge_messages(row, "Two blocks.\\nAnything else?", template="convbench")
    >>> print(messages[1]["content"].split("Transcript:\\n")[1].split("\\n\\nLabels")[0])
    1 USER: Is it far?
    2 AGENT: Two blocks.
    3 USER: Sorry?
    4 AGENT: Two blocks.
    >>> print(messages[1]["content"].split("Labels:\\n")[1].split("\\n\\n")[0])
    - Repeat: AGENT's last turn (line 4) says AGENT's prior turn (line 2) again in the same words, fully or partly (a fix for a hearing problem).
    - Other: AGENT's last turn (line 4) fits none of the other labels.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from string import Template
from typing import Any

from .._resources import read_yaml
from ..errors import ConvbenchError
from .released_prompt import ReleasedPrompt, released_prompt
from .schema import named_row

SPEAKERS = {"user": "USER", "assistant": "AGENT"}
# Placeholders each template field must use (user) and may use (system: none, it is the same every row).
_REQUIRED = {"system": set(), "user": {"transcript", "labels", "last_line"}}
_ALLOWED = _REQUIRED
_DEFINITION_FIELDS = {"last_turn", "prior_turn", "request_details"}
_IDENTIFIER = re.compile(r"\$(?:\{(\w+)\}|(\w+))")


@dataclass(frozen=True)
class JudgeTemplate:
    """System and user templates plus one definition template per label."""

    system: str
    user: str
    definitions: dict[str, str]
    source: str = "builtin"

    @property
    def sha256(self) -> str:
        """Hash of the wording, recorded in every result's signature."""
        canonical = json.dumps([self.system, self.user, sorted(self.definitions.items())], ensure_ascii=False)
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def label_definitions() -> dict[str, str]:
    return {name: spec["definition"] for name, spec in read_yaml(__package__, "labels.yaml")["labels"].items()}


@lru_cache(maxsize=1)
def _builtin() -> JudgeTemplate:
    raw = read_yaml(__package__, "templates/judge.yaml")
    return JudgeTemplate(raw["system"], raw["user"], label_definitions())


def load_template(path: str | os.PathLike[str] | None = None) -> JudgeTemplate:
    """The built-in template, or a user's YAML file with ``system``, ``user`` and optionally ``labels``
    (label -> definition) overriding the built-in definitions."""
    if path is None:
        return _builtin()
    import yaml

    try:
        raw = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as err:
        raise ConvbenchError(f"judge template {path}: cannot read it ({err})") from err
    if not isinstance(raw, dict) or not isinstance(raw.get("system"), str) or not isinstance(raw.get("user"), str):
        raise ConvbenchError(f"judge template {path}: needs string fields 'system' and 'user'")
    overrides = raw.get("labels") or {}
    if not isinstance(overrides, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in overrides.items()):
        raise ConvbenchError(f"judge template {path}: 'labels' must map label names to definition text")
    unknown = sorted(set(overrides) - set(label_definitions()))
    if unknown:
        raise ConvbenchError(f"judge template {path}: 'labels' defines unknown label(s) {unknown}")
    definitions = {**label_definitions(), **overrides}
    template = JudgeTemplate(raw["system"], raw["user"], definitions, source=str(path))
    _validate(template, str(path))
    return template


def _identifiers(text: str) -> set[str]:
    return {a or b for a, b in _IDENTIFIER.findall(text.replace("$$", ""))}


def _check_dollars(text: str, where: str) -> None:
    if "$" in _IDENTIFIER.sub("", text.replace("$$", "")):
        raise ConvbenchError(f"judge template {where}: a '$' that is no placeholder (write $$ for a dollar sign)")


def _validate(template: JudgeTemplate, where: str) -> None:
    for field in ("system", "user"):
        _check_dollars(getattr(template, field), f"{where} field {field!r}")
        found = _identifiers(getattr(template, field))
        missing, unknown = _REQUIRED[field] - found, found - _ALLOWED[field]
        if missing or unknown:
            raise ConvbenchError(
                f"judge template {where}: field {field!r} must use {sorted(_REQUIRED[field])} and only "
                f"{sorted(_ALLOWED[field])}; missing {sorted(missing)}, unknown {sorted(unknown)}"
            )
    for label, text in template.definitions.items():
        _check_dollars(text, f"{where} label {label!r}")
        unknown = _identifiers(text) - _DEFINITION_FIELDS
        if unknown:
            raise ConvbenchError(f"judge template {where}: definition of {label!r} uses unknown {sorted(unknown)}")


def judged_text(response: str, first_line_only: bool = True) -> str:
    """The part of a model response the judge sees: its first line (as the released pipeline does),
    or the whole response with line breaks folded into spaces."""
    if first_line_only:
        return response.split("\n")[0].strip()
    return " ".join(line.strip() for line in response.splitlines() if line.strip())


TEMPLATE_NAMES = ("released", "convbench")
TemplateChoice = str | os.PathLike[str] | JudgeTemplate | ReleasedPrompt


def resolve_template(
    template: TemplateChoice = "released", *, sources: str | os.PathLike[str] | None = None
) -> JudgeTemplate | ReleasedPrompt:
    """``"released"`` (the released pipeline's wording, from the pinned upstream file), ``"convbench"``
    (convbench's own), a path to a user's YAML template, or an already loaded template."""
    if isinstance(template, (JudgeTemplate, ReleasedPrompt)):
        return template
    if template == "released":
        return released_prompt(sources)
    if template == "convbench":
        return _builtin()
    if isinstance(template, str) and not template.endswith((".yaml", ".yml")) and not Path(template).exists():
        raise ConvbenchError(f"judge template {template!r}: not {' or '.join(TEMPLATE_NAMES)} and no such file")
    return load_template(template)


def template_name(template: JudgeTemplate | ReleasedPrompt) -> str:
    """How a run's signature names the wording: ``released``, ``builtin`` (convbench's) or the file."""
    return "released" if isinstance(template, ReleasedPrompt) else template.source


def judge_messages(
    row: Mapping[str, Any],
    response: str,
    *,
    template: TemplateChoice = "released",
    first_line_only: bool = True,
    fill_request_details: bool = False,
    sources: str | os.PathLike[str] | None = None,
) -> list[dict[str, str]]:
    """Chat messages asking the judge to label the actions of ``response`` as the AGENT's next turn.

    ``row`` needs ``messages``, ``set`` and ``task`` (released wording) or ``label_set`` (convbench's),
    and ``request_details`` for DetailRequest labels, as in the NC-Bench dataset. The released wording
    judges the response's first line only, as the released pipeline does; ``fill_request_details`` puts
    the row's request details where the released pipeline leaves them empty. A row of a ``datasets``
    split (class ids in ``set`` and ``task``) works as it is.
    """
    row = named_row(row)  # a datasets row holds class ids; the prompt and the pattern table go by names
    template = resolve_template(template, sources=sources)
    if isinstance(template, ReleasedPrompt):
        if not first_line_only:
            raise ConvbenchError("the released judge prompt judges the first line only; "
                                 "use template='convbench' to judge whole responses")
        return template.render(row, response, fill_request_details=fill_request_details)
    if fill_request_details:
        raise ConvbenchError("fill_request_details applies to the released template only "
                             "(convbench's wording always names the request details)")
    if not isinstance(response, str):
        raise TypeError(f"the model response must be text, got {type(response).__name__}")
    lines, last_line, prior_line = _numbered(row["messages"], judged_text(response, first_line_only))
    labels = _label_block(row["label_set"], template, last_line, prior_line, row.get("request_details") or "")
    user = Template(template.user).substitute(transcript="\n".join(lines), labels=labels, last_line=last_line)
    return [{"role": "system", "content": template.system}, {"role": "user", "content": user}]


def _numbered(messages: Sequence[Mapping[str, str]], response: str) -> tuple[list[str], int, int | None]:
    offset = 0 if messages and messages[0]["role"] == "system" else 1
    lines, prior = [], None
    for index, message in enumerate(messages):
        if message["role"] == "system":
            continue
        if message["role"] not in SPEAKERS:
            raise ConvbenchError(f"message {index}: role {message['role']!r} is not user or assistant")
        number = index + offset
        lines.append(f"{number} {SPEAKERS[message['role']]}: {message['content']}")
        if message["role"] == "assistant":
            prior = number
    last = len(messages) + offset
    lines.append(f"{last} AGENT: {response}")
    return lines, last, prior


def _label_block(label_set: Sequence[str], template: JudgeTemplate, last: int, prior: int | None, details: str) -> str:
    fields = {
        "last_turn": f"AGENT's last turn (line {last})",
        "prior_turn": f"AGENT's prior turn (line {prior})" if prior is not None else "AGENT's prior turn",
        "request_details": details or "(none given)",
    }
    block = []
    for label in label_set:
        if label not in template.definitions:
            raise ConvbenchError(f"no definition for judge label {label!r} in template {template.source}")
        block.append(f"- {label}: {Template(template.definitions[label]).substitute(fields)}")
    return "\n".join(block)
