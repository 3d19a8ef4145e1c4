"""Writes identify_answers.jsonl: hand-labelled answers to NICO's identify-unnatural task.

Each answer is composed here from the sentences of one dialogue of convbench's bundled sample (the
dialogue as first written, as the identify_unnatural rows show it), so its careful reading is known by
construction: the dialogue spans it names (turn, first and last character), the sentences it gives
that are not the dialogue's ("other"), or that it says there are none, refuses, is blank, or stops
after its preamble. The forms are those of real model answers: one sentence a line as asked, numbered
and bulleted lists, quotes, speaker labels, Markdown, JSON, English, preambles, notes and reason lines,
"none" in many wordings (the prompt's own among them), refusals, whole turns around an unnatural
clause, copies with a small edit, two sentences on one line.

The careful reading, which tests/nico/test_identify_answer_set.py scores on its own and compares
with convbench's:
- a named span is one prediction; the same span named twice is one; an "other" sentence is a
  prediction that matches nothing;
- a prediction matches a gold sentence when its span lies in the gold sentence's turn and contains it
  (the gold span itself, or a longer stretch of that turn around it, as a person reading the answer sees
  the model point at that sentence); a copy with a small edit names the span it copies;
- notes, reasons, preambles and "the rest are natural" comments are not predictions;
- "none" (in any wording, or an empty JSON list) is the empty set; a blank answer, a refusal ("I can't
  tell") and an answer that stops after its preamble are no answer: P = R = 0.

Run: python tests/nico/data/make_identify_answers.py [OUT] (deterministic; default OUT: the committed file).
"""

from __future__ import annotations

import json
import random
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
OUT = Path(__file__).with_name("identify_answers.jsonl")
SEED = 21
PER_DIALOGUE = 58

# a clause: text up to and including its run of sentence or clause punctuation
CLAUSE = re.compile(r"[^。！？!?…；;，,、：:～~]+[。！？!?…；;，,、：:～~]*")
END_PUNCTUATION = "。！？!?…；;，,、：:～~"

