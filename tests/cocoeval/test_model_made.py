"""CoCoEvalBench's model-made build stages (cleaner, metadata model, summarizer) with scripted models:
exact cleaned turns and metadata, retries and failures counted, row errors counted and kept rule-made
(more than --max-error-rate of them stop the build; --retry-errors asks them again), the cache answers a
rebuild (no calls, identical bytes), and the card says what was model-made."""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from convbench_datasets.cocoeval import model_made
from convbench_datasets.cocoeval.conversations import SETTINGS, read_qmsum
from convbench_datasets.cocoeval.model_made import clean_transcripts, model_metadata, parse_cleaned, parse_metadata
from convbench_datasets.cocoeval.model_stage import card_section, stage_templates
from convbench_datasets.engine import Backend, Generation, GenerationParams
from convbench_datasets.engine.error_rate import TooManyErrors

_FILLER = re.compile(r"\b[Uu][hm]\b,?\s*")
_TURN = re.compile(r"^(\d+)\. ([^:]+): (.*)$", re.MULTILINE)


def scripted_clean(text: str) -> str:
    """The scripted cleaner's rule: standalone "uh" and "um" (and a comma after them) go."""
    return _FILLER.sub("", text).strip() or text


class Scripted(Backend):
    """Cleans, describes and summarises by fixed rules. A cleaning piece holding ``botch`` loses its
    last line in the first answer (the retry is right); one holding ``stubborn`` loses it every time;
    a prompt holding ``refuse`` is refused for good (a per-row error)."""

    kind = "stub"

    def __init__(self, model: str = "scripted", botch: str = "\0", stubborn: str = "\0", refuse: str = "\0") -> None:
        self.model, self.botch, self.stubborn, self.refuse = model, botch, stubborn, refuse
        self.calls = 0
        self.prompts: list[str] = []  # every first prompt it was sent (retries aside), for the tests to read

    def generate(self, prompts: Sequence[list[dict]], params: GenerationParams) -> Iterator[tuple[int, Generation]]:
        for i, messages in enumerate(prompts):
            self.calls += 1
            text, retry = messages[0]["content"], len(messages) > 1
            if not retry:
                self.prompts.append(text)
            if self.refuse in text:
                yield i, Generation("", error="refused for this row: HTTP 400 (content filter)", permanent=True)
            elif "Clean every turn" in text:
                lines = [f"{n}. {who}: {scripted_clean(said)}" for n, who, said in _TURN.findall(text)]
                if self.stubborn in text or (self.botch in text and not retry):
                    lines = lines[:-1]
                yield i, Generation("```\n" + "\n".join(lines) + "\n```")
            elif "Describe this conversation" in text:
                names = json.loads(re.search(r"exactly as written in this list: (\[.*?\]);", text).group(1))
                roles = {name: f"role {k}" for k, name in enumerate(names)}
                if self.botch in text and not retry:
                    roles[names[0]] = "chair (acting)"
                yield i, Generation(json.dumps({"setting": "A scripted setting.", "participants": roles,
                                                "goals": [f"agree among {len(names)}"]}))
            else:
                yield i, Generation(f"Scripted summary of {text.count(chr(10))} lines.")


def _conversation(ident: str, turns: list[tuple[str, str]]) -> dict:
    return {"id": ident, "source": "qmsum_product", "setting": SETTINGS["qmsum_product"],
            "turns": [{"speaker": s, "utterance": u, "position": p} for p, (s, u) in enumerate(turns)]}


# Real turns of QMSum Product meeting ES2002a (train material), after the rules.
EXCERPT = [("Industrial Designer", "an eagle."), ("Marketing", "Oh. Oh right, okay,"),
           ("Marketing", "I'm not good at golf."),
           ("Marketing", "I'd say they're quite free-spirited, flying around everywhere, doing their own thing. "
                         "And uh, birds of prey aren't they,"),
           ("Project Manager", "Mm-hmm."), ("Marketing", "oh dear, intrepid. I'll put that, intrepid.")]


