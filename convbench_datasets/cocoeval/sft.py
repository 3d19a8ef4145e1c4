"""Supervised fine-tuning data from CoCoEval's training split (``convbench export cocoeval-sft``).

Each training instance gives one chat example, ``{"messages": [system, user, assistant]}``, the format
OpenAI-compatible fine-tuning APIs and TRL's ``SFTTrainer`` read. The system and user messages are the
prompt the runner sends the simulator (:func:`~convbench_datasets.cocoeval.simulation.simulation_prompt`)
at one point of the continuation; the assistant message is what the people actually said next, as
``Speaker: utterance`` lines, the form the simulator is asked for (the runner's parser reads it back).
With the repetition countermeasure (the runner's default, the paper's appendix C.2) the prompt asks for
a copy of the last five turns first, and the target opens with that copy, as the runner reads a reply;
``repetition_countermeasure=False`` (``--no-repetition-countermeasure``) matches runs without it.

With ``turns_per_call`` 30 the example starts where the reference does and asks for all 30 turns. With
1 or 5 it starts at a random turn ``s`` of the reference, 0 <= s <= 30 - N (any turn, not only the
multiples of N the runner's rounds reach), drawn from the seed and the instance id alone, so an
instance keeps its start whatever else the export holds: the prompt's conversation so far is the
history plus the reference's first ``s`` turns, and the target its next N.

A target may name a speaker the prompt does not list (an audience member who speaks up, a participant
the metadata misses): such examples are kept, as the people spoke, and counted in the signature's
``targets_with_unlisted_speakers``, since the runner counts such a turn of a simulator as a problem.

The file is written whole (temporary file, then a rename) with a signature beside it,
``FILE.convbench.json``: the options, dataset fingerprint, prompt template hash and the file's sha256.
An existing ``FILE`` is replaced only when that signature says convbench wrote it and its content is
unchanged since; any other file is refused, untouched.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._version import __version__
from ..atomic import refuse_link, write_atomic
from ..errors import BuildError, ConvbenchError
from .instances import WINDOW
from .simulation import (
    COPIED_TURNS,
    PROMPT_STYLES,
    _lines,
    _name_forms,
    _opening_name,
    simulation_prompt,
    speakers,
    templates,
)
from .taxonomy import Behaviour, load_taxonomy

KIND = "cocoeval-sft"
TURNS_PER_CALL = (1, 5, 30)  # as the runner simulates them; the paper fine-tunes one model per setting
SIGNATURE_SUFFIX = ".convbench.json"


def start_turn(instance_id: str, turns_per_call: int, seed: int = 0) -> int:
    """The reference turn an example starts at: 0 for 30 turns per call, else seeded per instance."""
    if turns_per_call == WINDOW:
        return 0
    return random.Random(f"{seed}:{turns_per_call}:{instance_id}").randint(0, WINDOW - turns_per_call)


def sft_example(instance: Mapping[str, Any], turns_per_call: int, start: int, style: str = "vanilla",
                taxonomy: Sequence[Behaviour] = (), copied: int = COPIED_TURNS) -> dict[str, list[dict[str, str]]]:
    """One chat example: the simulation prompt after ``start`` reference turns, and the next turns (after
    a copy of the last ``copied`` turns of the conversation so far, when set)."""
    reference = list(instance["reference"])
    if len(reference) < start + turns_per_call:
        raise ConvbenchError(f"cocoeval row {instance['id']}: field 'reference' has {len(reference)} turns, "
                             f"{start + turns_per_call} needed")
    so_far = reference[:start]
    messages = simulation_prompt(instance, so_far, turns_per_call, style, taxonomy, copied=copied)
    copy = [*instance["history"], *so_far][-copied:] if copied else []
    target = _lines([*copy, *reference[start : start + turns_per_call]])
    return {"messages": [*messages, {"role": "assistant", "content": target}]}


def sft_examples(rows: Sequence[Mapping[str, Any]], turns_per_call: int, *, seed: int = 0, style: str = "vanilla",
                 taxonomy: Sequence[Behaviour] | None = None, repetition_countermeasure: bool = True) -> list[dict[str, Any]]:
    """One example per row, in row order (module doc)."""
    if turns_per_call not in TURNS_PER_CALL:
        raise ConvbenchError(f"turns per call must be one of {TURNS_PER_CALL}, got {turns_per_call}")
    if style not in PROMPT_STYLES:
        raise ConvbenchError(f"prompt must be one of {PROMPT_STYLES}, got {style!r}")
    behaviours = load_taxonomy() if taxonomy is None else taxonomy
    copied = COPIED_TURNS if repetition_countermeasure else 0
    return [sft_example(row, turns_per_call, start_turn(row["id"], turns_per_call, seed), style, behaviours, copied)
            for row in rows]


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def signature_path(path: Path) -> Path:
    return path.with_name(path.name + SIGNATURE_SUFFIX)


def check_replaceable(path: Path) -> None:
    """Refuse ``path`` (and its signature file) unless missing, or written by this export and unchanged."""
    sidecar = signature_path(path)
    refuse_link(path)  # never written through, nor replaced by a file
    refuse_link(sidecar)
    if path.is_dir():
        raise BuildError(f"--out {path} is a folder; give a file name, e.g. {path / 'train.jsonl'}")
    if not path.exists() and not sidecar.exists():
        return
    try:
        mark = json.loads(sidecar.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        mark = None
    ours = isinstance(mark, dict) and mark.get("kind") == KIND
    if not ours:
        foreign = path if path.exists() else sidecar
        raise BuildError(f"{foreign} exists and convbench did not write it; move it away or choose another --out")
    if path.exists() and _sha256(path.read_bytes()) != mark.get("sha256"):
        raise BuildError(f"{path} was changed after convbench wrote it (its sha256 differs from {sidecar.name}); "
                         "move it away or choose another --out")


def write_sft(path: str | os.PathLike[str], examples: Sequence[Mapping[str, Any]], signature: Mapping[str, Any]) -> Path:
    """Write ``examples`` as JSON Lines to ``path`` and the signature beside it (module doc for the rule)."""
    target = Path(path)
    check_replaceable(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    data = "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in examples).encode("utf-8")
    mark = {"kind": KIND, "convbench": __version__, "file": target.name, "sha256": _sha256(data),
            "examples": len(examples), **signature}
    write_atomic(target, data)
    write_atomic(signature_path(target), (json.dumps(mark, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
    return target


def unlisted_speakers(rows: Sequence[Mapping[str, Any]], turns_per_call: int, seed: int = 0) -> list[str]:
    """Ids of the rows whose target names a speaker the prompt does not list (neither in the history nor
    among the participants): real data, kept, but a simulator is asked never to do that, so counted.
    A speaker is listed when the runner's parser reads a line opening ``Speaker:`` as a participant's
    (the same name forms: "Mr. Tony Van Bynen (NewmarketAurora, Lib.)" for the participant so written)."""
    found = []
    for row in rows:
        start = start_turn(row["id"], turns_per_call, seed)
        forms = _name_forms(speakers(row))
        if any(_opening_name(f"{t['speaker']}: x", forms)[0] is None
               for t in row["reference"][start : start + turns_per_call]):
            found.append(row["id"])
    return found


@dataclass(frozen=True)
class SftExport:
    path: Path
    examples: int
    signature: dict[str, Any]


def export_sft(out: str | os.PathLike[str], turns_per_call: int, *, config: str = "all", seed: int = 0,
               style: str = "vanilla", taxonomy: str | os.PathLike[str] | None = None,
               repetition_countermeasure: bool = True, dataset: str | os.PathLike[str] | None = None,
               sources: str | os.PathLike[str] | None = None) -> SftExport:
    """Write the training split of ``config`` as SFT examples to ``out`` (``convbench export cocoeval-sft``)."""
    from ..counts import check_seed
    from .run import read_rows as _rows
    from ..engine.run_folder import dataset_fingerprint

    check_seed("seed (--seed)", seed)  # in the signature: a float or bool would seed as its text
    check_replaceable(Path(out))  # before the dataset is built or read: a refused file costs nothing
    behaviours = load_taxonomy(taxonomy)
    rows = _rows(config, "train", dataset, sources)
    if not rows:
        raise ConvbenchError(f"cocoeval {config}: the train split has no rows")
    examples = sft_examples(rows, turns_per_call, seed=seed, style=style, taxonomy=behaviours,
                            repetition_countermeasure=repetition_countermeasure)
    unlisted = unlisted_speakers(rows, turns_per_call, seed)
    template = json.dumps(templates()["simulation"], sort_keys=True).encode("utf-8")
    signature = {"config": config, "split": "train", "turns_per_call": turns_per_call, "seed": seed, "prompt": style,
                 "taxonomy": [b.name for b in behaviours] if style == "taxonomy" else None,
                 "repetition_countermeasure": {"copied_turns": COPIED_TURNS} if repetition_countermeasure else None,
                 "start_turns": "0" if turns_per_call == WINDOW else f"seeded per instance in 0..{WINDOW - turns_per_call}",
                 "dataset_fingerprint": dataset_fingerprint(rows), "prompt_template_sha256": _sha256(template),
                 "targets_with_unlisted_speakers": {"count": len(unlisted), "ids": unlisted}}
    path = write_sft(out, examples, signature)
    return SftExport(path, len(examples), signature)
