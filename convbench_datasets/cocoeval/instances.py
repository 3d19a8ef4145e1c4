"""Conversations into CoCoEval instances: 30 turns of history, the 30 human turns that followed.

Window selection (seeded per source): an instance starting at turn ``s`` takes turns ``s-30 .. s-1`` as
history and ``s .. s+29`` as reference, so ``30 <= s <= len(turns) - 30``. Windows of one conversation
never overlap. The evaluation set takes ``EVAL_PER_SOURCE`` instances, visiting the test material's
conversations in a seeded order, one window each per round, so that a source with few conversations
gets several windows per conversation; if the test material runs out, train-material conversations
follow (and then leave the train set). The train set takes one window per remaining train-material
conversation.

The summary covers only the turns before the history window (never the future): without a model it
is extractive, the ``SUMMARY_SENTENCES`` highest-scoring earlier turns (mean document frequency of
their content words) in their original order.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from typing import Any

WINDOW = 30
EVAL_PER_SOURCE = 50
WINDOW_SEED = 0
SUMMARY_SENTENCES = 5
SUMMARY_METHOD = f"extractive: the {SUMMARY_SENTENCES} earlier turns with the highest mean word frequency, in order"
_WORDS = re.compile(r"[a-z']+")
_STOP = frozenset(
    "the a an and or but so of to in on at for with is are was were be been it its this that these those i you he she "
    "we they me him her us them my your our their what which who whom not no yes do does did have has had just like "
    "um uh yeah okay ok mm hmm oh well right then there here very really also can could would should will".split()
)


def _free_starts(length: int, taken: list[int]) -> list[int]:
    return [s for s in range(WINDOW, length - WINDOW + 1) if all(abs(s - t) >= 2 * WINDOW for t in taken)]


def select_windows(conversations: list[dict[str, Any]], source: str) -> tuple[list[tuple[dict, int]], list[tuple[dict, int]]]:
    """(evaluation windows, train windows) as (conversation, start) pairs."""
    rng = random.Random(f"{WINDOW_SEED}:{source}")
    ordered = sorted(conversations, key=lambda c: c["id"])
    rng.shuffle(ordered)
    test = [c for c in ordered if c["material"] == "test"]
    train = [c for c in ordered if c["material"] == "train"]
    evaluation: list[tuple[dict, int]] = []
    taken: dict[str, list[int]] = {}
    used_train: set[str] = set()
    for pool in (test, train):
        while len(evaluation) < EVAL_PER_SOURCE:
            added = False
            for conversation in pool:
                if len(evaluation) == EVAL_PER_SOURCE:
                    break
                starts = _free_starts(len(conversation["turns"]), taken.get(conversation["id"], []))
                if starts:
                    start = rng.choice(starts)
                    taken.setdefault(conversation["id"], []).append(start)
                    evaluation.append((conversation, start))
                    used_train.update([conversation["id"]] if conversation["material"] == "train" else [])
                    added = True
            if not added:
                break
    training = []
    for conversation in train:
        starts = _free_starts(len(conversation["turns"]), [])
        if conversation["id"] not in used_train and starts:
            training.append((conversation, rng.choice(starts)))
    return evaluation, training


def extractive_summary(turns: list[dict[str, Any]]) -> str:
    """The earlier turns that best represent them (``SUMMARY_SENTENCES`` turns, original order)."""
    if not turns:
        return ""
    counts = Counter(w for t in turns for w in _WORDS.findall(t["utterance"].lower()) if w not in _STOP)

    def score(turn: dict[str, Any]) -> float:
        words = [w for w in _WORDS.findall(turn["utterance"].lower()) if w not in _STOP]
        return sum(counts[w] for w in words) / len(words) if len(words) >= 4 else 0.0

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
        "history": [{"speaker": t["speaker"], "utterance": t["utterance"]} for t in history],
        "reference": [{"speaker": t["speaker"], "utterance": t["utterance"]} for t in reference],
    }