PREAMBLES = [
    "以下是不自然的句子：", "不自然的句子有：", "经过分析，以下句子不符合人类说话习惯：", "上文中不自然的句子如下：",
    "我认为以下句子不太自然：", "The unnatural sentences are:", "Here are the unnatural sentences:", "不符合人类说话习惯的句子：",
    "### 不自然的句子", "**不自然的句子：**", "答：", "回答：",
]
NOTES = ["（过于书面）", "（用词生硬）", "（太正式了）", " —— 太正式了", " - too formal", "（书面语，不像日常说话）"]
REASONS = [
    "原因：这句话太书面了，日常说话一般不会这么说。", "解释：用词过于正式，不像口语。", "理由：语气生硬，不像真人说话。",
    "这句话过于书面化，日常对话中很少这样说。", "该句用词生硬，不符合日常口语习惯。", "Reason: too formal for everyday speech.",
    "说明：这种说法太正式。", "（这句话太正式了）",
]
# reason lines that quote part of the sentence: characters shared with a gold sentence
QUOTING_REASONS = ["原因：“{part}”这种说法太书面。", "解释：“{part}”不像日常口语。", "理由：其中“{part}”用词太正式。"]
NONE_COMMENTS = ["其余句子都很自然。", "其他句子都符合人类说话习惯。", "除此之外，对话都很自然。", "The rest sound natural."]
NONE_ANSWERS = [
    "无", "无。", "没有", "没有。", "没有不自然的句子。", "没有发现不自然的句子。", "以上对话中没有不自然的句子。",
    "以上对话中的句子都符合人类说话习惯。", "所有句子都符合人类的说话习惯，不需要修改。", "不需要修改。", "都不需要修改。",
    "这段对话中的句子都符合人类说话习惯，没有不自然的句子。", "没有不符合人类说话习惯的句子。", "对话整体很自然，没有需要修改的地方。",
    "上文中没有不符合人类说话习惯的句子。", "这段对话很自然。", "都挺自然的。", "答：无", "不自然的句子：无", "**无**",
    "None", "None.", "No unnatural sentences.", "There are no unnatural sentences in this dialogue.",
    "All sentences conform to human speech patterns.", "All sentences sound natural.", "I didn't find any unnatural sentences.",
    "经过检查，上文的句子都符合人类说话习惯。", "上述对话均符合人类的说话习惯，无需修改。", "无需修改。",
]
JSON_NONE = ['{"unnatural_sentences": []}', '```json\n{"unnatural_sentences": []}\n```', "[]", '{"sentences": []}']
REFUSALS = [
    "抱歉，我无法判断哪些句子不自然。", "抱歉，我无法判断。", "对不起，我无法确定哪些句子不符合人类说话习惯。",
    "很抱歉，作为一个AI，我无法判断句子是否自然。", "这个问题我无法回答。", "我无法判断这段对话中哪些句子不自然，因为缺少更多的语境。",
    "I can't tell.", "I can't tell which sentences are unnatural.", "I'm sorry, but I cannot determine which sentences are unnatural.",
    "Sorry, I am unable to judge this.", "抱歉，我不能确定。", "很难判断。",
]
HEDGES = ["我不太确定，但以下句子可能不自然：", "很难说，不过这句可能不太自然：", "I'm not sure, but this one may be unnatural:"]
OTHER_SENTENCES = ["我觉得这个价格很合理。", "今天天气真好。", "我们下次再聊吧。", "这件事以后再说。", "你说得对。"]
# a rewrite the model suggests after the sentence: not a prediction ({rewrite}: the dialogue's final text)
REWRITES = ["建议改为：{rewrite}", "改写：{rewrite}", "可以改成：{rewrite}", "Rewrite: {rewrite}", "修改为：{rewrite}"]
ROLE_LABELS = ["甲：", "乙：", "说话人1：", "顾客：", "第一个人：", "Speaker A: "]
ENGLISH_ONE = ["The unnatural sentence is: “{s}”.", "I think the unnatural sentence is \"{s}\".", "Unnatural: {s}"]
MARKERS = ["{i}. ", "{i}、", "{i}) ", "（{i}）", "{i}.", "第{i}句：", "Sentence {i}: "]
BULLETS = ["- ", "* ", "• "]
QUOTES = [("“", "”"), ("「", "」"), ('"', '"')]
TWO_ON_A_LINE = ["；", " / ", "、", " | "]


def dialogues() -> list[dict[str, Any]]:
    """The sample's identify_unnatural rows (every split), with each gold sentence's span."""
    sys.path.insert(0, str(ROOT))
    from convbench_datasets.nico.builder import SAMPLE
    from convbench_datasets.nico.format import read_dialogues
    from convbench_datasets.nico.tasks import identify_unnatural

    rows = []
    for dialogue in read_dialogues(SAMPLE):
        (row,) = identify_unnatural(dialogue)
        turns = [t["text"] for t in row["dialogue"]]
        gold = []
        for sentence in row["unnatural_sentences"]:
            turn = next(i for i, text in enumerate(turns) if sentence in text)
            start = turns[turn].index(sentence)
            gold.append((turn, start, start + len(sentence)))
        speakers = list(dict.fromkeys(t["speaker"] for t in row["dialogue"]))
        rows.append({"dialogue_id": row["dialogue_id"], "turns": turns, "gold": gold,
                     "final": [u["text"] for u in dialogue["utterances"]],
                     "speakers": [speakers.index(t["speaker"]) for t in row["dialogue"]]})
    return rows


def clauses(text: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in CLAUSE.finditer(text)]