def test_parse_cleaned_maps_each_line_to_its_turn() -> None:
    speakers = ["Marketing", "Project Manager"]
    assert parse_cleaned("1. Marketing: Birds of prey.\n\n2. Project Manager: Mm-hmm.", speakers) == (
        ["Birds of prey.", "Mm-hmm."], None)
    assert parse_cleaned("```\n1. Marketing: a\n2. Project Manager: b\n```", speakers) == (["a", "b"], None)
    assert parse_cleaned("1. Marketing: a", speakers) == (None, "expected 2 lines, one per turn, got 1")
    assert parse_cleaned("1. Marketing: a\n2. Marketing: b", speakers) == (
        None, "line 2 does not begin with '2. Project Manager:': '2. Marketing: b'")
    assert parse_cleaned("2. Marketing: a\n1. Project Manager: b", speakers)[1] == (
        "line 1 does not begin with '1. Marketing:': '2. Marketing: a'")
    assert parse_cleaned("1. Marketing:\n2. Project Manager: b", speakers) == (
        None, "turn 1 is empty (keep its shortest meaningful form)")


def test_parse_metadata_needs_a_role_for_every_speaker_and_nobody_else() -> None:
    names = ["Grad A", "Professor D"]
    answer = {"setting": " A lab meeting. ", "participants": {"Professor D": "leads", "Grad A": "student"}, "goals": ["plan"]}
    assert parse_metadata("Here: " + json.dumps(answer), names) == (
        {"setting": "A lab meeting.", "participants": ["Grad A (student)", "Professor D (leads)"], "goals": ["plan"]}, None)
    assert parse_metadata(json.dumps({**answer, "participants": {"Grad A": "x"}}), names) == (
        None, '"participants" lacks Professor D')
    assert parse_metadata(json.dumps({**answer, "participants": {**answer["participants"], "Grad B": "x"}}), names) == (
        None, '"participants" names people who are not among the speakers: Grad B')
    assert parse_metadata(json.dumps({**answer, "participants": {"Grad A": "a (b)", "Professor D": "c"}}), names) == (
        None, "the role of Grad A must be a non-empty text without parentheses, got 'a (b)'")
    assert parse_metadata(json.dumps({**answer, "goals": []}), names) == (None, '"goals" must be a non-empty list of texts')
    assert parse_metadata("no json", names) == (None, "no JSON object in the answer")


def test_cleaner_maps_turns_back_retries_once_then_keeps_the_rule_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(model_made, "CLEAN_TURNS_PER_CALL", 2)  # 3 pieces of 2 turns
    meeting = _conversation("ES2002a", EXCERPT)
    model = Scripted("cleaner", botch="golf", stubborn="intrepid")
    record = clean_transcripts([meeting], model, {}, tmp_path / "c.sqlite", progress=False)
    # piece 2 (turns 3-4) loses a line once and is right on the retry; piece 3 (turns 5-6) never maps back
    assert [t["utterance"] for t in meeting["turns"]] == [
        "an eagle.", "Oh. Oh right, okay,", "I'm not good at golf.",
        "I'd say they're quite free-spirited, flying around everywhere, doing their own thing. And birds of prey aren't they,",
        "Mm-hmm.", "oh dear, intrepid. I'll put that, intrepid."]
    assert [t["speaker"] for t in meeting["turns"]] == [s for s, _ in EXCERPT]
    assert [t["position"] for t in meeting["turns"]] == list(range(6))
    assert model.calls == 3 + 2  # three pieces, then the two unusable answers once more
    assert (record.asked, record.repaired) == (3, 1)
    assert record.failures == [("qmsum_product meeting ES2002a turns 5-6", "expected 2 lines, one per turn, got 1")]
    assert record.notes == ("1 of 6 turns of 1 meetings (qmsum_product, qmsum_academic) rewritten, 2 kept rule-cleaned; "
                            "at most 2 turns per prompt")
    texts = stage_templates("cleaner")
    sha = hashlib.sha256(json.dumps({"prompt": texts["prompt"], "repair": texts["repair"]}, sort_keys=True).encode()).hexdigest()
    assert card_section([record]).splitlines() == [
        "| stage | model | identity | prompt sha256 | asked | fixed by the retry | kept rule-made | model errors |",
        "|---|---|---|---|---|---|---|---|",
        f'| cleaner | `stub:cleaner` | `{{"kind": "stub", "model": "cleaner"}}` | `{sha}` | 3 | 1 | 1 | 0 |',
        "",
        f"- cleaner: {record.notes}",
        "  - kept rule-made: qmsum_product meeting ES2002a turns 5-6 (expected 2 lines, one per turn, got 1)"]
    again = Scripted("cleaner", botch="golf", stubborn="intrepid")
    fresh = _conversation("ES2002a", EXCERPT)
    assert clean_transcripts([fresh], again, {}, tmp_path / "c.sqlite", progress=False) == record
    assert again.calls == 0 and fresh["turns"] == meeting["turns"]  # the cache answers, retries included


