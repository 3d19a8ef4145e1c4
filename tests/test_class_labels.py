"""Closed label sets are ClassLabel columns (convbench_datasets.class_labels): their names come from the
benchmarks' tables, a notebook can stratify on them, and the metrics give the same numbers for the ids a
loaded dataset holds as for the names."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from convbench_datasets.class_labels import coder_of, encode_rows
from convbench_datasets.errors import DataFormatError

PACKAGE = Path(__file__).resolve().parents[1] / "convbench_datasets"


def _yaml(relative: str) -> Any:
    return yaml.safe_load((PACKAGE / relative).read_text(encoding="utf-8"))


def test_nc_names_are_the_pattern_tables() -> None:
    # read from patterns.yaml here, apart from the table's code: names in the table's order, each once
    from convbench_datasets.nc.schema import features

    raw = _yaml("nc/patterns.yaml")
    f = features()
    assert f["set"].names == list(raw["sets"]) == ["basic", "rag", "complex_request"]
    assert f["pattern"].names == list(dict.fromkeys(t["pattern"] for t in raw["tasks"]))
    assert f["task"].names == list(dict.fromkeys(t["task"] for t in raw["tasks"]))
    assert len(f["pattern"].names) == 15  # the paper's tables: 15 pattern names across the three sets


def test_nico_and_cocoeval_names_are_their_tables() -> None:
    from convbench_datasets.cocoeval.schema import features as cocoeval_features
    from convbench_datasets.nico.schema import features as nico_features

    raw = _yaml("nico/interaction_types.yaml")
    f = nico_features("dialogs")
    assert f["interaction_type"].names == ["exchange", "cooperation", "conformity", "coercion", "conflict"] == list(raw)
    assert f["interaction_type_zh"].names == [v["zh"] for v in raw.values()]
    assert f["utterances"].feature["edits"].feature["kind"].names == ["unnatural", "ungrammatical"]
    assert cocoeval_features()["source"].names == ["qmsum_product", "qmsum_academic", "qmsum_committee", "iq2",
                                                   "sim", "ncpc"]


def test_a_notebook_stratifies_on_pattern(nc_built: Path) -> None:
    import datasets

    ds = datasets.load_dataset(str(nc_built), "basic", split="test")
    halves = ds.train_test_split(test_size=0.5, stratify_by_column="pattern", seed=0)
    whole = Counter(ds["pattern"])
    for half in halves.values():
        counts = Counter(half["pattern"])
        assert counts.keys() == whole.keys()
        assert all(abs(2 * counts[p] - whole[p]) <= 1 for p in whole)  # each pattern split in half, give or take a row


def test_ncbench_action_gives_the_same_numbers_for_ids_and_names(nc_built: Path) -> None:
    import datasets

    from convbench_datasets.nc.ncbench_action import score_actions

    ds = datasets.load_dataset(str(nc_built), "all", split="test")
    # every third row answered with an acceptable label, the others with a label that passes nowhere
    predictions = [refs[0] if i % 3 == 0 else "Nonsense" for i, refs in enumerate(ds["acceptable_labels"])]
    names = {c: ds.features[c].int2str(ds[c]) for c in ("pattern", "set", "task")}
    by_ids = score_actions(predictions, ds["acceptable_labels"], patterns=ds["pattern"], sets=ds["set"],
                           tasks=ds["task"])
    by_names = score_actions(predictions, ds["acceptable_labels"], patterns=names["pattern"], sets=names["set"],
                             tasks=names["task"])
    assert by_ids == by_names
    assert by_ids["passed"] == 240  # 720 rows, rows 0, 3, 6...: a third pass
    assert set(by_ids["per_set"]) == {"basic", "rag", "complex_request"}
    assert set(by_ids["per_pattern"]) == set(names["pattern"])


def test_nico_generation_and_behavior_frequency_read_ids_as_names() -> None:
    from convbench_datasets.cocoeval.behavior_frequency import score_frequencies
    from convbench_datasets.nico.nico_generation import score_generation

    predictions, references = ["今天天气很好", "我们走吧"], ["今天天气不错", "走吧"]
    ids = score_generation(predictions, references, interaction_types=[4, 0], workers=1)
    named = score_generation(predictions, references, interaction_types=["conflict", "exchange"], workers=1)
    assert ids == named and list(ids["per_interaction_type"]) == ["conflict", "exchange"]
    model, human = [["Repetition"], []], [[], ["Repetition"]]
    by_ids = score_frequencies(model, human, sources=[3, 0], n_bootstrap=0)
    by_names = score_frequencies(model, human, sources=["iq2", "qmsum_product"], n_bootstrap=0)
    assert by_ids == by_names and {"iq2", "qmsum_product"} <= set(by_ids["per_source"])


def test_a_build_refuses_a_name_outside_the_set_naming_row_and_field() -> None:
    from convbench_datasets.nico.schema import features

    coder = coder_of(features("dialogs")._to_yaml_list())
    row = {"interaction_type": "exchange", "interaction_type_zh": "交换",
           "utterances": [{"edits": [{"kind": "unnatural"}]}, {"edits": [{"kind": "typo"}]}]}
    assert encode_rows([{**row, "utterances": row["utterances"][:1]}], coder, "dialogs/train") == [
        {"interaction_type": 0, "interaction_type_zh": 0, "utterances": [{"edits": [{"kind": 0}]}]}]
    with pytest.raises(DataFormatError, match=r"^dialogs/train: row 0: field 'utterances\[1\].edits\[0\].kind' must be "
                                              r"one of unnatural, ungrammatical, got 'typo'$"):
        encode_rows([row], coder, "dialogs/train")


def test_prompts_take_a_datasets_row_as_it_is(nc_built: Path, nico_built: Path) -> None:
    # a notebook passes rows of a datasets split (class ids) to the prompt builders: the same messages as
    # for the rows a run reads (names)
    import datasets

    from convbench_datasets.built_rows import read_rows
    from convbench_datasets.nc.judge_prompt import judge_messages
    from convbench_datasets.nico.prompts import render_prompt

    loaded = datasets.load_dataset(str(nc_built), "rag", split="test")[0]
    assert isinstance(loaded["set"], int)
    named = read_rows(nc_built, "rag", "test")[0]
    assert judge_messages(loaded, "Sure.", sources=None) == judge_messages(named, "Sure.", sources=None)
    example = datasets.load_dataset(str(nico_built), "dialog_completion", split="test")[0]
    assert isinstance(example["interaction_type_zh"], int)
    named_example = read_rows(nico_built, "dialog_completion", "test")[0]
    prompt = render_prompt("dialog_completion", example)
    assert prompt == render_prompt("dialog_completion", named_example)
    assert named_example["interaction_type_zh"] in prompt  # the Chinese name, as the paper's prompt quotes it


def test_names_take_their_ids_in_numeric_order_not_string_order() -> None:
    # eleven names numbered "0".."10" in the card's YAML, listed out of order: as strings "10" < "2", as ids
    # 2 < 10. By hand: id k is the k-th letter, so id 2 is "c" and id 10 is "k", both ways.
    from convbench_datasets.class_labels import decode_rows

    letters = "abcdefghijk"
    numbered = {str(k): letters[k] for k in (10, 2, 0, 1, 9, 3, 4, 5, 6, 7, 8)}
    coder = coder_of([{"name": "kind", "dtype": {"class_label": {"names": numbered}}}])
    assert coder == {"kind": tuple(letters)}
    assert decode_rows([{"kind": 2}, {"kind": 10}], coder, "x.parquet") == [{"kind": "c"}, {"kind": "k"}]
    assert encode_rows([{"kind": "c"}, {"kind": "k"}], coder, "x/test") == [{"kind": 2}, {"kind": 10}]
    # NC-Bench's 15 patterns (ids 0-14) as a build's card numbers them: the coder a build is read with keeps
    # the features' order (datasets' own ClassLabel names, checked against patterns.yaml above)
    from convbench_datasets.nc.schema import features

    f = features()
    assert coder_of(f._to_yaml_list())["pattern"] == tuple(f["pattern"].names)


@pytest.mark.parametrize("value", [-1, -3, 3, True, "1"])
def test_a_decoded_id_outside_the_names_is_refused(value: Any) -> None:
    # three names: ids 0-2 only; -1 is no class (Python's names[-1] would quietly be the last name)
    from convbench_datasets.class_labels import decode_rows

    coder = {"kind": ("greeting", "farewell", "thanks")}
    with pytest.raises(DataFormatError, match=r"^x\.parquet: row 0: field 'kind' must be a class id of its 3 names "
                                              r"\(0-2\), got "):
        decode_rows([{"kind": value}], coder, "x.parquet")


def test_decoded_and_encoded_rows_share_no_dict_with_the_callers() -> None:
    # decode_rows replaces each field of the rows it is given (documented: in place) with a new value, so a
    # struct the caller holds is left as it was; encode_rows and named_fields return copies, the input untouched
    from convbench_datasets.class_labels import decode_rows

    coder = {"kind": ("greeting", "farewell"), "edit": {"kind": ("greeting", "farewell")}}
    edit = {"kind": 1, "note": "x"}
    decoded = decode_rows([{"kind": 0, "edit": edit}], coder, "x.parquet")
    assert decoded == [{"kind": "greeting", "edit": {"kind": "farewell", "note": "x"}}]
    decoded[0]["edit"]["note"] = "changed"
    assert edit == {"kind": 1, "note": "x"}
    named = {"kind": "farewell", "edit": {"kind": "greeting", "note": "y"}}
    encoded = encode_rows([named], coder, "x/test")
    assert encoded == [{"kind": 1, "edit": {"kind": 0, "note": "y"}}]
    encoded[0]["kind"], encoded[0]["edit"]["note"] = 0, "changed"
    assert named == {"kind": "farewell", "edit": {"kind": "greeting", "note": "y"}}
    # named_fields: a row holding an id comes back as a new row, the caller's keeps its id
    from convbench_datasets.class_labels import named_fields

    given = {"id": 3, "set": 1}
    assert named_fields(given, ["set"], lambda field: ("basic", "rag")) == {"id": 3, "set": "rag"}
    assert given == {"id": 3, "set": 1}