class Composer:
    """Composes one answer at a time for one dialogue; each method returns (answer, careful reading, style)."""

    def __init__(self, rng: random.Random, row: dict[str, Any]) -> None:
        self.rng, self.row, self.turns = rng, row, row["turns"]

    # --- spans

    def text(self, span: tuple[int, int, int]) -> str:
        turn, start, end = span
        return self.turns[turn][start:end]

    def non_gold_spans(self) -> list[tuple[int, int, int]]:
        """Whole turns and single clauses of four characters or more that overlap no gold sentence."""
        out = []
        for turn, text in enumerate(self.turns):
            candidates = [(turn, 0, len(text))] + [(turn, s, e) for s, e in clauses(text)]
            for span in dict.fromkeys(candidates):
                if len(text[span[1]:span[2]].rstrip(END_PUNCTUATION)) < 4:
                    continue
                if not any(g[0] == turn and not (span[2] <= g[1] or g[2] <= span[1]) for g in self.row["gold"]):
                    out.append(span)
        return out

    def around(self, gold: tuple[int, int, int]) -> list[tuple[int, int, int]]:
        """Longer stretches of the gold sentence's turn that contain it, in whole clauses."""
        turn, start, end = gold
        pieces = clauses(self.turns[turn])
        out = []
        for i, (s, _) in enumerate(pieces):
            for _, e in pieces[i:]:
                if s <= start and end <= e and (s, e) != (start, end):
                    out.append((turn, s, e))
        return out

    # --- how one sentence is written

    def near_copy(self, text: str) -> str:
        """The sentence with one small edit: a character dropped, replaced or added (never the first)."""
        core = text.rstrip(END_PUNCTUATION)
        positions = [i for i in range(1, len(core)) if not core[i] in END_PUNCTUATION]
        i = self.rng.choice(positions)
        edit = self.rng.choice(["drop", "replace", "insert"])
        if edit == "drop":
            core = core[:i] + core[i + 1:]
        elif edit == "replace":
            core = core[:i] + self.rng.choice("这那个了的很也都") + core[i + 1:]
        else:
            core = core[:i] + self.rng.choice("了的啊就") + core[i:]
        return core + text[len(text.rstrip(END_PUNCTUATION)):]

    def written(self, text: str, turn: int | None, style: set[str]) -> str:
        """One item as a model writes it: trailing punctuation kept or dropped, quotes, speaker label."""
        rng = self.rng
        if rng.random() < 0.25:
            text = text.rstrip(END_PUNCTUATION)
        if "quoted" in style:
            opening, closing = QUOTES[rng.randrange(len(QUOTES))]
            text = f"{opening}{text}{closing}"
        if "speaker" in style and turn is not None:
            letter = "AB"[self.row["speakers"][turn] % 2]
            text = rng.choice([f"Character{letter}: ", f"{letter}：", f"Character{letter}说：", f"{letter}: "]) + text
        elif "role" in style:
            text = rng.choice(ROLE_LABELS) + text
        if "bold" in style:
            text = f"**{text}**"
        return text

    # --- whole answers

    def sentences(self, named: list[tuple[int, int, int]], others: list[str], style: set[str],
                  copies: dict[int, str] | None = None) -> str:
        """An answer listing the named spans (and the other sentences), in the style asked."""
        rng = self.rng
        items = [(copies or {}).get(k, self.text(span)) for k, span in enumerate(named)] + others
        turns = [span[0] for span in named] + [None] * len(others)
        order = list(range(len(items)))
        if "json" in style:
            return self.json_list([items[k] for k in order])
        if "english" in style and len(items) == 1:
            return rng.choice(ENGLISH_ONE).format(s=items[0])
        if "inline" in style:
            opening, closing = QUOTES[rng.randrange(len(QUOTES))]
            joiner = rng.choice(["、", "和", "，", ", ", " "])
            return joiner.join(f"{opening}{items[k]}{closing}" for k in order)
        lines = []
        marker = rng.choice(MARKERS)
        bullet = rng.choice(BULLETS)
        for position, k in enumerate(order, start=1):
            line = self.written(items[k], turns[k], style)
            if "numbered" in style:
                line = marker.format(i=position) + line
            elif "bulleted" in style:
                line = bullet + line
            if "notes" in style:
                line += rng.choice(NOTES)
            if "rewrites" in style and rng.random() < 0.3:
                line += " → " + self.rewrite(turns[k])
            lines.append(line)
            if "rewrites" in style and not line.count(" → "):
                lines.append(rng.choice(REWRITES).format(rewrite=self.rewrite(turns[k])))
            if "reasons" in style:
                if k < len(named) and rng.random() < 0.5:
                    words = items[k].rstrip(END_PUNCTUATION)
                    part = words[: max(2, len(words) // 2)]
                    lines.append(rng.choice(QUOTING_REASONS).format(part=part))
                else:
                    lines.append(rng.choice(REASONS))
        if "preamble" in style:
            lines.insert(0, rng.choice(PREAMBLES))
        if "none-comment" in style:
            lines.append(rng.choice(NONE_COMMENTS))
        return rng.choice(["\n\n", "\n"]).join(lines)

    def rewrite(self, turn: int | None) -> str:
        """A rewrite a model might suggest: the dialogue's final text of that turn, or a general one."""
        final = self.row["final"][turn] if turn is not None else ""
        return final if final and final != self.turns[turn] else "这样说更自然一些。"  # type: ignore[index]

    def json_list(self, items: list[str]) -> str:
        rng = self.rng
        form = rng.randrange(4)
        if form == 0:
            value: Any = {"unnatural_sentences": items}
        elif form == 1:
            value = items
        elif form == 2:
            value = {"unnatural_sentences": [{"sentence": s, "reason": rng.choice(["过于书面", "too formal"])} for s in items]}
        else:
            value = {"result": items, "count": len(items)}
        text = json.dumps(value, ensure_ascii=False, indent=rng.choice([None, 2]))
        return f"```json\n{text}\n```" if rng.random() < 0.5 else text

    def compose(self) -> tuple[str, dict[str, Any], list[str]]:
        rng, gold = self.rng, self.row["gold"]
        non_gold = self.non_gold_spans()
        kinds = ["none"] * 26 + ["fp"] * 14 + ["refusal"] * 6 + ["blank"] * 1 + ["cut-off"] * 2 + ["all-turns"] * 1 \
            + ["other"] * 3 + ["hedged"] * 2
        if gold:
            kinds += ["gold"] * 24 + ["gold+fp"] * 10 + ["around"] * 14 + ["near-copy"] * 8 + ["two-on-a-line"] * 4
        kind = rng.choice(kinds)
        if kind == "none":
            if rng.random() < 0.15:
                return rng.choice(JSON_NONE), {"answer": "none"}, ["none", "json"]
            return rng.choice(NONE_ANSWERS), {"answer": "none"}, ["none"]
        if kind == "refusal":
            return rng.choice(REFUSALS), {"answer": "refusal"}, ["refusal"]
        if kind == "blank":
            return rng.choice(["", " ", "\n"]), {"answer": "blank"}, ["blank"]
        if kind == "cut-off":
            return rng.choice(PREAMBLES[:8]), {"answer": "unanswered"}, ["cut-off"]
        style = self.style()
        named: list[tuple[int, int, int]] = []
        others: list[str] = []
        copies: dict[int, str] = {}
        if kind == "all-turns":
            named = [(t, 0, len(text)) for t, text in enumerate(self.turns)]
            style -= {"json", "inline"}
        elif kind == "fp":
            named = rng.sample(non_gold, rng.choice([1, 1, 1, 2, 2, 3]))
        elif kind == "other":
            others = rng.sample(OTHER_SENTENCES, 1)
            named = [gold[0]] if gold and rng.random() < 0.5 else []
        elif kind == "gold":
            named = list(gold)
        elif kind == "gold+fp":
            named = list(gold) + rng.sample(non_gold, rng.choice([1, 1, 2]))
            rng.shuffle(named)
        elif kind == "around":
            choices = self.around(gold[0])
            if not choices:  # the gold sentence is its whole turn: quoting the turn is quoting it
                kind, choices = "gold", [gold[0]]
            named = [rng.choice(choices)]
        elif kind == "near-copy":
            target = gold[0] if rng.random() < 0.75 else rng.choice([s for s in non_gold if s[2] - s[1] >= 7] or [gold[0]])
            named = [target]
            copies[0] = self.near_copy(self.text(target))
            style -= {"json"}
        elif kind == "two-on-a-line":
            return self.two_on_a_line(gold[0], non_gold)
        elif kind == "hedged":
            named = list(gold) if gold else rng.sample(non_gold, 1)
            answer = rng.choice(HEDGES) + "\n" + self.sentences(named, [], style - {"preamble", "json", "inline"})
            return answer, self.reading(named, []), ["hedged", *sorted(style - {"preamble", "json", "inline"})]
        answer = self.sentences(named, others, style, copies)
        return answer, self.reading(named, others), [kind, *sorted(style)]

    def two_on_a_line(self, gold: tuple[int, int, int], non_gold: list[tuple[int, int, int]]) -> tuple[str, dict[str, Any], list[str]]:
        """The gold sentence and another sentence of the dialogue on one line, with a separator between
        them that the dialogue does not have there (or each quoted): two predictions."""
        rng = self.rng
        same_turn = [s for s in non_gold if s[0] == gold[0] and s[2] - s[1] < len(self.turns[gold[0]])]
        other = rng.choice(same_turn or non_gold)
        pair = [gold, other] if rng.random() < 0.5 else [other, gold]
        texts = [self.text(s).rstrip(END_PUNCTUATION) for s in pair]
        if rng.random() < 0.5:
            line = rng.choice(TWO_ON_A_LINE).join(texts)
        else:
            line = rng.choice(["、", "和", " "]).join(f"“{t}”" for t in texts)
        answer = f"{rng.choice(PREAMBLES)}\n{line}" if rng.random() < 0.3 else line
        return answer, self.reading(pair, []), ["two-on-a-line"]

    def style(self) -> set[str]:
        rng = self.rng
        layout = rng.choice(["plain"] * 5 + ["numbered"] * 5 + ["bulleted"] * 2 + ["json"] * 2 + ["inline"] * 1
                            + ["english"] * 1)
        style = {layout}
        if layout in ("plain", "numbered", "bulleted", "english"):
            for decoration, chance in (("quoted", 0.35), ("speaker", 0.2), ("role", 0.08), ("bold", 0.08),
                                       ("preamble", 0.45), ("notes", 0.2), ("reasons", 0.2), ("rewrites", 0.12),
                                       ("none-comment", 0.15)):
                if rng.random() < chance:
                    style.add(decoration)
        return style

    def reading(self, named: list[tuple[int, int, int]], others: list[str]) -> dict[str, Any]:
        spans = [list(span) for span in dict.fromkeys(named)]
        return {"answer": "sentences", "named": spans, "other": len(others)}


def compose_all() -> list[dict[str, Any]]:
    rng = random.Random(SEED)
    records = []
    for row in dialogues():
        composer = Composer(rng, row)
        seen: set[str] = set()
        while len([r for r in records if r["dialogue_id"] == row["dialogue_id"]]) < PER_DIALOGUE:
            answer, careful, style = composer.compose()
            if answer in seen and careful["answer"] == "sentences":
                continue  # repeats of plain "none" and refusals are realistic; repeated lists add nothing
            seen.add(answer)
            records.append({"id": len(records), "dialogue_id": row["dialogue_id"], "style": style, "answer": answer,
                            "careful": careful})
    return records


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else OUT  # another path: to compare with the committed file
    records = compose_all()
    out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    print(f"wrote {len(records)} answers to {out}")


if __name__ == "__main__":
    main()