def test_a_refused_piece_keeps_its_rule_text_and_is_counted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Before issue #19 the first refused piece stopped the build (and, its refusal asked again on every
    # build, no build could finish). Now: 1 of 3 pieces (33%) is within a 50% limit, so the build goes on
    monkeypatch.setattr(model_made, "CLEAN_TURNS_PER_CALL", 2)
    meeting = _conversation("ES2002a", EXCERPT)
    model = Scripted("cleaner", refuse="golf")
    with pytest.warns(UserWarning, match=re.escape(
            "cocoeval: 1 of 3 prompts of the cleaner stub:cleaner ended in an error; each keeps its rule-made cleaned "
            "text, named in the card; once the cause is fixed, the same `convbench build` command with --retry-errors "
            "asks them again")):
        record = clean_transcripts([meeting], model, {}, tmp_path / "c.sqlite", progress=False, max_error_rate=0.5)
    assert model.calls == 3  # the refused piece is not asked to repair its answer: it has none
    said = [t["utterance"] for t in meeting["turns"]]
    assert said[2:4] == [u for _, u in EXCERPT[2:4]]  # turns 3-4: rule-cleaned, as they were
    assert said[:2] + said[4:] == [scripted_clean(u) for _, u in EXCERPT[:2] + EXCERPT[4:]]
    assert record.errors == [("qmsum_product meeting ES2002a turns 3-4", "refused for this row: HTTP 400 (content filter)")]
    assert (record.asked, record.repaired, record.failures) == (3, 0, [])
    # the scripted cleaner changes one turn only (turn 4's "uh"), in the refused piece: none rewritten
    assert record.notes.startswith("0 of 6 turns of 1 meetings (qmsum_product, qmsum_academic) rewritten, 2 kept rule-cleaned")
    card = card_section([record]).splitlines()
    assert card[2].endswith("| 3 | 0 | 0 | 1 |")
    assert card[-1] == ("  - model error, kept rule-made: qmsum_product meeting ES2002a turns 3-4 (refused for this row: "
                        "HTTP 400 (content filter))")


def _described(k: int, said: str) -> dict:
    return {"id": f"r/{k}", "metadata": {"setting": "s", "participants": ["Marketing"], "goals": []},
            "history": [{"speaker": "Marketing", "utterance": said}]}


