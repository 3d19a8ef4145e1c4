"""Cleaning rules, each counted; words are never changed."""

from __future__ import annotations

from collections import Counter

from convbench_datasets.cocoeval.cleaning import clean_text, clean_turns


def test_rules_and_counts() -> None:
    counts: Counter = Counter()
    assert clean_text("{vocalsound} Um , {disfmarker} we could  go ?", counts) == "Um, we could go?"
    assert counts == Counter({"markers": 2, "spaced_punctuation": 2, "whitespace": 1})
    assert clean_text("That's right (LAUGHTER) [applause] indeed.", counts) == "That's right indeed."
    assert counts["stage_directions"] == 2


def test_empty_turns_are_dropped_and_counted() -> None:
    counts: Counter = Counter()
    turns = [{"speaker": "A", "utterance": "{vocalsound}", "position": 0},
             {"speaker": "B", "utterance": " . ", "position": 1},
             {"speaker": "A", "utterance": "Okay .", "position": 2}]
    assert clean_turns(turns, counts) == [{"speaker": "A", "utterance": "Okay.", "position": 2}]
    assert counts["empty_turns"] == 2


def test_words_are_kept() -> None:
    text = "I'd say fifty-five euros, not {gap} sixty; maybe {pause} less."
    assert clean_text(text, Counter()) == "I'd say fifty-five euros, not sixty; maybe less."


def test_patterns_of_the_real_sources() -> None:
    counts: Counter = Counter()
    assert clean_text("Thank you. [Laughter.] The date 's set , but we do n't know .", counts) == (
        "Thank you. The date's set, but we don't know.")
    assert counts["stage_directions"] == 1 and counts["spaced_contractions"] == 2
    assert clean_text("How many .22 calibre rifles ?", counts) == "How many .22 calibre rifles?"
