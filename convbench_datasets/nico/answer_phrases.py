"""The phrase lists and patterns that read a model's answer to NICO's identify-unnatural task.

Data only: ``unnatural_answer`` applies them. They are convbench's (the NICO paper gives no parsing
rules) and are documented in metrics/unnatural_sentence_prf/README.md. Chinese "none" patterns are
matched against the line's clauses (casefolded, no whitespace or symbols, each run of punctuation one
"|"), preambles against ``normalise()``d text (no punctuation either); English patterns against
lower-cased words separated by single spaces, with "n't" spelled " not". No pattern nests or chains
unbounded quantifiers: each runs in time linear in the line.
"""

from __future__ import annotations

# A line that is exactly one of these (after normalise()) says "there are none", unless it is one of the
# row's gold sentences (a dialogue can say "没有。"): "无", the usual way to answer none (the 3-shot
# demonstrations' too), stays "none" even when some other dialogue sentence reads "无。".
NONE_WORDS: tuple[str, ...] = (
    "无", "没有", "没有了", "没", "不存在", "暂无", "均无", "都没有", "全无", "并无", "无此类句子", "空",
    "none", "no", "nothing", "n/a", "nil", "nonefound", "noneidentified", "noneofthem", "thereisnone", "therearenone",
)

# A statement that there are none must be about the task: it names sentences, the dialogue or its
# wording (ZH_SUBJECT / EN_SUBJECTS anywhere in the line). "没人觉得生硬。", "这个计划需要调整。",
# "It feels natural." are dialogue sentences, not answers.
ZH_SUBJECT = r"句|对话|表达|用语|说法|措辞|用词|语言|地方|之处"
# Chinese patterns read the line in clauses: ``unnatural_answer`` turns punctuation into "|", so a gap
# ``[^|]`` stays inside one clause ("没错，这个说法太生硬了" has no negation before 生硬).
# A negation standing alone: not the first character of 无论 (whatever), 无所谓, 未来 (future), 没事...
ZH_NEGATIONS = (r"没有(?!事)|没(?!事|关系|错|准|想到)|无(?!论|所谓|非|聊|奈|语|数|限)|不存在|并无|并没有"
                r"|未(?!来|必|免|曾)|找不到|不含|不包含|不包括|不涉及")
# Words for unnatural wording. Not 需要调整 / 需要修改: "这个计划需要调整。" is everyday speech. The prompt's
# own words: "不符合人类说话习惯" (does not conform to human speech patterns).
ZH_HABIT = r"(?:人类|人们|人|日常|正常|真人)?的?(?:日常)?(?:说话|讲话|口语|语言|表达)(?:的)?习惯"
ZH_UNNATURAL = rf"不自然|不太自然|不够自然|不通顺|不流畅|生硬|别扭|不地道|不口语|书面化|过于书面|需要改写|不(?:太)?符合{ZH_HABIT}"
# "自然" as in natural speech, not 顺其自然 / 大自然 / 自然景观; "符合人类说话习惯" with no 不 before it
ZH_NATURAL = rf"(?<![其大])自然(?![景界科环风光资灾])|口语化|通顺|流畅|地道|(?<![不太])符合{ZH_HABIT}"
ZH_ALL = r"都|均|全|全部|皆|每句|每一句|每个句子|整体|整段|整个|通篇|所有|一切"
# "不需要修改", "无需修改": nothing to change (with a subject, or alone on a short line)
ZH_NO_CHANGE = r"(?:不需要|无需|无须|不用|不必)(?:再)?(?:作|做|进行)?(?:任何)?(?:修改|改写|改动|修正)"
ZH_NEGATIVE: tuple[str, ...] = (
    # "没有发现不自然的句子", "不存在生硬的表达", "并无不自然之处"
    rf"(?:{ZH_NEGATIONS})[^|]{{0,15}}?(?:{ZH_UNNATURAL})",
    # "没有需要修改的句子": a change the sentences would need, with the sentences named right after it
    rf"(?:{ZH_NEGATIONS})[^|]{{0,4}}?(?:需要|要|必要)[^|]{{0,2}}?(?:修改|调整|改动|改写|修正)的?(?:句|表达|说法|用语|措辞)",
    # "都很自然", "所有句子都比较口语化", "整体自然流畅": everything natural, with no 不 in between
    rf"(?:{ZH_ALL})[^|不]{{0,8}}?(?:{ZH_NATURAL})",
    # "这段对话很自然": the dialogue as a whole (not one 说法: "这个说法很地道。" is a dialogue sentence)
    rf"(?:对话|这段话|全文|通篇|整段)[^|不]{{0,8}}?(?:{ZH_NATURAL})",
    # "都不需要修改", "上述对话无需修改": no change needed, said of the sentences or the dialogue
    rf"(?:{ZH_NO_CHANGE})",
)
# Too short to be about anything else, a line saying everything is natural needs no subject ("都挺自然的。":
# at most ZH_SHORT characters after normalise()).
ZH_SHORT = 6
ZH_SHORT_NEGATIVE = rf"(?:{ZH_ALL})[^|不]{{0,4}}?(?:{ZH_NATURAL})|^(?:{ZH_ALL})?(?:{ZH_NO_CHANGE})\|?$"