def test_refused_rows_over_the_limit_stop_the_build_and_retry_errors_asks_them_again(tmp_path: Path) -> None:
    # 2 of 3 rows refused: every row is asked (not a stop at the first), then the stage fails with the count
    rows = [_described(0, "golf"), _described(1, "tennis"), _described(2, "golf again")]
    rule_made = [r["metadata"] for r in rows]

    def describe(model: Scripted, **kwargs) -> object:
        return model_metadata(rows, [r["history"] for r in rows], model, {}, tmp_path / "c.sqlite", progress=False,
                              **kwargs)

    refusing = Scripted(refuse="golf")
    with pytest.raises(TooManyErrors) as caught:
        describe(refusing)
    assert str(caught.value) == (
        "cocoeval: 2 of 3 prompts of the metadata model stub:scripted (66.7%) ended in an error, more than the 5% "
        "--max-error-rate allows; first: row r/0: refused for this row: HTTP 400 (content filter); nothing was "
        "written: once the cause is fixed, the same `convbench build` command with --retry-errors asks them again "
        "(a higher --max-error-rate accepts them, each keeping its rule-made metadata)")
    assert refusing.calls == 3 and [r["metadata"] for r in rows] == rule_made  # nothing half-replaced
    # the errors are cached: the same build records them again without asking, even of a model that would answer
    fixed = Scripted()
    with pytest.raises(TooManyErrors):
        describe(fixed)
    assert fixed.calls == 0
    # --retry-errors asks exactly the two refused rows again; now every row's metadata is the model's
    record = describe(fixed, retry_errors=True)
    assert fixed.calls == 2 and record.errors == [] and record.notes.startswith("3 of 3 rows' metadata written")
    assert [r["metadata"]["setting"] for r in rows] == ["A scripted setting."] * 3


def test_metadata_model_names_every_speaker_and_is_retried_once(tmp_path: Path) -> None:
    rows = [{"id": f"iq2/d/{k}", "metadata": {"setting": "a debate", "participants": ["Ann Lee (for the motion)", "Bo Wu (moderator)"],
                                             "goals": ["Debate the motion: X"]},
             "history": [{"speaker": "Bo Wu", "utterance": "Welcome." if k else "BOTCH"}]} for k in range(2)]
    model = Scripted(botch="BOTCH")
    record = model_metadata(rows, [r["history"] for r in rows], model, {}, tmp_path / "c.sqlite", progress=False)
    # speakers: the history's first, then the participants without their parenthesis
    expected = {"setting": "A scripted setting.", "participants": ["Bo Wu (role 0)", "Ann Lee (role 1)"],
                "goals": ["agree among 2"]}
    assert [r["metadata"] for r in rows] == [expected, expected]
    assert model.calls == 3 and (record.asked, record.repaired, record.failures) == (2, 1, [])
    assert record.notes == "2 of 2 rows' metadata written, 0 kept rule-made; read the last 200 turns at most, up to the end of the history"


class Cut(Backend):
    """Answers a summary prompt with a parseable text cut at the token limit (``finish_reason`` "length")
    unless given at least ``room`` tokens; a prompt holding ``long`` is cut at any limit. Records the limits."""

    kind = "stub"

    def __init__(self, room: int) -> None:
        self.model, self.room, self.limits = "cut", room, []

    def generate(self, prompts: Sequence[list[dict]], params: GenerationParams) -> Iterator[tuple[int, Generation]]:
        for i, messages in enumerate(prompts):
            self.limits.append(params.max_new_tokens)
            if params.max_new_tokens < self.room or "long" in messages[0]["content"]:
                yield i, Generation(f"A summary that looks whole at {params.max_new_tokens}.", finish_reason="length")
            else:
                yield i, Generation("The whole summary.", finish_reason="stop")


def test_a_cut_answer_is_never_kept_and_is_retried_at_twice_the_limit(tmp_path: Path) -> None:
    from convbench_datasets.cocoeval.model_stage import run_stage

    # the first answers (300 tokens) parse but were cut: both are asked again with 600 tokens; the short
    # one then ends on its own, the long one is cut again and keeps its rule-made value, counted
    model = Cut(room=600)
    fields = [{"setting": "a meeting", "history": "Ann: brief"}, {"setting": "a meeting", "history": "Ann: long"}]
    values, record = run_stage("summarizer", model, {}, fields, ["row a", "row b"],
                               lambda i, text: (text, None), what="summary", max_new_tokens=300,
                               cache=tmp_path / "c.sqlite", progress=False)
    assert values == ["The whole summary.", None]
    assert model.limits == [300, 300, 600, 600]
    assert (record.asked, record.repaired) == (2, 1)
    assert record.failures == [("row b", "the answer was cut at the 600-token limit")]



