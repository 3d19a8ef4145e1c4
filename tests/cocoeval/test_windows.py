"""Window selection: ranges, no overlap, several windows where conversations are few, train fallback."""

from __future__ import annotations

from convbench_datasets.cocoeval.instances import EVAL_PER_SOURCE, WINDOW, extractive_summary, instance, select_windows


def _conversation(ident: str, turns: int, material: str = "test") -> dict:
    return {"id": ident, "source": "x", "material": material, "setting": "s", "participants": ["A", "B"],
            "roles": ["A", "B"], "topics": [("first", 0), ("later", turns - 1)],
            "turns": [{"speaker": "AB"[i % 2], "utterance": f"turn {i} about budget plans", "position": i} for i in range(turns)]}


def test_windows_fit_and_never_overlap() -> None:
    conversations = [_conversation(f"c{i}", 400) for i in range(10)]
    evaluation, training = select_windows(conversations, "x")
    assert len(evaluation) == EVAL_PER_SOURCE and training == []
    by_conversation: dict[str, list[int]] = {}
    for conversation, start in evaluation:
        assert WINDOW <= start <= len(conversation["turns"]) - WINDOW
        by_conversation.setdefault(conversation["id"], []).append(start)
    for starts in by_conversation.values():
        starts.sort()
        assert all(b - a >= 2 * WINDOW for a, b in zip(starts, starts[1:]))
    assert sorted(len(s) for s in by_conversation.values()) == [5] * 10  # 10 conversations, 50 windows, 6 fit each
    assert select_windows(conversations, "x") == (evaluation, training)  # seeded


def test_train_material_fills_in_and_then_leaves_the_train_set() -> None:
    test = [_conversation(f"t{i}", 120) for i in range(10)]  # 120 // 60: 2 windows each, 20 in all
    train = [_conversation(f"r{i}", 60, "train") for i in range(40)]  # 1 window each
    evaluation, training = select_windows(test + train, "x")
    assert len(evaluation) == 50 and sum(c["material"] == "train" for c, _ in evaluation) == 30
    used = {c["id"] for c, _ in evaluation}
    assert len(training) == 10 and not used & {c["id"] for c, _ in training}


def _starts(windows: list[tuple[dict, int]]) -> dict[str, list[int]]:
    by_conversation: dict[str, list[int]] = {}
    for conversation, start in windows:
        by_conversation.setdefault(conversation["id"], []).append(start)
    return by_conversation


def test_training_takes_every_window_that_fits_in_a_train_meeting() -> None:
    test = [_conversation(f"t{i}", 400) for i in range(10)]  # 6 slots each: the 50 test windows come from here
    train = [_conversation("r0", 400, "train"), _conversation("r1", 130, "train"), _conversation("r2", 59, "train")]
    evaluation, training = select_windows(test + train, "x")
    assert {c["material"] for c, _ in evaluation} == {"test"}
    # 400 // 60 = 6 and 130 // 60 = 2 non-overlapping 60-turn windows; 59 turns hold none (one window each before)
    starts = _starts(training)
    assert {k: len(v) for k, v in starts.items()} == {"r0": 6, "r1": 2}
    for ident, found in starts.items():
        length = {"r0": 400, "r1": 130}[ident]
        assert found == sorted(found) and all(WINDOW <= s <= length - WINDOW for s in found)
        assert all(b - a >= 2 * WINDOW for a, b in zip(found, found[1:]))
    assert select_windows(test + train, "x") == (evaluation, training)  # seeded


def test_a_meeting_lent_to_evaluation_gives_no_training_windows() -> None:
    test = [_conversation(f"t{i}", 120) for i in range(10)]  # 2 slots each: 20 test windows
    train = [_conversation(f"r{i}", 150, "train") for i in range(40)]  # 2 slots each
    evaluation, training = select_windows(test + train, "x")
    # the other 30 test windows come one per train meeting (round by round), so 30 meetings leave the
    # train set with a slot unused; the 10 left give both their slots: 20 windows (10 before)
    lent = {c["id"] for c, _ in evaluation if c["material"] == "train"}
    assert len(lent) == 30 and len(training) == 20
    assert not lent & set(_starts(training)) and all(len(v) == 2 for v in _starts(training).values())


def test_summary_uses_only_turns_before_the_history() -> None:
    # Earlier turns talk about budgets; the history and reference repeat one distinctive topic far more
    # often, so a summary drawn from them would be made of those turns.
    conversation = _conversation("c", 200)
    for i, turn in enumerate(conversation["turns"]):
        turn["utterance"] = (f"budget item {i} needs review soon" if i < 70
                             else "zebra zebra zebra zebra crossing crossing zebra zebra")
    summary = instance(conversation, 100)["summary"]
    assert summary and "zebra" not in summary and "budget item" in summary


def test_instance_fields_and_past_only_summary() -> None:
    conversation = _conversation("c", 200)
    # topics beginning at the history's last turn (99), at the reference's first (100) and last (129):
    # only those that begin by the end of the history are goals; the reference's must not leak
    conversation["topics"] += [("at the last history turn", 99), ("opens the reference", 100), ("late in the reference", 129)]
    row = instance(conversation, 100)
    assert [t["utterance"] for t in row["history"]] == [f"turn {i} about budget plans" for i in range(70, 100)]
    assert [t["utterance"] for t in row["reference"]] == [f"turn {i} about budget plans" for i in range(100, 130)]
    assert row["metadata"]["goals"] == ["first", "at the last history turn"]  # "later" begins after the history
    for piece in row["summary"].split(" A: ")[1:] + row["summary"].split(" B: ")[1:]:
        assert int(piece.split()[1]) < 70
    assert instance(conversation, 30)["summary"] == "" and extractive_summary([]) == ""
