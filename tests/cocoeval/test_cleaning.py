"""Cleaning rules, each counted; words are never changed."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from convbench_datasets._resources import read_yaml
from convbench_datasets.cocoeval.cleaning import (clean_text, clean_texts, clean_turns, page_header_pattern,
                                                  speaker_aliases, split_inline_speakers)
from convbench_datasets.cocoeval.conversations import qmsum_sources, read_iq2, read_qmsum
from convbench_datasets.cocoeval.instances import select_windows
from convbench_datasets.sources import fetch


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


# The rules below are tested on real turns of the QMSum and IQ2 mirror, read at run time or quoted.
# Expected texts and counts are worked out by hand from the rules in cleaning.py's docstring.


def _qmsum_turns(sources: Path, name: str) -> list[dict]:
    src = next(s for s in qmsum_sources() if s.name.endswith(name))
    meeting = json.loads(fetch(src, sources_dir=sources, progress=False).read_text(encoding="utf-8"))
    return [{"speaker": t["speaker"], "utterance": t["content"], "position": i}
            for i, t in enumerate(meeting["meeting_transcripts"])]


def test_turns_that_only_markers_separated_are_merged(qmsum_iq2_sources: Path) -> None:
    # ES2002a turns 92-96: the Project Manager speaks three times; the two turns between are only
    # {vocalsound}. Before this rule they stayed three back-to-back turns of one speaker.
    turns = _qmsum_turns(qmsum_iq2_sources, "Product/train/ES2002a.json")[92:97]
    assert [t["utterance"] for t in turns[1::2]] == ["{vocalsound}", "{vocalsound}"]
    counts: Counter = Counter()
    assert clean_turns(turns, counts, tokenised=True) == [{
        "speaker": "Project Manager", "position": 92,
        "utterance": "Um he's very friendly and cheery and always pleased to see you, and very kind of affectionate and "
                     "um uh and he's quite quite wee as well so you know he can doesn't take up too much space. "
                     "Um and uh And he does a funny thing where he chases his tail as well, which is quite amusing, so"}]
    # markers: 2 + 1 + 1 + 1 + 1; the space before 4 marks (", ." "," ","); five turns re-spaced
    assert +counts == Counter({"markers": 6, "spaced_punctuation": 4, "whitespace": 5, "empty_turns": 2,
                               "merged_turns": 2})


def test_turns_of_one_speaker_that_the_source_has_back_to_back_stay_apart() -> None:
    turns = [{"speaker": "A", "utterance": "One .", "position": 0}, {"speaker": "A", "utterance": "Two .", "position": 1},
             {"speaker": "B", "utterance": "{vocalsound}", "position": 2}, {"speaker": "C", "utterance": "Three", "position": 3}]
    assert [t["utterance"] for t in clean_turns(turns, Counter())] == ["One.", "Two.", "Three"]


def test_icsi_unintelligible_markers_and_spaced_hyphens() -> None:
    # QMSum Academic Bed005 (ICSI): a turn with "@ @" and a spaced compound
    text = ("I think {disfmarker} I think the i the idea is {pause} that {disfmarker} Oh . It 's beyond Source - Path "
            "- Goal , but I think we don't need to get beyond it @ @ {comment} {disfmarker} tourists in Heidelberg .")
    counts: Counter = Counter()
    assert clean_text(text, counts, tokenised=True) == (
        "I think I think the i the idea is that Oh. It's beyond Source-Path-Goal, but I think we don't need to get "
        "beyond it tourists in Heidelberg.")
    assert +counts == Counter({"markers": 5, "unintelligible": 1, "whitespace": 1, "spaced_punctuation": 3,
                               "spaced_contractions": 1, "spaced_hyphens": 2})
    # Bed016 and Bmr006
    assert clean_text("The twenty - first I 'm assuming .", Counter(), tokenised=True) == "The twenty-first I'm assuming."
    assert clean_text("Mm - hmm .", Counter(), tokenised=True) == "Mm-hmm."
    # IQ2 writes a dash as " - " (UndocumentedImmigrants-100907): not tokenised, never rejoined
    dash = "they are blaming one country - Mexico."
    assert clean_text(dash, Counter()) == dash


def test_fast_path_matches_one_regex_per_turn_on_edge_cases() -> None:
    counts: Counter = Counter()
    # a clitic after a joined clitic stays apart (the regex consumed the "s"); a mark before a digit stays
    assert clean_texts(["x 's 's", "it 's n't", "a .22 calibre , b", "DO N'T", "a\nb", " "], counts) == [
        "x's 's", "it's n't", "a .22 calibre, b", "DON'T", "a b", ""]
    assert +counts == Counter({"spaced_contractions": 3, "spaced_punctuation": 1, "whitespace": 2})


HEADERS = read_yaml("convbench_datasets.cocoeval", "iq2_page_headers.yaml")


def test_iq2_page_headers_are_cut_and_hidden_speaker_changes_split() -> None:
    # buy-american: one turn of John Donvan's (discussion segment), paragraphs as released
    paragraphs = ["I agree— John, it’s a wonderful thesis question but we ought— Rosenkranz Foundation-Intelligence "
                  "Squared U.S. AUDIENCE MEMBER (male) Well, I really said that—",
                  "Come on, sir, let’s move on— AUDIENCE MEMBER (male)—is where we are—", "—to the—"]
    counts: Counter = Counter()
    pieces = split_inline_speakers("John Donvan", paragraphs, counts)
    assert [who for who, _ in pieces] == ["John Donvan", "Male Audience Member", "John Donvan",
                                          "Male Audience Member", "John Donvan"]
    turns = [{"speaker": who, "utterance": text, "position": 215} for who, text in pieces]
    assert [t["utterance"] for t in clean_turns(turns, counts, page_headers=page_header_pattern(HEADERS["buy-american"]))] == [
        "I agree— John, it’s a wonderful thesis question but we ought—", "Well, I really said that—",
        "Come on, sir, let’s move on—", "—is where we are—", "—to the—"]
    assert +counts == Counter({"speaker_labels": 2, "page_headers": 1, "whitespace": 1})


def _iq2_discussion(sources: Path, key: str) -> list[dict]:
    """The discussion-segment turns of one debate of the IQ2 release, as released."""
    from convbench_datasets.cocoeval.conversations import _zip_member, iq2_source, pins

    spec = pins()["iq2"]
    debates = _zip_member(fetch(iq2_source(), sources_dir=sources, progress=False), spec["member"], spec["max_member_bytes"])
    return [t for t in debates[key]["transcript"] if t["segment"] == 1]


def test_a_listed_inline_debater_label_is_split(qmsum_iq2_sources: Path) -> None:
    # mexico drug war (120109), discussion turns 54-56 as released: Chris W. Cox's reply begins inside
    # Jeffrey A. Miron's turn after "CHRIS COX" (listed in iq2_inline_speakers.yaml)
    key = "mexico%20drug%20war%20120109"
    turns = _iq2_discussion(qmsum_iq2_sources, key)[54:57]
    assert [t["speaker"] for t in turns] == ["Jeffrey A. Miron", "John Donvan", "Chris W. Cox"]
    labels = read_yaml("convbench_datasets.cocoeval", "iq2_inline_speakers.yaml")[key]
    assert labels == {"CHRIS COX": "Chris W. Cox"}
    counts: Counter = Counter()
    pieces = [piece for t in turns for piece in split_inline_speakers(t["speaker"], t["paragraphs"], counts, labels)]
    assert [who for who, _ in pieces] == ["Jeffrey A. Miron", "Chris W. Cox", "John Donvan", "Chris W. Cox"]
    assert pieces[0][1].endswith("I hope that my opponent agrees with that proposition.")
    assert pieces[1:] == [("Chris W. Cox", "Actually, I agree— I agree with quite a bit of Jeff’s arguments, certainly—"),
                          ("John Donvan", "Chris Cox—"),
                          ("Chris W. Cox", "—not with regards to guns but I certainly agree with your study—")]
    assert counts == Counter({"speaker_labels": 1})
    # without the listing the label stays inside Miron's turn; other debates' text is never cut at it
    assert len(split_inline_speakers(turns[0]["speaker"], turns[0]["paragraphs"], Counter())) == 1


def test_a_header_that_is_also_the_motion_stays_where_it_is_quoted() -> None:
    smart = page_header_pattern(HEADERS["051315%20Smart%20Tech"])
    counts: Counter = Counter()
    # Andrew Keen's turn (a header glued to the next word) and the moderator quoting the motion
    assert clean_text("Smart Technology is Making Us DumbSo there is a double vulgarity here,", counts,
                      page_headers=smart) == "So there is a double vulgarity here,"
    quoted = 'arguing for and against the motion, "Smart Technology is Making Us Dumb.” As always,'
    assert clean_text(quoted, counts, page_headers=smart) == quoted
    assert clean_text("And that is the motion: Smart Technology is Making Us Dumb. And here's", counts,
                      page_headers=smart).endswith("Making Us Dumb. And here's")
    assert counts["page_headers"] == 1


def test_an_iq2_turn_with_no_text_is_dropped_and_counted() -> None:
    # 011515 Amazon: Franklin Foer's turn between two of John Donvan's is [''] (nontext: unintelligible)
    counts: Counter = Counter()
    turns = [{"speaker": who, "utterance": text, "position": i}
             for i, (speaker, paragraphs) in enumerate([("John Donvan", ["But doesn't--"]), ("Franklin Foer", [""]),
                                                        ("John Donvan", ["--don't the publishing houses do exactly the same thing?"])])
             for who, text in split_inline_speakers(speaker, paragraphs, counts)]
    assert clean_turns(turns, counts) == [{"speaker": "John Donvan", "position": 0,
                                           "utterance": "But doesn't-- --don't the publishing houses do exactly the same thing?"}]
    assert +counts == Counter({"empty_turns": 1, "merged_turns": 1})


def test_speaker_aliases_within_a_meeting() -> None:
    # labels of QMSum Committee covid_4 (Canadian House of Commons)
    labels = ["Hon. Bill Blair (Minister of Public Safety and Emergency Preparedness)", "Hon. Bill Blair",
              "The Chair (Hon. Anthony Rota (NipissingTimiskaming, Lib.))", "The Chair",
              "The Acting Chair (Mr. Bruce Stanton (Simcoe North, CPC))", "The Acting Chair (Mr. Bruce Stanton)",
              "Mr. Bruce Stanton", "Hon. Patty Hajdu (Minister of Health)"]
    assert speaker_aliases(labels) == {
        "Hon. Bill Blair (Minister of Public Safety and Emergency Preparedness)": "Hon. Bill Blair",
        "The Chair (Hon. Anthony Rota (NipissingTimiskaming, Lib.))": "The Chair",
        "The Acting Chair (Mr. Bruce Stanton (Simcoe North, CPC))": "The Acting Chair (Mr. Bruce Stanton)"}
    turns = [{"speaker": s, "utterance": "Yes .", "position": i} for i, s in enumerate(labels[:2])]
    counts: Counter = Counter()
    assert [t["speaker"] for t in clean_turns(turns, counts)] == ["Hon. Bill Blair", "Hon. Bill Blair"]
    assert counts["speaker_aliases"] == 1 and counts["merged_turns"] == 0  # back to back in the source


def test_the_shortest_alias_wins() -> None:
    # covid_4's chair with a middle form added (no pinned meeting has all three): stripping the innermost
    # group first reaches "The Chair (Hon. Anthony Rota)", a label; stripping on reaches "The Chair", the
    # shortest label of the person, which every longer label takes
    labels = ["The Chair (Hon. Anthony Rota (NipissingTimiskaming, Lib.))", "The Chair (Hon. Anthony Rota)", "The Chair"]
    assert speaker_aliases(labels) == {labels[0]: "The Chair", labels[1]: "The Chair"}


def test_the_mirror_after_every_rule(qmsum_iq2_sources: Path) -> None:
    counts: Counter = Counter()
    debates = read_iq2(qmsum_iq2_sources, counts, progress=False)
    # 440: the headers listed in iq2_page_headers.yaml occur 440 times in the discussion segments
    # (str.count over each debate's paragraphs; none of those is quoted or followed by punctuation);
    # 25: "AUDIENCE MEMBER" occurs 24 times there (22 in buy-american, one each in Religion-Transcript-020707
    # and SpreadingDemocracy-091807), and the one label iq2_inline_speakers.yaml lists ("CHRIS COX") once
    assert counts["page_headers"] == 440 and counts["speaker_labels"] == 25
    texts = [t["utterance"] for d in debates for t in d["turns"]]
    assert not [t for t in texts if "Rosenkranz Foundation-Intelligence" in t or "Rosenkranz Foundation - Intelligence" in t]
    assert not [t for t in texts if "AUDIENCE MEMBER" in t or "CHRIS COX" in t]
    product = read_qmsum("qmsum_product", qmsum_iq2_sources, counts, progress=False)
    committee = read_qmsum("qmsum_committee", qmsum_iq2_sources, counts, progress=False)
    evaluation, _ = select_windows(product, "qmsum_product")
    # back-to-back turns of one speaker in the product test windows: 135 with the previous rules, none now
    assert not [c["id"] for c, s in evaluation for a, b in zip(c["turns"][s - 30 : s + 30], c["turns"][s - 29 : s + 30])
                if a["speaker"] == b["speaker"]]
    for conversation in (*debates, *product):
        assert all(a["speaker"] != b["speaker"] for a, b in zip(conversation["turns"], conversation["turns"][1:]))
    # 405 Committee labels are another label of their meeting plus parentheses (counted independently by
    # stripping trailing groups innermost first); "Hon. Bill Blair" is one participant of covid_4
    assert counts["speaker_aliases"] == 405
    covid_4 = next(c for c in committee if c["id"] == "covid_4")
    assert [p for p in covid_4["participants"] if "Bill Blair" in p] == ["Hon. Bill Blair"]