def test_a_stage_leaves_a_backend_object_open_and_closes_the_one_it_built(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from convbench_datasets.cocoeval import model_stage
    from convbench_datasets.engine.backends.baseline import BaselineBackend

    closed: list[str] = []
    monkeypatch.setattr(Cut, "close", lambda self: closed.append("object"), raising=False)
    monkeypatch.setattr(BaselineBackend, "close", lambda self: closed.append(self.spec))
    fields = [{"setting": "a meeting", "history": "Ann: brief"}]
    for model in (Cut(room=600), "baseline:repeat"):
        model_stage.run_stage("summarizer", model, {}, fields, ["row a"], lambda i, text: (text, None),
                              what="summary", max_new_tokens=300, cache=tmp_path / "c.sqlite", progress=False)
    assert closed == ["baseline:repeat"]  # the object passed in is the caller's, as in a run


_TAG = re.compile(r"(\w+) (m\d+) t(\d+)")
SOURCES = ("qmsum_product", "qmsum_academic", "qmsum_committee", "iq2")


def _tagged_meetings(source: str, test: int = 26, train: int = 4) -> list[dict]:
    """Meetings of 130 turns (two 60-turn windows each: 52 test, 8 train) whose every turn says where
    it is, "uh <source> m<k> t<i>" (the scripted cleaner drops the "uh")."""
    return [{"id": f"m{k}", "source": source, "material": "test" if k < test else "train", "setting": SETTINGS[source],
             "participants": ["A", "B", "C"], "roles": ["A", "B", "C"], "topics": [("plan", 0)],
             "turns": [{"speaker": "ABC"[i % 3], "utterance": f"uh {source} m{k} t{i}", "position": i} for i in range(130)]}
            for k in range(test + train)]


def _turns_read(prompt: str) -> tuple[str, str, list[int]]:
    """(source, meeting, turn indices) of the tagged turns in a prompt: all of one meeting, consecutive."""
    tags = _TAG.findall(prompt)
    assert tags and len({(s, m) for s, m, _ in tags}) == 1, prompt[:200]
    numbers = [int(i) for _, _, i in tags]
    assert numbers == list(range(numbers[0], numbers[0] + len(numbers))), prompt[:200]
    return tags[0][0], tags[0][1], numbers


def test_no_model_made_stage_sees_a_rows_reference_with_its_past(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from convbench_datasets.cocoeval import builder

    meetings = {s: _tagged_meetings(s) for s in SOURCES}
    monkeypatch.setattr(builder, "read_qmsum", lambda source, *args, **kwargs: meetings[source])
    monkeypatch.setattr(builder, "read_iq2", lambda *args, **kwargs: meetings["iq2"])
    models = {"cleaner": Scripted("cleaner"), "metadata_model": Scripted("describer"), "summarizer": Scripted("summarizer")}
    built = builder.build(progress=False, cache=tmp_path / "c.sqlite", **models)
    rows = [r for c in built.configs for split in ("test", "train") for r in c.splits[split]]
    assert len(rows) == 4 * (50 + 8)
    # cleaner: no prompt holds both a history turn and a reference turn of the same window (the windows
    # start at 30 + a seeded offset of 0..10, and at 60 more: fixed pieces of 50 from turn 0 would span one)
    cleaned = [_turns_read(text) for text in models["cleaner"].prompts]
    assert {s for s, _, _ in cleaned} == {"qmsum_product", "qmsum_academic"}
    for row in rows:
        if row["source"] in ("qmsum_product", "qmsum_academic"):
            start = row["start_turn"]
            history, reference = set(range(start - 30, start)), set(range(start, start + 30))
            assert not [n for s, m, n in cleaned if (s, m) == (row["source"], row["conversation_id"])
                        and history & set(n) and reference & set(n)], row["id"]
            assert not [t for t in row["history"] + row["reference"] if t["utterance"].startswith("uh ")]  # all cleaned
    # describer: one prompt per row, ending at its last history turn (no reference utterance in it);
    # summarizer: one per row with earlier turns, ending before its history
    starts = sorted((r["source"], r["conversation_id"], r["start_turn"]) for r in rows)
    described = [_turns_read(text) for text in models["metadata_model"].prompts]
    assert sorted((s, m, n[-1] + 1) for s, m, n in described) == starts
    summarised = [_turns_read(text) for text in models["summarizer"].prompts]
    assert sorted((s, m, n[-1] + 31) for s, m, n in summarised) == [k for k in starts if k[2] > 30]


def _rows(folder: Path, config: str, split: str = "test") -> list[dict]:
    import datasets

    return datasets.load_dataset(str(folder), config, split=split).to_list()


@pytest.mark.slow
def test_build_with_every_model_made_stage(qmsum_iq2_sources: Path, tmp_path: Path) -> None:
    from convbench_datasets import build

    models = {"cleaner": Scripted("cleaner", botch="button", stubborn="I'm not good at golf."),
              "metadata_model": Scripted("describer"), "summarizer": Scripted("summarizer")}
    cache = tmp_path / "responses.sqlite"
    first = build("cocoeval", tmp_path / "one", sources=qmsum_iq2_sources, progress=False, cache=cache, **models).path
    assert all(m.calls > 0 for m in models.values())
    cleaned_rows = {s: _rows(first, s) + _rows(first, s, "train") for s in ("qmsum_product", "qmsum_academic")}
    # expected: the rule-cleaned meetings cut at 0 and at each window's reference start, each stretch in
    # pieces of at most 50 turns, each piece cleaned by the scripted rule unless it never maps back
    counts: Counter = Counter()
    expected: dict[str, list[str]] = {}
    pieces = repaired = 0
    stubborn: list[str] = []
    kept_turns: dict[str, tuple[int, int]] = {}  # the stubborn piece's meeting: (its turns, the meeting's turns)
    for source in ("qmsum_product", "qmsum_academic"):
        cuts: dict[str, set[int]] = {}
        for row in cleaned_rows[source]:
            cuts.setdefault(row["conversation_id"], set()).add(row["start_turn"])
        for meeting in read_qmsum(source, qmsum_iq2_sources, counts, progress=False):
            texts = []
            bounds = sorted({0, len(meeting["turns"]), *cuts.get(meeting["id"], ())})
            for k, end in [(k, min(k + 50, b)) for a, b in zip(bounds, bounds[1:]) for k in range(a, b, 50)]:
                said = [t["utterance"] for t in meeting["turns"][k:end]]
                lines = "\n".join(said)
                pieces += 1
                if "I'm not good at golf." in lines:
                    kept_turns[meeting["id"]] = (len(said), len(meeting["turns"]))
                    stubborn.append(f"{source} meeting {meeting['id']} turns {k + 1}-{k + len(said)} "
                                    f"(expected {len(said)} lines, one per turn, got {len(said) - 1})")
                repaired += "button" in lines and "I'm not good at golf." not in lines
                texts += said if "I'm not good at golf." in lines else [scripted_clean(u) for u in said]
            expected[meeting["id"]] = texts
    assert len(stubborn) == 1 and repaired > 0
    for source, rows in cleaned_rows.items():
        for row in rows:
            start = row["start_turn"]
            assert [t["utterance"] for t in row["history"]] == expected[row["conversation_id"]][start - 30 : start]
            assert [t["utterance"] for t in row["reference"]] == expected[row["conversation_id"]][start : start + 30]
    # the describer's transcript ends exactly at each row's last history turn: no reference turn follows
    read: dict[str, list[str]] = {}
    for text in models["metadata_model"].prompts:
        history = text.split("\n\nDescribe this conversation")[0]
        read.setdefault(history.rsplit("\n", 1)[-1], []).append(history)
    all_rows = [r for split in ("test", "train") for r in _rows(first, "all", split)]
    for row in all_rows:
        block = "\n".join(f"{t['speaker']}: {t['utterance']}" for t in row["history"])
        assert any(h.endswith("\n" + block) for h in read.get(block.rsplit("\n", 1)[-1], [])), row["id"]
    committee = _rows(first, "qmsum_committee")
    for row in committee + _rows(first, "iq2"):  # every source gets model metadata
        names = list(dict.fromkeys(t["speaker"] for t in row["history"]))
        assert row["metadata"]["setting"] == "A scripted setting."
        assert row["metadata"]["participants"][: len(names)] == [f"{n} (role {k})" for k, n in enumerate(names)]
        assert row["metadata"]["goals"] == [f"agree among {len(row['metadata']['participants'])}"]
    assert any(r["summary_method"].startswith("abstractive: stub:summarizer, from the last ") for r in committee)
    # each row records its routes: the cleaner on the two QMSum sources it cleans (the stubborn piece's meeting
    # says how many of its turns stayed rule-cleaned), rules elsewhere; the model's metadata on every row
    (stubborn_meeting, (kept, of)), = kept_turns.items()
    for row in all_rows:
        if row["id"].split("/")[0] in ("qmsum_product", "qmsum_academic"):  # source is a class id here
            assert row["cleaning_method"] == "rules, then stub:cleaner" + (
                f" ({kept} of {of} turns kept rule-cleaned)" if row["conversation_id"] == stubborn_meeting else ""), row["id"]
        else:
            assert row["cleaning_method"] == "rules", row["id"]
        assert row["metadata_method"] == "model: stub:describer", row["id"]
    card = (first / "README.md").read_text(encoding="utf-8")
    total_rows = len(all_rows)
    assert re.search(rf"\| cleaner \| `stub:cleaner` \| .* \| {pieces} \| {repaired} \| 1 \|", card)
    assert re.search(rf"\| metadata model \| `stub:describer` \| .* \| {total_rows} \| 0 \| 0 \|", card)
    assert f"  - kept rule-made: {stubborn[0]}" in card
    # a rebuild with the same models: every answer from the cache, every byte the same
    again = {name: Scripted(m.model, botch="button", stubborn="I'm not good at golf.") for name, m in models.items()}
    second = build("cocoeval", tmp_path / "two", sources=qmsum_iq2_sources, progress=False, cache=cache, **again).path
    assert [m.calls for m in again.values()] == [0, 0, 0]
    files = sorted(p.relative_to(first) for p in first.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(second) for p in second.rglob("*") if p.is_file())
    for name in files:
        assert (first / name).read_bytes() == (second / name).read_bytes(), name


def test_a_build_without_models_says_so_in_the_card(cocoeval_built: Path) -> None:
    card = (cocoeval_built / "README.md").read_text(encoding="utf-8")
    assert ("None: every stage of this build is rule-made (no `--cleaner`, `--summarizer` or `--metadata-model`)."
            in card)


def test_cli_passes_the_stage_options(monkeypatch: pytest.MonkeyPatch) -> None:
    from convbench_datasets import api, cli

    seen: dict = {}

    class Summary:
        def lines(self) -> list[str]:
            return []

    monkeypatch.setattr(api, "build", lambda name, out, **kw: seen.update(kw) or Summary())
    assert cli.main(["build", "cocoeval", "--out", "x", "--cleaner", "openai:o4-mini", "--cleaner-base-url", "http://h/v1",
                     "--metadata-model", "openai:o4-mini", "--cache", "c.sqlite", "--no-progress"]) == 0
    assert {k: seen[k] for k in ("cleaner", "cleaner_options", "metadata_model", "metadata_model_options", "cache")} == {
        "cleaner": "openai:o4-mini", "cleaner_options": {"base_url": "http://h/v1"}, "metadata_model": "openai:o4-mini",
        "metadata_model_options": {}, "cache": "c.sqlite"}
    assert not {"summarizer", "retry_errors", "max_error_rate"} & set(seen)  # not given: the builder's defaults
    seen.clear()
    assert cli.main(["build", "cocoeval", "--out", "x", "--metadata-model", "openai:m", "--retry-errors",
                     "--max-error-rate", "10%"]) == 0
    assert (seen["retry_errors"], seen["max_error_rate"]) == (True, 0.1)
    assert cli.main(["build", "nc", "--out", "x", "--cleaner", "openai:m"]) != 0
    # request parameters per build stage, as --param for a run: JSON values, null leaves a field out
    seen.clear()
    assert cli.main(["build", "cocoeval", "--out", "x", "--summarizer", "openai:m", "--summarizer-param", "temperature=0.3",
                     "--cleaner", "openai:o4-mini", "--cleaner-param", "reasoning_effort=low", "--cleaner-param",
                     "seed=null"]) == 0
    assert seen["summarizer_options"] == {"params": {"temperature": 0.3}}
    assert seen["cleaner_options"] == {"params": {"reasoning_effort": "low", "seed": None}}
    assert cli.main(["build", "cocoeval", "--out", "x", "--cleaner-param", "seed=1"]) != 0  # no --cleaner to take it


def test_build_flags_of_the_model_stages_are_refused_for_other_benchmarks(capsys) -> None:
    from convbench_datasets import cli

    assert cli.main(["build", "nc", "--out", "x", "--retry-errors"]) == 1
    assert cli.main(["build", "nico", "--out", "x", "--max-error-rate", "0.1"]) == 1
    assert capsys.readouterr().err.splitlines() == [
        "convbench: error: --retry-errors applies to cocoeval's model-made stages only",
        "convbench: error: --max-error-rate applies to cocoeval's model-made stages only"]


def test_a_metadata_model_build_that_refuses_rows_fails_then_finishes(monkeypatch: pytest.MonkeyPatch,
                                                                       tmp_path: Path, capsys) -> None:
    # the reported build: `convbench build cocoeval --metadata-model` against a server that refuses some
    # prompts for good (HTTP 400 for about a quarter of them). Before issue #19 it stopped at the first
    # refusal and, asking it again every time, could never finish. Sources: the tagged meetings (4 x 58 rows).
    from convbench_datasets.cli import main
    from convbench_datasets.cocoeval import builder
    from tests.support.openai_server import openai_server

    meetings = {s: _tagged_meetings(s) for s in SOURCES}
    monkeypatch.setattr(builder, "read_qmsum", lambda source, *args, **kwargs: meetings[source])
    monkeypatch.setattr(builder, "read_iq2", lambda *args, **kwargs: meetings["iq2"])
    rows = 4 * (50 + 8)
    with openai_server() as (url, state):
        def build(name: str, *extra: str) -> int:
            return main(["build", "cocoeval", "--out", str(tmp_path / name), "--metadata-model", "openai:refuse",
                         "--metadata-model-base-url", url, "--cache", str(tmp_path / "c.sqlite"), "--no-progress",
                         *extra])

        assert build("first") == 1
        asked = state.count()
        line = capsys.readouterr().err.strip().splitlines()[-1]
        found = re.match(rf"convbench: error: cocoeval: (\d+) of {rows} prompts of the metadata model openai:refuse "
                         r"\((\d+\.\d)%\) ended in an error, more than the 5% --max-error-rate allows; first: row ", line)
        assert found, line
        errors = int(found.group(1))
        assert 0.05 * rows < errors < rows and found.group(2) == f"{100 * errors / rows:.1f}"
        assert asked > rows and not (tmp_path / "first").exists()  # every row asked (and repaired), nothing written
        # accepted: written, the errors counted in the card and a warning, nothing asked again (all cached)
        assert build("accepted", "--max-error-rate", "1") == 0 and state.count() == asked
        assert (f"convbench: warning: cocoeval: {errors} of {rows} prompts of the metadata model openai:refuse "
                "ended in an error") in capsys.readouterr().err
        card = (tmp_path / "accepted" / "README.md").read_text(encoding="utf-8")
        assert re.search(rf"\| metadata model \| `openai:refuse` \| .* \| {rows} \| 0 \| \d+ \| {errors} \|", card)
        # --retry-errors asks exactly the refused prompts again (this server refuses them again)
        assert build("retried", "--retry-errors", "--max-error-rate", "1") == 0
        assert state.count() == asked + errors
