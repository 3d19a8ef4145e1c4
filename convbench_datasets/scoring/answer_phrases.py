"""The phrase lists and patterns that read a model's answer to NICO's identify-unnatural task.

Data only: ``unnatural_answer`` applies them. They are convbench's (the NICO paper gives no parsing
rules) and are documented in metrics/unnatural_sentence_prf/README.md. Chinese patterns are matched
against ``normalise()``d text (casefolded, no whitespace, punctuation or symbols); English patterns
against lower-cased words separated by single spaces, with "n't" spelled " not".
"""

from __future__ import annotations

# A line that is exactly one of these (after normalise()) says "there are none". In an answer that
# also names sentences, such a line is read as a quoted sentence (a dialogue can say "没有。").
NONE_WORDS: tuple[str, ...] = (
    "无", "没有", "没有了", "没", "不存在", "暂无", "均无", "都没有", "全无", "并无", "无此类句子", "空",
    "none", "no", "nothing", "n/a", "nil", "nonefound", "noneidentified", "noneofthem", "thereisnone", "therearenone",
)

# Chinese: a negation shortly before a word for "unnatural" ("没有发现不自然的句子", "不存在生硬的表达").
# "问题" is deliberately absent: "没问题。" is an everyday dialogue sentence.
ZH_NEGATIONS = r"没有|没|无|不存在|并无|并没有|未|找不到|不含|不包含|不包括|不涉及"
ZH_UNNATURAL = r"不自然|不太自然|不够自然|不通顺|不流畅|生硬|别扭|不地道|不口语|书面化|过于书面|需要修改|需要改写|需要调整"
# "自然" as in natural speech, not 顺其自然 / 大自然 / 自然景观
ZH_NATURAL = r"(?<![其大])自然(?![景界科环风光资灾])|口语化|通顺|流畅|地道"
ZH_SUBJECT = r"句|对话|表达|用语|说法|语言|地方"  # what a statement about the answer talks about
ZH_NEGATIVE: tuple[str, ...] = (
    rf"(?:{ZH_NEGATIONS}).{{0,15}}?(?:{ZH_UNNATURAL})",
    # "都很自然", "所有句子都比较口语化", "整体自然流畅": everything natural, with no 不 in between; about
    # sentences or dialogue, or too short to be anything else ("我们都说得很流畅" is a dialogue sentence)
    rf"^(?:(?=.*(?:{ZH_SUBJECT}))|(?=.{{1,6}}$)).*?"
    rf"(?:都|均|全|全部|皆|每句|每一句|每个句子|整体|整段|整个|通篇|所有|一切)[^不]{{0,8}}?(?:{ZH_NATURAL})",
    # "这段对话很自然", "句子读起来都挺通顺"
    rf"(?:对话|句子|语句|表达|用语|说法)[^不]{{0,8}}?(?:{ZH_NATURAL})",
)
EN_UNNATURAL = r"unnatural|awkward|unidiomatic|stilted|unnatural sounding"
EN_NEGATIVE: tuple[str, ...] = (
    # gaps are bounded: an unbounded ".*" after each of thousands of "no"s in one line is quadratic
    rf"\b(?:no|none|not any|nothing)\b.{{0,80}}?\b(?:{EN_UNNATURAL})\b",
    rf"\b(?:not|never|cannot)\b.{{0,80}}?\b(?:{EN_UNNATURAL})\b",  # "I did not find any unnatural sentence"
    r"^(?:(?!\bnot\b).)*\b(?:natural|fluent|idiomatic|colloquial)\b(?:(?!\bnot\b).)*$",  # "All sentences sound natural."
    r"^(?:there (?:is|are) )?none(?: (?:found|identified|detected|of them|at all))?$",
    r"\bno\b (?:such )?(?:sentences?|lines?)\b",  # not "no problem": a dialogue sentence
)

# Preambles and commentary are not predictions: a line that names unnatural sentences without
# quoting one ("以下是不自然的句子", "The unnatural sentences are"), a bare label, an introduction.
ZH_PREAMBLE: tuple[str, ...] = (
    # names unnatural sentences, and is shaped like an introduction ("对话中不自然的句子有", "不自然的句子如下")
    r"^(?=.*(?:不自然|不够自然|不太自然|生硬|不通顺))(?=.*(?:句|表达|地方|说法))"
    r"(?:(?:以下|下面|如下|下列|这段对话|该对话|对话|在|经过|我|其中|找到|发现|不自然|生硬).{0,28}"
    r"|.{0,28}(?:如下|有|是|为|包括|如下所示|几句|句子|这些|表达|地方))$",
    r"^(?:以下|下面|如下|下列)(?:是|为)?.{0,12}(?:回答|答案|结果|分析|句子)",
)
EN_PREAMBLE: tuple[str, ...] = (
    rf"\b(?:{EN_UNNATURAL})\b.{{0,80}}?\b(?:sentences?|lines?|phrases?|expressions?|ones)\b",
    rf"\b(?:sentences?|lines?|phrases?|expressions?)\b.{{0,80}}?\b(?:{EN_UNNATURAL})\b",
    r"^(?:here (?:is|are)|below|the following)\b.*\b(?:answer|sentences?|results?|list)\b",
)
LABELS: tuple[str, ...] = ("答案", "回答", "答", "结果", "输出", "结论", "answer", "output", "result", "results")

# "LABEL：rest" on one line: a label naming the answer is dropped and the rest read ("不自然的句子：…",
# "答：无", "Answer: None"); a commentary label drops the whole line ("注：…", "Explanation: …").
ANSWER_LABEL = r"不自然|句子|答案|回答|^答$|结果|输出|结论|^第.{1,3}句$|unnatural|sentence|answer|output|result"
COMMENTARY_LABEL = r"^(?:注|备注|说明|解释|理由|原因|分析|note|notes|explanation|reason|analysis)$"
