"""The `released` judge prompt against the released pipeline itself.

The reference is the upstream ``generate_judge_prompts`` from the mirrored ``utils.py`` (the test loads
it as a reference implementation; nothing of it is committed): for every one of the 720 rows and
several kinds of model output, convbench's messages must equal the released function's, byte for byte.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from convbench_datasets.errors import ConvbenchError
from convbench_datasets.nc.released_prompt import read_released_prompt, released_prompt, string_constants

OUTPUTS = {
    "one line": "Sure, the bakery opens at 8.",
    "several lines": "Our hours are 8 to 5.\nAnything else?\n(Note: I guessed.)",
    "leading newline": "\nThe first line is empty, so the judge sees an empty turn.",
    "empty": "",
    "spaces": "   padded answer   \n second",
    "placeholder-like": "Line <prior_turn> and <request_details> stay as written?",
}


def _reference(utils: Path):
    spec = importlib.util.spec_from_file_location("released_utils_reference", utils)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.generate_judge_prompts


@pytest.mark.parametrize("kind", list(OUTPUTS))
def test_messages_equal_the_released_function_on_every_row(kind, nc_sources, nc_rows, tmp_path):
    generate = _reference(nc_sources / "nc-bench" / "utils.py")
    prompt = released_prompt(nc_sources)
    rows = [row for rows in nc_rows.values() for row in rows]
    assert len(rows) == 720
    output = OUTPUTS[kind]
    for set_name, filename in (("basic", "conversation_competence.jsonl"), ("rag", "conversation_competence_rag.jsonl"),
                               ("complex_request", "conversation_competence_open_request.jsonl")):
        ours = [r for r in rows if r["set"] == set_name]
        # The released script reads a generation file holding id, task and output (never request_details).
        generations = tmp_path / f"{set_name}-{len(kind)}.jsonl"
        generations.write_text("".join(json.dumps({"id": r["id"], "task": r["task"], "output": output}) + "\n"
                                       for r in ours), encoding="utf-8")
        expected = {e["id"]: e["chat_prompt"] for e in generate(str(nc_sources / "nc-bench" / filename), str(generations))}
        assert len(expected) == len(ours)
        for row in ours:
            assert prompt.render(row, output) == expected[row["id"]], (set_name, row["id"])


def test_request_details_are_empty_unless_asked(nc_sources, nc_rows):
    prompt = released_prompt(nc_sources)
    row = next(r for r in nc_rows["complex_request"] if r["request_details"]
               and "<request_details>" in prompt.definitions[_block(r)])
    plain = prompt.render(row, "Which size?")[1]["content"]
    filled = prompt.render(row, "Which size?", fill_request_details=True)[1]["content"]
    assert row["request_details"] not in plain
    assert row["request_details"] in filled
    assert filled.replace(row["request_details"], "") == plain


def _block(row):
    from convbench_datasets.nc.patterns import pattern_table

    return pattern_table().entry(row["set"], row["task"]).released_definitions


def test_constants_are_read_without_running_the_file(tmp_path):
    evil = tmp_path / "utils.py"
    marker = tmp_path / "ran"
    evil.write_text(f"open({str(marker)!r}, 'w').write('x')\nsys_prompt = 'S'\njudge_prompt = '''T\\n<labels>'''\n"
                    "def f():\n    inner = 'not module level'\n", encoding="utf-8")
    assert string_constants(evil) == {"sys_prompt": "S", "judge_prompt": "T\n<labels>"}
    assert not marker.exists()
    with pytest.raises(ConvbenchError, match="lacks the string constant"):
        read_released_prompt(evil)


def test_judge_messages_defaults_to_the_released_wording(nc_sources, nc_rows):
    from convbench_datasets.nc.judge_prompt import judge_messages

    row = nc_rows["basic"][0]
    assert judge_messages(row, "Hi.", sources=nc_sources) == released_prompt(nc_sources).render(row, "Hi.")
    assert judge_messages(row, "Hi.", template="convbench")[0]["content"] != released_prompt(nc_sources).system
    with pytest.raises(ConvbenchError, match="first line only"):
        judge_messages(row, "Hi.", first_line_only=False, sources=nc_sources)
    with pytest.raises(ConvbenchError, match="no such file"):
        judge_messages(row, "Hi.", template="relesed")
