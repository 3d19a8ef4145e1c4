"""Simulating and judging CoCoEval continuations: prompts, and strict parsing of what models return.

Generated turns are read one per line as ``Speaker: utterance``; a speaker must be one of the
instance's participants (as named in the history or the metadata). Judge answers must be one JSON
object: for behaviours, every key a known type and every value a list of turn numbers in range; for
the overall rating, two integers from 1 to 10. Anything else is a problem named in words, which the
runner records, shows the model once more, and counts if it persists.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from string import Template
from typing import Any

from .._resources import read_yaml
from .taxonomy import Behaviour

PROMPT_STYLES = ("vanilla", "taxonomy")
_PAREN = re.compile(r"\s*\([^)]*\)\s*$")
_BULLET = re.compile(r"^(?:[-*\u2022]|\d+[.)])\s+")
# "Name: ..." with a short, name-like label (at most five words, starting with a capital letter)
_STRANGER = re.compile(r"^([A-Z][\w.'-]*(?:\s+[\w.'()-]+){0,4})\s*:\s*\S")


def templates() -> dict[str, Any]:
    return read_yaml(__package__, "templates/prompts.yaml")


def speakers(instance: Mapping[str, Any]) -> list[str]:
    """Who may speak: the history's speakers, then the metadata's participants (sides stripped)."""
    named = [_PAREN.sub("", p) for p in instance["metadata"]["participants"]]
    return list(dict.fromkeys([*(t["speaker"] for t in instance["history"]), *named]))


def _lines(turns: Sequence[Mapping[str, str]]) -> str:
    return "\n".join(f"{t['speaker']}: {t['utterance']}" for t in turns)


def _behaviour_lines(taxonomy: Sequence[Behaviour]) -> str:
    return "\n".join(f"- {b.name}: {b.definition} Example: {b.example}" for b in taxonomy)


def _context(instance: Mapping[str, Any]) -> dict[str, str]:
    meta = instance["metadata"]
    return {"setting": meta["setting"], "participants": "; ".join(meta["participants"]),
            "goals": "; ".join(meta["goals"]) or "(none recorded)", "summary": instance["summary"] or "(nothing before)"}


def simulation_prompt(instance: Mapping[str, Any], so_far: Sequence[Mapping[str, str]], turns: int, style: str,
                      taxonomy: Sequence[Behaviour], problem: str | None = None) -> list[dict[str, str]]:
    spec = templates()["simulation"]
    text = Template(spec[style]).substitute(_context(instance), history=_lines([*instance["history"], *so_far]),
                                            turns=turns, behaviours=_behaviour_lines(taxonomy))
    messages = [{"role": "user", "content": text}]
    if problem:
        repair = Template(spec["repair"]).substitute(problem=problem, turns=turns, speakers=", ".join(speakers(instance)))
        messages.append({"role": "user", "content": repair})
    return messages


def _name_forms(allowed: Sequence[str]) -> list[tuple[str, str]]:
    """(lower-cased form, canonical name), longest first. A name with a trailing "(...)" is also
    recognised without it, and maps back to the full form the history uses."""
    forms: dict[str, str] = {}
    for name in allowed:
        forms.setdefault(name.casefold(), name)
    for name in allowed:
        forms.setdefault(_PAREN.sub("", name).casefold(), name)
    return sorted(forms.items(), key=lambda item: -len(item[0]))


def parse_turns(text: str, allowed: Sequence[str], wanted: int) -> tuple[list[dict[str, str]], str | None]:
    """(turns, problem): at most ``wanted`` turns read from ``text``; ``problem`` says what was wrong.

    A line opening with a participant's name (exactly, or without its trailing parenthesis; list
    bullets, numbering and bold marks allowed) and a colon starts a turn; a later line without one
    continues the turn before it; lines before the first turn (a preamble) are ignored. A line that
    opens with another short name and a colon is a speaker outside the participants: a problem.
    """
    forms = _name_forms(allowed)
    turns: list[dict[str, str]] = []
    strangers: list[str] = []
    for raw in text.splitlines():
        line = _BULLET.sub("", raw.strip()).replace("**", "").strip()
        if not line:
            continue
        speaker, rest = _opening_name(line, forms)
        if speaker is not None:
            turns.append({"speaker": speaker, "utterance": rest})
            continue
        stranger = _STRANGER.match(line)
        if stranger and (turns or not line.endswith(":")):
            strangers.append(stranger.group(1).strip())
        elif turns:
            turns[-1]["utterance"] = f"{turns[-1]['utterance']} {line}".strip()
    turns = [t for t in turns if t["utterance"]][:wanted]
    if strangers:
        return turns, f"speaker(s) not among the participants: {', '.join(dict.fromkeys(strangers))}"
    if not turns:
        return turns, "no line of the form 'Speaker: utterance'"
    return turns, None


def _opening_name(line: str, forms: list[tuple[str, str]]) -> tuple[str | None, str]:
    folded = line.casefold()
    for form, name in forms:
        if folded.startswith(form):
            rest = _PAREN.sub("", line[len(form):].split(":", 1)[0]) if ":" in line[len(form):] else None
            if rest is not None and not rest.strip():
                return name, line[len(form):].split(":", 1)[1].strip()
    return None, line


def judge_prompt(kind: str, instance: Mapping[str, Any], continuation: Sequence[Mapping[str, str]],
                 taxonomy: Sequence[Behaviour], problem: str | None = None) -> list[dict[str, str]]:
    spec = templates()["judge"]
    numbered = "\n".join(f"{i}. {t['speaker']}: {t['utterance']}" for i, t in enumerate(continuation, start=1))
    text = Template(spec[kind]).substitute(_context(instance), history=_lines(instance["history"]), continuation=numbered,
                                           count=len(continuation), behaviours=_behaviour_lines(taxonomy))
    messages = [{"role": "user", "content": text}]
    if problem:
        messages.append({"role": "user", "content": Template(spec["repair"]).substitute(problem=problem)})
    return messages


def _json_object(text: str) -> tuple[dict[str, Any] | None, str | None]:
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end < start:
        return None, "no JSON object in the answer"
    try:
        value = json.loads(text[start : end + 1])
    except json.JSONDecodeError as err:
        return None, f"invalid JSON ({err.msg})"
    return (value, None) if isinstance(value, dict) else (None, "the JSON is not an object")


def parse_behaviours(text: str, taxonomy: Sequence[Behaviour], turns: int) -> tuple[dict[str, list[int]] | None, str | None]:
    """Type -> turn numbers, or (None, problem). Missing types mean none; unknown types are a problem."""
    value, problem = _json_object(text)
    if value is None:
        return None, problem
    names = {b.name for b in taxonomy}
    unknown = sorted(set(value) - names)
    if unknown:
        return None, f"unknown behaviour type(s): {', '.join(unknown)}"
    found: dict[str, list[int]] = {}
    for name in (b.name for b in taxonomy):
        numbers = value.get(name, [])
        if not isinstance(numbers, list) or not all(isinstance(n, int) and not isinstance(n, bool) for n in numbers):
            return None, f"{name}: expected a list of turn numbers, got {numbers!r}"
        outside = [n for n in numbers if not 1 <= n <= turns]
        if outside:
            return None, f"{name}: turn number(s) {outside} outside 1..{turns}"
        found[name] = sorted(set(numbers))
    return found, None


def parse_overall(text: str) -> tuple[dict[str, int] | None, str | None]:
    value, problem = _json_object(text)
    if value is None:
        return None, problem
    scores = {}
    for key in ("consistency", "collaborativeness"):
        score = value.get(key)
        if not isinstance(score, int) or isinstance(score, bool) or not 1 <= score <= 10:
            return None, f"{key} must be an integer from 1 to 10, got {score!r}"
        scores[key] = score
    return scores, None


def occurrences(found: Mapping[str, Sequence[int]]) -> list[str]:
    """Behaviour names, one entry per flagged turn (the metric's input)."""
    return [name for name, numbers in found.items() for _ in numbers]
