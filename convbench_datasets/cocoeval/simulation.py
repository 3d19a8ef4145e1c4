"""Simulating and judging CoCoEval continuations: prompts, and strict parsing of what models return.

A simulation request is a system message (the task and the form of a reply; the paper's vanilla prompt
has one, its Table 17) and a user message (the instance and how many turns to write now). Generated
turns are read one per line as ``Speaker: utterance``; a speaker must be one of the instance's
participants (as named in the history or the metadata). Turns beyond the number asked for are not
used, and counted. With the paper's repetition countermeasure (``copied`` turns, its appendix C.2, on by
default in the runner) a reply must open with a copy of the conversation's last ``copied`` turns
(checked by speaker), which is removed before anything else sees the turns. A reply that cannot be used
is shown back to the model as its own (assistant) message, followed by the problem.
Judge answers must be one JSON object: for behaviours, every key a known type and every value a list
of turn numbers in range; for the overall rating, an integer from 1 to 10 per scale of the rubric
(``templates/rubric.yaml``). Anything else is a problem named in words, which the runner records,
shows the model once more, and counts if it persists.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from string import Template
from typing import Any

from .._resources import read_yaml
from ..errors import DataFormatError
from .taxonomy import Behaviour

PROMPT_STYLES = ("vanilla", "taxonomy")
# The paper's repetition countermeasure (appendix C.2): copy the five most recent turns first, with
# presence_penalty 2.0, so that the penalty falls on what was just said.
COPIED_TURNS = 5
COPY_PRESENCE_PENALTY = 2.0
_PAREN = re.compile(r"\s*\([^)]*\)\s*$")
_BULLET = re.compile(r"^(?:[-*\u2022]|\d+[.)])\s+")
# "Name: ..." with a short, name-like label (at most five words, starting with a capital letter)
_STRANGER = re.compile(r"^([A-Z][\w.'-]*(?:\s+[\w.'()-]+){0,4})\s*:\s*\S")


def templates() -> dict[str, Any]:
    return read_yaml(__package__, "templates/prompts.yaml")


def template_fields(template: str, text: str) -> dict[str, str] | None:
    """The values ``Template(template).substitute`` was given to make ``text``, or None when ``text`` is not
    made from ``template`` (the deterministic smoke answerers read their prompts back with it). Each value
    ends where the template's next literal first appears after it, so a value that holds that literal is
    not read back (one scan, no backtracking); a placeholder that repeats must have one value.

    Example:
        >>> template_fields("Write the next $turns turns.", "Write the next 5 turns.")
        {'turns': '5'}
        >>> template_fields("Write the next $turns turns.", "Copy the last 5 turns") is None
        True
    """
    literals, names, literal, at = [], [], "", 0
    for match in Template.pattern.finditer(template):
        literal += template[at:match.start()]
        at = match.end()
        if match.group("escaped") is not None:
            literal += "$"
            continue
        name = match.group("named") or match.group("braced")
        if name is None:
            raise ValueError(f"invalid placeholder at {match.start()} of the template")
        if names and not literal:
            raise ValueError(f"placeholders ${names[-1]} and ${name} meet: their values cannot be told apart")
        literals.append(literal)
        names.append(name)
        literal = ""
    literals.append(literal + template[at:])
    if not names:
        return {} if text == literals[0] else None
    last = literals[-1]
    if not text.startswith(literals[0]) or not text.endswith(last) or len(text) < len(literals[0]) + len(last):
        return None
    values: dict[str, str] = {}
    position = len(literals[0])
    for k, (name, after) in enumerate(zip(names, literals[1:])):
        end = len(text) - len(last) if k == len(names) - 1 else text.find(after, position)
        if end < position or values.setdefault(name, text[position:end]) != text[position:end]:
            return None
        position = end + len(after)
    return values


def speakers(instance: Mapping[str, Any]) -> list[str]:
    """Who may speak: the history's speakers, then the metadata's participants (sides stripped)."""
    named = [_PAREN.sub("", p) for p in instance["metadata"]["participants"]]
    return list(dict.fromkeys([*(t["speaker"] for t in instance["history"]), *named]))


def _lines(turns: Sequence[Mapping[str, str]]) -> str:
    return "\n".join(f"{t['speaker']}: {t['utterance']}" for t in turns)


def _behaviour_lines(taxonomy: Sequence[Behaviour]) -> str:
    """The types under their groups (in the taxonomy's order), each group headed by its definition."""
    lines = []
    for group in dict.fromkeys(b.group for b in taxonomy):
        members = [b for b in taxonomy if b.group == group]
        lines.append(f"{group.capitalize()} behaviour" + (f": {members[0].group_definition}" if members[0].group_definition else ""))
        lines += [f"- {b.name}: {b.definition} Example: {b.example}" for b in members]
    return "\n".join(lines)


def check_rubric(raw: Any, where: str = "templates/rubric.yaml") -> dict[str, Any]:
    """``raw`` if it is a rubric: scale -> {question, ranges: [{low, high, description}]}, each scale's
    ranges covering 1 to 10 once; else a DataFormatError naming the scale and range."""
    if not isinstance(raw, dict) or not raw:
        raise DataFormatError(f"rubric {where}: needs a mapping of scale name -> question and ranges")
    for scale, spec in raw.items():
        if not isinstance(spec, dict) or not isinstance(spec.get("question"), str) or not isinstance(spec.get("ranges"), list):
            raise DataFormatError(f"rubric {where}: {scale}: needs a 'question' string and a 'ranges' list")
        covered: list[int] = []
        for k, band in enumerate(spec["ranges"]):
            if not (isinstance(band, dict) and isinstance(band.get("low"), int) and isinstance(band.get("high"), int)
                    and isinstance(band.get("description"), str) and band["description"].strip()):
                raise DataFormatError(f"rubric {where}: {scale}: ranges[{k}] needs integers 'low', 'high' and a 'description'")
            covered += range(band["low"], band["high"] + 1)
        if sorted(covered) != list(range(1, 11)):
            raise DataFormatError(f"rubric {where}: {scale}: ranges must cover 1 to 10 once each, got scores {sorted(covered)}")
    return raw


def rubric() -> dict[str, Any]:
    """The overall judge's rubric (``templates/rubric.yaml``): a description per score range and scale."""
    return check_rubric(read_yaml(__package__, "templates/rubric.yaml"))


def scales() -> tuple[str, ...]:
    """The overall judge's scales (consistency, collaborativeness): the rubric's keys."""
    return tuple(rubric())


def _rubric_text(spec: Mapping[str, Any]) -> str:
    lines = []
    for scale, entry in spec.items():
        lines.append(f"{scale}: {entry['question']}")
        lines += [f"  {band['low']}-{band['high']}: {band['description']}" for band in entry["ranges"]]
    return "\n".join(lines)


def _context(instance: Mapping[str, Any]) -> dict[str, str]:
    meta = instance["metadata"]
    return {"setting": meta["setting"], "participants": "; ".join(meta["participants"]),
            "goals": "; ".join(meta["goals"]) or "(none recorded)", "summary": instance["summary"] or "(nothing before)"}


def simulation_system(style: str, taxonomy: Sequence[Behaviour], copied: int = 0) -> str:
    """The simulation's system message: the task, for ``taxonomy`` style the behaviour types and the
    request to show them as often as the history does, and the form of a reply (with ``copied``: copy
    that many recent turns first)."""
    if style not in PROMPT_STYLES:
        raise ValueError(f"prompt must be one of {PROMPT_STYLES}, got {style!r}")
    spec = templates()["simulation"]
    parts = [spec["system"]]
    if style == "taxonomy":
        parts.append(Template(spec["taxonomy_part"]).substitute(behaviours=_behaviour_lines(taxonomy)))
    parts.append(Template(spec["reply_form_copy"] if copied else spec["reply_form"]).substitute(copied=copied))
    return "\n\n".join(parts)


def simulation_prompt(instance: Mapping[str, Any], so_far: Sequence[Mapping[str, str]], turns: int, style: str,
                      taxonomy: Sequence[Behaviour], problem: str | None = None, copied: int = 0,
                      rejected: str | None = None) -> list[dict[str, str]]:
    """The request for the next ``turns`` turns (after a copy of the last ``copied`` ones when set): a
    system and a user message; with ``problem``, the ``rejected`` reply as the assistant's message and the
    problem after it."""
    spec = templates()["simulation"]
    counts = {"turns": turns, "copied": copied, "total": copied + turns}
    write = Template(spec["copy_then_write" if copied else "write"]).substitute(counts)
    text = Template(spec["user"]).substitute(_context(instance), history=_lines([*instance["history"], *so_far]),
                                             write=write)
    messages = [{"role": "system", "content": simulation_system(style, taxonomy, copied)},
                {"role": "user", "content": text}]
    if problem:
        if rejected is None:
            raise ValueError("a repair shows the model its rejected reply: give rejected with problem")
        repair = Template(spec["repair_copy" if copied else "repair"]).substitute(
            counts, problem=problem, speakers=", ".join(speakers(instance)))
        messages += [{"role": "assistant", "content": rejected}, {"role": "user", "content": repair}]
    return messages


def parse_continuation(text: str, instance: Mapping[str, Any], so_far: Sequence[Mapping[str, str]], wanted: int,
                       copied: int = 0) -> tuple[list[dict[str, str]], str | None, int]:
    """(new turns, problem, extra turns) of a simulation reply: :func:`parse_turns`, and with ``copied`` the
    copy of the last ``copied`` turns of the conversation removed. A reply whose opening turns' speakers
    are not those of the last ``copied`` turns did not copy them: nothing of it is used (which of its
    turns are new cannot be told). ``extra``: turns the reply wrote beyond the ``copied + wanted`` asked
    for, not used (the runner counts them)."""
    turns, problem, extra = parse_turns(text, speakers(instance), copied + wanted)
    if not copied:
        return turns, problem, extra
    expected = [t["speaker"] for t in [*instance["history"], *so_far][-copied:]]
    opening = [t["speaker"] for t in turns[:copied]]
    if opening != expected:
        return [], problem or (f"the reply does not open with a copy of the last {copied} turns "
                               f"(speakers {opening}, expected {expected})"), extra
    if len(turns) == copied:
        return [], problem or f"no new turn after the {copied} copied ones", extra
    return turns[copied:], problem, extra


def _name_forms(allowed: Sequence[str]) -> list[tuple[str, str]]:
    """(lower-cased form, canonical name), longest first. A name with a trailing "(...)" is also
    recognised without it, and maps back to the full form the history uses."""
    forms: dict[str, str] = {}
    for name in allowed:
        forms.setdefault(name.casefold(), name)
    for name in allowed:
        forms.setdefault(_PAREN.sub("", name).casefold(), name)
    return sorted(forms.items(), key=lambda item: -len(item[0]))


def parse_turns(text: str, allowed: Sequence[str], wanted: int) -> tuple[list[dict[str, str]], str | None, int]:
    """(turns, problem, extra): at most ``wanted`` turns read from ``text``; ``problem`` says what was
    wrong; ``extra`` counts the turns after the first ``wanted``, which are not used.

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
    spoken = [t for t in turns if t["utterance"]]
    turns, extra = spoken[:wanted], max(0, len(spoken) - wanted)
    if strangers:
        return turns, f"speaker(s) not among the participants: {', '.join(dict.fromkeys(strangers))}", extra
    if not turns:
        return turns, "no line of the form 'Speaker: utterance'", extra
    return turns, None, extra


def _opening_name(line: str, forms: list[tuple[str, str]]) -> tuple[str | None, str]:
    folded = line.casefold()
    for form, name in forms:
        if folded.startswith(form):
            rest = _PAREN.sub("", line[len(form):].split(":", 1)[0]) if ":" in line[len(form):] else None
            if rest is not None and not rest.strip():
                return name, line[len(form):].split(":", 1)[1].strip()
    return None, line


def judge_prompt(kind: str, instance: Mapping[str, Any], continuation: Sequence[Mapping[str, str]],
                 taxonomy: Sequence[Behaviour], problem: str | None = None,
                 rejected: str | None = None) -> list[dict[str, str]]:
    """The ``behaviours`` judge's request (one user message) or the ``overall`` judge's (its instructions
    and rubric as a system message, the instance and continuation as the user message); with
    ``problem``, the ``rejected`` answer as the assistant's message and the problem after it."""
    spec = templates()["judge"]
    numbered = "\n".join(f"{i}. {t['speaker']}: {t['utterance']}" for i, t in enumerate(continuation, start=1))
    scored = rubric()
    fields = {**_context(instance), "history": _lines(instance["history"]), "continuation": numbered,
              "count": len(continuation), "behaviours": _behaviour_lines(taxonomy), "rubric": _rubric_text(scored),
              "answer_format": json.dumps({scale: "N" for scale in scored}).replace('"N"', "N"),
              "example": behaviours_example(taxonomy)}
    messages = [{"role": "user", "content": Template(spec[kind]).substitute(fields)}]
    if kind == "overall":
        messages.insert(0, {"role": "system", "content": Template(spec["overall_system"]).substitute(fields)})
    if problem:
        if rejected is None:
            raise ValueError("a repair shows the judge its rejected answer: give rejected with problem")
        messages += [{"role": "assistant", "content": rejected},
                     {"role": "user", "content": Template(spec["repair"]).substitute(problem=problem)}]
    return messages


def behaviours_example(taxonomy: Sequence[Behaviour]) -> str:
    """The behaviours judge's example answer: every type of the taxonomy, in its order and its own names,
    with no turn listed.

    Why this example is neutral: an example that lists turns for one type suggests that type is there to
    be found (the one convbench used before flagged Repetition, the type the paper finds simulations
    over-produce and some judges over-detect); one that lists a turn for every type suggests each is
    present, which weighs most on the rare types. Empty lists claim nothing about the conversation, show
    the answer's form and every key spelled as it must be, and a judge that copies them names no unknown
    type; the prompt says in words that the values are turn numbers.

    >>> from .taxonomy import load_taxonomy
    >>> behaviours_example(load_taxonomy())[:60]
    '{"Repetition": [], "Redundant Information": [], "Logical Con'
    """
    return json.dumps({b.name: [] for b in taxonomy}, ensure_ascii=False)


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
    """Scale -> 1-10 score for every scale of the rubric, or (None, problem)."""
    value, problem = _json_object(text)
    if value is None:
        return None, problem
    scores = {}
    for key in scales():
        score = value.get(key)
        if not isinstance(score, int) or isinstance(score, bool) or not 1 <= score <= 10:
            return None, f"{key} must be an integer from 1 to 10, got {score!r}"
        scores[key] = score
    return scores, None


def occurrences(found: Mapping[str, Sequence[int]]) -> list[str]:
    """Behaviour names, one entry per flagged turn (the metric's input)."""
    return [name for name, numbers in found.items() for _ in numbers]
