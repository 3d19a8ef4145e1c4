"""NC-Bench: the pattern table, the dataset builder, the judge prompt and the judge-output parser.

Example:
    >>> from convbench_datasets import nc
    >>> nc.parse_judge_output("pre-closing").labels
    ('PreClosing',)
"""

from .judge_output import ParsedJudgement, parse_judge_output
from .judge_prompt import JudgeTemplate, judge_messages, load_template, resolve_template
from .patterns import PatternTable, TaskEntry, pattern_table
from .released_prompt import ReleasedPrompt, released_prompt

__all__ = [
    "pattern_table",
    "PatternTable",
    "TaskEntry",
    "judge_messages",
    "load_template",
    "JudgeTemplate",
    "resolve_template",
    "released_prompt",
    "ReleasedPrompt",
    "parse_judge_output",
    "ParsedJudgement",
]
