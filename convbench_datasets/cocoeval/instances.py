"""Conversations into CoCoEval instances: 30 turns of history, the 30 human turns that followed.

Window selection (seeded per source): an instance starting at turn ``s`` takes turns ``s-30 .. s-1`` as
history and ``s .. s+29`` as reference, so ``30 <= s <= len(turns) - 30``. Windows of one conversation
never overlap: each conversation has as many 60-turn slots as fit, laid from a seeded offset and used
in a seeded order. The evaluation set takes ``EVAL_PER_SOURCE`` instances, visiting the test material's
conversations in a seeded order, one window each per round, so that a source with few conversations
gets several windows per conversation; if the test material runs out, train-material conversations
follow (and then leave the train set). The train set takes every slot of each remaining train-material
conversation, to approach the paper's training size (the card compares them); evaluation and training
never share a meeting, and a meeting's training windows never overlap.

The summary covers only the turns before the history window (never the future): without a model it
is extractive, the ``SUMMARY_SENTENCES`` highest-scoring earlier turns (mean document frequency of
their content words) in their original order.
"""

from __future__ import annotations

import functools
import random
import re
from collections import Counter
from typing import Any

WINDOW = 30
EVAL_PER_SOURCE = 50
WINDOW_SEED = 0
SUMMARY_SENTENCES = 5
SUMMARY_METHOD = f"extractive: the {SUMMARY_SENTENCES} earlier turns with the highest mean word frequency, in order"
CLEANING_METHOD = "rules"  # the rule-made routes a build records per row (its model-made stages replace them)
METADATA_METHOD = "sources: the source's own annotations"
ABSTRACTIVE_MAX_TURNS = 200  # an abstractive summary reads at most this many turns before the history
_WORDS = re.compile(r"[a-z']+")
_STOP = frozenset(
    "the a an and or but so of to in on at for with is are was were be been it its this that these those i you he she "
    "we they me him her us them my your our their what which who whom not no yes do does did have has had just like "
    "um uh yeah okay ok mm hmm oh well right then there here very really also can could would should will".split()
)


def _slots(length: int, rng: random.Random) -> list[int]:
    """Start turns for as many non-overlapping windows as fit: a seeded offset, then every 60 turns,
    in a seeded order (so a conversation used once gets a random position, and packing stays full)."""
    count = length // (2 * WINDOW)
    if not count:
        return []
    offset = rng.randint(0, length - count * 2 * WINDOW)
    slots = [WINDOW + offset + k * 2 * WINDOW for k in range(count)]
    rng.shuffle(slots)
    return slots


def select_windows(conversations: list[dict[str, Any]], source: str) -> tuple[list[tuple[dict, int]], list[tuple[dict, int]]]:
    """(evaluation windows, train windows) as (conversation, start) pairs."""
    rng = random.Random(f"{WINDOW_SEED}:{source}")
    ordered = sorted(conversations, key=lambda c: c["id"])
    rng.shuffle(ordered)
    slots = {c["id"]: _slots(len(c["turns"]), rng) for c in ordered}
    evaluation: list[tuple[dict, int]] = []
    for material in ("test", "train"):
        pool = [c for c in ordered if c["material"] == material]
        while len(evaluation) < EVAL_PER_SOURCE and any(slots[c["id"]] for c in pool):
            for conversation in pool:
                if len(evaluation) < EVAL_PER_SOURCE and slots[conversation["id"]]:
                    evaluation.append((conversation, slots[conversation["id"]].pop()))
    used = {c["id"] for c, _ in evaluation}
    training = [(c, start) for c in ordered if c["material"] == "train" and c["id"] not in used
                for start in sorted(slots[c["id"]])]
    return evaluation, training


@functools.lru_cache(maxsize=1 << 16)
def _content_words(utterance: str) -> tuple[str, ...]:
    """The utterance's words in lower case, stop words left out. Cached: each turn is read again for every
    later window of its conversation (about half the time of a build before)."""
    return tuple(w for w in _WORDS.findall(utterance.lower()) if w not in _STOP)


def extractive_summary(turns: list[dict[str, Any]]) -> str:
    """The earlier turns that best represent them (``SUMMARY_SENTENCES`` turns, original order)."""
    if not turns:
        return ""
    counts: Counter[str] = Counter()
    for turn in turns:
        counts.update(_content_words(turn["utterance"]))

    def score(turn: dict[str, Any]) -> float:
        words = _content_words(turn["utterance"])  # every one of them counted: turn is one of turns
        return sum(map(counts.__getitem__, words)) / len(words) if len(words) >= 4 else 0.0

    ranked = sorted(range(len(turns)), key=lambda i: (-score(turns[i]), i))[:SUMMARY_SENTENCES]
    return " ".join(f"{turns[i]['speaker']}: {turns[i]['utterance']}" for i in sorted(ranked))


def instance(conversation: dict[str, Any], start: int) -> dict[str, Any]:
    turns = conversation["turns"]
    history = turns[start - WINDOW : start]
    reference = turns[start : start + WINDOW]
    history_end = history[-1]["position"]
    goals = [text for text, first in conversation["topics"] if first <= history_end]
    earlier = turns[: start - WINDOW]
    return {
        "id": f"{conversation['source']}/{conversation['id']}/{start}",
        "source": conversation["source"],
        "conversation_id": conversation["id"],
        "start_turn": start,
        "metadata": {"setting": conversation["setting"], "participants": conversation["roles"], "goals": goals},
        "summary": extractive_summary(earlier),
        "summary_method": SUMMARY_METHOD if earlier else "none: the history window opens the conversation",
        "cleaning_method": conversation.get("cleaning_method", CLEANING_METHOD),
        "metadata_method": METADATA_METHOD,
        "history": [{"speaker": t["speaker"], "utterance": t["utterance"]} for t in history],
        "reference": [{"speaker": t["speaker"], "utterance": t["utterance"]} for t in reference],
    }
