"""The NC-Bench judge prompt exactly as the released pipeline writes it.

The wording is not convbench's: it is read, at run time, from the upstream ``utils.py`` (IBM/nc-bench at
the commit pinned in ``sources.yaml``), downloaded and checksum-verified like the data, or found in a
mirror (``--sources`` / ``CONVBENCH_SOURCES``). The file is parsed with :mod:`ast` and never imported or
run: only its module-level string constants are used (the system prompt, the judge template and one
label-definition block per label group). Which block a task gets is the ``released_definitions`` column
of ``patterns.yaml``.

Rendering follows the released ``generate_judge_prompts``:

- the transcript numbers every message by its index in the row's messages, the system message counted
  but not shown, as ``{i} USER: ...`` / ``{i} AGENT: ...``; the model's output, reduced to its first line
  and stripped, is line ``i + 1`` after the last message ``i``;
- placeholders are replaced one after the other in the released order: ``<labels>`` (the stripped
  block), ``<last_agent_turn_num>``, ``<transcript_with_turn_num>``, ``<prior_turn>`` (``line {i - 1}``
  when ``i - 1 >= 1``, else empty), ``<request_details>``;
- ``<request_details>`` is empty, as in the released pipeline, whose generation files never carry that
  field; ``fill_request_details=True`` puts the row's ``request_details`` there instead (the paper's
  stated intent), which a run records in its signature.
"""

from __future__ import annotations

import ast
import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..errors import ConvbenchError, DataFormatError
from ..sources import fetch
from .patterns import pattern_table
from .upstream import source_files

SYSTEM_CONSTANT = "sys_prompt"
TEMPLATE_CONSTANT = "judge_prompt"
SPEAKERS = {"user": "USER", "assistant": "AGENT", "agent": "AGENT"}  # the released script's two speakers


@dataclass(frozen=True)
class ReleasedPrompt:
    """The released system prompt, judge template and label-definition blocks, as read from ``utils.py``."""

    system: str
    template: str
    definitions: dict[str, str]
    sha256: str  # of the utils.py file the wording came from

    def render(self, row: Mapping[str, Any], output: str, *, fill_request_details: bool = False) -> list[dict[str, str]]:
        """The two chat messages the released pipeline sends the judge for ``row`` and a model ``output``.

        ``row`` needs ``messages``, ``set`` and ``task`` (and ``request_details`` when
        ``fill_request_details``), as in the NC-Bench dataset.
        """
        if not isinstance(output, str):
            raise TypeError(f"the model output must be text, got {type(output).__name__}")
        missing = [field for field in ("messages", "set", "task") if field not in row]
        if missing:
            raise DataFormatError(f"row {row.get('id')!r}: the released judge prompt needs field(s) {missing} "
                                  "(rows of the NC-Bench dataset have them)")
        block_name = pattern_table().entry(row["set"], row["task"]).released_definitions
        if block_name not in self.definitions:
            raise ConvbenchError(f"the released utils.py has no label block {block_name!r} (task {row['task']!r})")
        messages = row["messages"]
        if not messages:
            raise DataFormatError(f"row {row.get('id')!r}: field 'messages' is empty")
        lines = []
        for i, message in enumerate(messages):
            speaker = SPEAKERS.get(message["role"])
            if speaker is not None:  # the system message keeps its number but is not shown
                lines.append(f"{i} {speaker}: {message['content']}")
        last = len(messages) - 1
        lines.append(f"{last + 1} AGENT: {output.split(chr(10))[0].strip()}")
        prior = f"line {last - 1}" if last - 1 >= 1 else ""
        details = (row.get("request_details") or "") if fill_request_details else ""
        user = (
            self.template.replace("<labels>", self.definitions[block_name].strip())
            .replace("<last_agent_turn_num>", str(last + 1))
            .replace("<transcript_with_turn_num>", "\n".join(lines))
            .replace("<prior_turn>", prior)
            .replace("<request_details>", details)
        )
        return [{"role": "system", "content": self.system}, {"role": "user", "content": user}]


def string_constants(path: str | os.PathLike[str]) -> dict[str, str]:
    """Module-level ``NAME = '...'`` assignments of a Python file, read with :mod:`ast` (nothing runs)."""
    source = Path(path).read_text(encoding="utf-8")
    try:
        tree = ast.parse(source, filename=str(path))
    except SyntaxError as err:
        raise ConvbenchError(f"{path}: not valid Python ({err.msg}, line {err.lineno})") from err
    found = {}
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
            found[node.targets[0].id] = node.value.value
    return found


def read_released_prompt(path: str | os.PathLike[str]) -> ReleasedPrompt:
    """The released wording from a ``utils.py`` file; every block ``patterns.yaml`` names must be there."""
    constants = string_constants(path)
    needed = {SYSTEM_CONSTANT, TEMPLATE_CONSTANT} | {e.released_definitions for e in pattern_table().tasks}
    missing = sorted(needed - set(constants))
    if missing:
        raise ConvbenchError(f"{path}: the released judge prompt lacks the string constant(s) {missing}")
    definitions = {name: constants[name] for name in sorted(needed - {SYSTEM_CONSTANT, TEMPLATE_CONSTANT})}
    digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    return ReleasedPrompt(constants[SYSTEM_CONSTANT], constants[TEMPLATE_CONSTANT], definitions, digest)


@lru_cache(maxsize=4)
def _released(sources_key: str | None) -> ReleasedPrompt:
    # keep_copy: read at run time, so a copy in the download cache keeps later commands working offline
    return read_released_prompt(fetch(source_files("code")["utils"], sources_dir=sources_key, progress=False,
                                      keep_copy=True))


def released_prompt(sources_dir: str | os.PathLike[str] | None = None) -> ReleasedPrompt:
    """The released judge prompt, from the pinned upstream ``utils.py`` (mirror, cache or download).

    Example (needs the mirror or network):
        >>> prompt = released_prompt()                              # doctest: +SKIP
        >>> prompt.render(row, "Two blocks.")[0]["content"][:30]    # doctest: +SKIP
        'You are a classification model'
    """
    from ..sources import mirror_dir

    mirror = mirror_dir(sources_dir)
    return _released(str(mirror) if mirror is not None else None)