EN_UNNATURAL = r"unnatural|awkward|unidiomatic|stilted|unnatural sounding"
EN_NEGATIVE: tuple[str, ...] = (
    # gaps are bounded: an unbounded ".*" after each of thousands of "no"s in one line is quadratic
    rf"\b(?:no|none|not any|nothing)\b.{{0,80}}?\b(?:{EN_UNNATURAL})\b",
    rf"\b(?:not|never|cannot)\b.{{0,80}}?\b(?:{EN_UNNATURAL})\b",  # "I did not find any unnatural sentence"
    r"\bno\b (?:such )?(?:sentences?|lines?)\b",  # not "no problem": a dialogue sentence
)
# the whole line: "None found.", "There are none." (no subject needed)
EN_NONE_LINE = r"^(?:there (?:is|are) )?none(?: (?:found|identified|detected|of them|at all))?$"
EN_SUBJECTS = frozenset({
    "sentence", "sentences", "line", "lines", "phrase", "phrases", "expression", "expressions", "wording",
    "dialogue", "dialog", "conversation", "text", "anything", "nothing", "everything", "none",
})
# "All sentences sound natural.", "The dialogue sounds natural throughout.": a word for natural, no
# negation, and either the dialogue as a whole or sentences with a word for all of them.
EN_NATURAL = frozenset({"natural", "fluent", "idiomatic", "colloquial"})
EN_NEGATION_WORDS = frozenset({"not", "no", "never", "nothing", "none", "cannot"})
EN_WHOLE = frozenset({"dialogue", "dialog", "conversation", "text", "everything", "rest", "others"})
# the prompt's own words: "conform to human speech patterns"
EN_CONFORM = r"\b(?:conform|conforms|consistent|in line)\b.{0,20}?\b(?:human|natural|everyday)\b.{0,10}?\b(?:speech|speaking)\b"
EN_ALL = frozenset({"all", "every", "each", "both", "throughout", "entire", "entirely", "whole"})

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
# Refusals: the model says it cannot tell. An answer that is only this is no answer, not "none" (P = R = 0
# on every dialogue); beside named sentences it is a comment. A line is one when it says it cannot
# judge (ZH_CANNOT / EN_CANNOT) and also apologises, names itself an AI, names the task (sentences,
# the dialogue, "this question"), or is that short (at most REFUSAL_SHORT characters or words): "我不能确定
# 他来不来。" is a sentence a dialogue may hold. Naming itself an AI is enough on its own.
ZH_CANNOT = (r"(?:无法|不能|没法|没有办法|难以|很难|不好)(?:准确|确切|完全)?地?"
             r"(?:判断|确定|判定|回答|识别|分辨|区分|评估|给出|说)")
ZH_APOLOGY = r"^(?:很|非常|十分)?(?:抱歉|对不起|不好意思)"
ZH_AI = r"作为(?:一个|一名)?(?:ai|人工智能|语言模型)"
ZH_REFUSAL_TOPIC = r"句|对话|表达|问题|任务|哪些|哪句|是否"
EN_CANNOT = (r"\b(?:ca not|can not|cannot|could not|unable to|not able to|hard to|impossible to|not sure)\b"
             r".{0,20}?\b(?:tell|determine|judge|decide|identify|say|answer)\b")
EN_APOLOGY = r"^(?:i m |i am )?(?:sorry|apologies)\b"
EN_AI = r"\bas an (?:ai|language model)\b"
EN_REFUSAL_TOPIC = frozenset({"sentence", "sentences", "dialogue", "dialog", "conversation", "text", "question", "which"})
REFUSAL_SHORT = 6

# Comments on a sentence, on a line of their own without a label: "这句话过于书面。", "该句用词生硬。",
# "（这句话太正式了）". They start by pointing at the sentence, and judge its wording.
ZH_COMMENT = (r"^(?:这句话|这句|该句|此句|这种说法|这个说法|这样说|上述句子|这些句子|以上句子|这两句|其中)"
              r".{0,30}?(?:书面|生硬|正式|不自然|不口语|不像|别扭|拗口|不符合|很少这样说|不常用|不地道)")
EN_COMMENT = r"^(?:this|that|the) (?:sentence|phrase|line|wording|one)\b.{0,40}?\b(?:formal|stiff|unnatural|awkward|written)\b"

# JSON answers: the keys whose values are the predicted sentences, and those that hold something else.
JSON_SENTENCE_KEYS = r"sentence|text|original|content|quote|unnatural|句子|原句|原文|内容|不自然"
JSON_OTHER_KEYS = (r"reason|explanation|why|analysis|note|comment|speaker|role|turn|index|id|count|line|number|position"
                   r"|rewrite|suggestion|原因|理由|解释|分析|说明|说话人|角色|序号|编号|改写|建议")

LABELS: tuple[str, ...] = ("答案", "回答", "答", "结果", "输出", "结论", "answer", "output", "result", "results")

# "LABEL：rest" on one line: a label naming the answer is dropped and the rest read ("不自然的句子：…",
# "答：无", "Answer: None", "原句：…"); a commentary label drops the whole line ("注：…", "Explanation: …"),
# unless the whole line is one of the dialogue's sentences.
ANSWER_LABEL = (r"不自然|句子|答案|回答|^答$|结果|输出|结论|^第.{1,3}句$|^原句$|^原文$|unnatural|sentence|answer|output"
                r"|result|^original$")
# A rewrite the model suggests ("建议改为：…", "Rewrite: …") is a comment too: it is not in the dialogue.
COMMENTARY_LABEL = (r"^(?:注|备注|说明|解释|理由|原因|分析|note|notes|explanation|reason|analysis"
                    r"|改写|改写后|改为|改成|建议|建议改为|建议改成|可改为|可以改为|可改成|可以改成|修改为|修改后|应改为"
                    r"|rewrite|rewritten|suggestion|suggested|revised|revision)$")
