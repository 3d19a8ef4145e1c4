"""Rows read with pyarrow from a build (convbench_datasets.built_rows) equal datasets' own reading.

The reference is ``datasets.load_dataset(str(folder), config, split=split).to_list()``, what the runners read
before, with each ClassLabel id turned into its name by datasets' own ``ClassLabel.int2str`` (the reader
gives names: convbench_datasets.class_labels): every comparison is strict (``repr`` of the rows equal, so
1 vs 1.0, True vs 1 and key order count).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path
from typing import Any

import pytest

from convbench_datasets.built_rows import (
    NonEmpty,
    RowRules,
    built_folder,
    data_files,
    read_card,
    read_rows,
    shape_problem,
    split_names,
)
from convbench_datasets.errors import ConvbenchError

# Configs and splits as the builds' cards list them (cards/nc, cards/nico; tests/test_hub_export.py,
# tests/nico/test_builder.py and tests/cocoeval/test_build.py check those cards against the papers).
NC_CONFIGS = ["basic", "rag", "complex_request", "all"]
NICO_CONFIGS = ["dialogs", "open_domain", "dialog_completion", "identify_unnatural", "rewrite_unnatural"]


def _reference(folder: Path, config: str) -> Any:
    """datasets' reading of every split of ``config``: a DatasetDict in datasets' split order."""
    import datasets

    datasets.disable_progress_bars()
    return datasets.load_dataset(str(folder), config)


def _names(value: Any, feature: Any) -> Any:
    """``value`` with datasets' ClassLabel ids as names, walking datasets' own feature objects (an
    implementation apart from convbench's, which reads the card's YAML)."""
    import datasets

    if isinstance(feature, datasets.ClassLabel):
        assert isinstance(value, int)  # datasets keeps the ids
        return feature.int2str(value)
    if isinstance(feature, dict):
        return {k: _names(v, feature[k]) for k, v in value.items()}
    if isinstance(feature, datasets.List):
        return [_names(v, feature.feature) for v in value]
    return value


def _with_names(dataset: Any) -> list[dict]:
    return [_names(row, dataset.features) for row in dataset.to_list()]


def _assert_same(ours: list[dict], theirs: list[dict]) -> None:
    assert len(ours) == len(theirs)
    assert ours == theirs
    assert repr(ours) == repr(theirs)  # same types (1 is not 1.0) and the same key order in every row


def _assert_build_reads_like_datasets(folder: Path, config: str) -> list[str]:
    reference = _reference(folder, config)
    assert split_names(folder, config) == list(reference)
    for split in reference:
        _assert_same(read_rows(folder, config, split), _with_names(reference[split]))
    return list(reference)


@pytest.mark.parametrize("config", NC_CONFIGS)
def test_nc_rows_equal_datasets(nc_built: Path, config: str) -> None:
    assert list(read_card(nc_built).configs) == NC_CONFIGS
    assert _assert_build_reads_like_datasets(nc_built, config) == ["test"]


def test_nc_all_is_its_parts_in_card_order(nc_built: Path) -> None:
    # cards/nc: "all" lists basic, rag, complex_request in that order (180 + 180 + 360 rows)
    assert [r["set"] for r in read_rows(nc_built, "all", "test")] == ["basic"] * 180 + ["rag"] * 180 + ["complex_request"] * 360


@pytest.mark.parametrize("config", NICO_CONFIGS)
def test_nico_sample_rows_equal_datasets(nico_built: Path, config: str) -> None:
    assert list(read_card(nico_built).configs) == NICO_CONFIGS
    assert _assert_build_reads_like_datasets(nico_built, config) == ["train", "validation", "test"]


@pytest.mark.slow
def test_cocoeval_rows_equal_datasets(cocoeval_built: Path) -> None:
    configs = list(read_card(cocoeval_built).configs)
    assert "all" in configs and len(configs) > 1
    for config in configs:
        assert _assert_build_reads_like_datasets(cocoeval_built, config)


def test_reading_a_build_does_not_import_datasets(nc_built: Path) -> None:
    # Both routes a run takes: the folder given (--dataset) and the build load() keeps in the convbench cache.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "building NICO from convbench's 20-dialogue sample"
        cached = built_folder("nico")  # builds the bundled sample into $CONVBENCH_CACHE if missing (imports datasets here)
    code = textwrap.dedent(f"""
        import sys
        from convbench_datasets.built_rows import built_folder, read_rows, split_names
        given = built_folder("nc", dataset={str(nc_built)!r})
        assert len(read_rows(given, "all", "test")) == 720
        cached = built_folder("nico")
        assert str(cached) == {str(cached)!r}, cached
        assert sum(len(read_rows(cached, "dialogs", s)) for s in split_names(cached, "dialogs")) == 20
        print(sorted(m for m in ("datasets", "torch", "transformers", "evaluate") if m in sys.modules))
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ.copy())
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


# --- errors name what exists ---------------------------------------------------------------------------------

def test_unknown_config_names_the_configs(nc_built: Path) -> None:
    with pytest.raises(ConvbenchError, match=r"has no config 'basics'; its configs: basic, rag, complex_request, all$"):
        read_rows(nc_built, "basics", "test")
    with pytest.raises(ConvbenchError, match="its configs: basic, rag, complex_request, all"):
        split_names(nc_built, "basics")


def test_unknown_split_names_the_splits(nc_built: Path, nico_built: Path) -> None:
    with pytest.raises(ConvbenchError, match=r"config 'basic' has no split 'train'; its splits with data: test$"):
        read_rows(nc_built, "basic", "train")
    with pytest.raises(ConvbenchError, match=r"no split 'dev'; its splits with data: train, validation, test$"):
        read_rows(nico_built, "dialogs", "dev")


def test_a_folder_that_is_not_a_build(tmp_path: Path) -> None:
    with pytest.raises(ConvbenchError, match="missing does not exist"):
        built_folder("nc", dataset=tmp_path / "missing")
    with pytest.raises(ConvbenchError, match="is not a built dataset folder: it has no README.md"):
        built_folder("nc", dataset=tmp_path)
    (tmp_path / "README.md").write_text("# notes\n", encoding="utf-8")
    with pytest.raises(ConvbenchError, match="has no YAML header"):
        read_rows(tmp_path, "basic", "test")
    (tmp_path / "README.md").write_text("---\nlicense: mit\n---\n# notes\n", encoding="utf-8")
    with pytest.raises(ConvbenchError, match="lists no `configs`"):
        built_folder("nc", dataset=tmp_path)


def test_unknown_benchmark_names_the_benchmarks(nc_built: Path) -> None:
    with pytest.raises(ConvbenchError, match="unknown benchmark 'ncb'; available: nc, nico, cocoeval"):
        built_folder("ncb", dataset=nc_built)


def test_a_missing_data_file_is_named(nc_built: Path, tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "nc"
    shutil.copytree(nc_built, copy)
    (copy / "rag" / "test-00000-of-00001.parquet").unlink()
    with pytest.raises(ConvbenchError, match=r"config 'all' split 'test' lists 'rag/test-00000-of-00001.parquet', which "
                                             "matches no parquet file"):
        read_rows(copy, "all", "test")


# --- datasets' rules on hand-made folders -----------------------------------------------------------------------

def _folder(root: Path, header: str, files: dict[str, Any]) -> Path:
    """A Hub-layout folder: README.md with ``header`` as its YAML, and parquet ``files`` {path: pyarrow table}."""
    import pyarrow.parquet as pq

    for rel, table in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, root / rel)
    (root / "README.md").write_text(f"---\n{textwrap.dedent(header).strip()}\n---\n# a hand-made build\n", encoding="utf-8")
    return root


def test_glob_patterns_hidden_files_and_casts_follow_datasets(tmp_path: Path) -> None:
    # Written here by hand: a glob over three files (one hidden, one not parquet), columns stored in
    # another order and as int32/float64 where the card says int64/float32 (datasets casts to the card's).
    import pyarrow as pa

    def table(ids: list[int]) -> Any:
        return pa.table({"score": pa.array([i / 3 for i in ids], pa.float64()), "id": pa.array(ids, pa.int32()),
                         "tags": pa.array([[str(i)] for i in ids], pa.list_(pa.string()))})

    folder = _folder(tmp_path, """
        configs:
        - config_name: main
          data_files:
          - split: train
            path: data/train-*
          - split: test
            path: data/test.parquet
        - config_name: deep
          data_files: data/**/*.parquet
        dataset_info:
        - config_name: main
          features:
          - name: id
            dtype: int64
          - name: score
            dtype: float32
          - name: tags
            list: string
    """, {"data/train-b.parquet": table([3, 4]), "data/train-a.parquet": table([1, 2]),
          "data/.train-hidden.parquet": table([99]), "data/test.parquet": table([5]),
          "data/sub/train-c.parquet": table([6]), "data/.hidden/d.parquet": table([98]),
          "data/__special__/e.parquet": table([97])})
    (folder / "data" / "train-NOTES").write_text("no extension: no data file to datasets\n", encoding="utf-8")
    assert [p.name for p in data_files(folder, "main", "train")] == ["train-a.parquet", "train-b.parquet"]
    rows = read_rows(folder, "main", "train")
    assert [r["id"] for r in rows] == [1, 2, 3, 4] and list(rows[0]) == ["id", "score", "tags"]
    assert rows[0]["score"] == pytest.approx(1 / 3) and rows[0]["score"] != 1 / 3  # float32, as the card says
    _assert_build_reads_like_datasets(folder, "main")
    # ** crosses folders but not hidden (.x) or special (__x) ones; no features in the card: the files' types
    assert [r["id"] for r in read_rows(folder, "deep", "train")] == [6, 5, 1, 2, 3, 4]  # paths sorted: sub/ < test < train-a
    _assert_build_reads_like_datasets(folder, "deep")
    # a data file of another format that the glob matches: datasets fails reading it as parquet; we name it
    (folder / "data" / "train-notes.txt").write_text("not data\n", encoding="utf-8")
    with pytest.raises(ConvbenchError, match=r"lists 'data/train-\*', which matches files that are not parquet: "
                                             r"\['.*/data/train-notes.txt'\]"):
        read_rows(folder, "main", "train")


def test_data_files_forms_and_the_default_config(tmp_path: Path) -> None:
    # datasets' forms of data_files: a bare path is the train split; a mapping names the splits.
    import pyarrow as pa

    folder = _folder(tmp_path, """
        configs:
        - config_name: bare
          data_files: a.parquet
        - config_name: listed
          default: true
          data_files:
          - split: test
            path: [a.parquet, b.parquet]
    """, {"a.parquet": pa.table({"x": [1]}), "b.parquet": pa.table({"x": [2]})})
    card = read_card(folder)
    assert card.configs == {"bare": {"train": ["a.parquet"]}, "listed": {"test": ["a.parquet", "b.parquet"]}}
    assert card.default == "listed" and card.features == {} and card.rows == {}
    assert read_rows(folder, "listed", "test") == [{"x": 1}, {"x": 2}]
    _assert_build_reads_like_datasets(folder, "bare")
    _assert_build_reads_like_datasets(folder, "listed")
    # a mapping is no data_files form datasets reads from a card (it refuses it); neither do we
    (folder / "README.md").write_text("---\nconfigs:\n- config_name: m\n  data_files:\n    test: a.parquet\n---\n")
    with pytest.raises(ConvbenchError, match="config 'm': data_files must be a path, a list of paths or a list of"):
        read_card(folder)


def test_features_datasets_decodes_are_refused_by_name(tmp_path: Path) -> None:
    import pyarrow as pa

    folder = _folder(tmp_path, """
        configs:
        - config_name: pics
          data_files: p.parquet
        dataset_info:
        - config_name: pics
          features:
          - name: picture
            dtype: image
    """, {"p.parquet": pa.table({"picture": [{"bytes": b"", "path": None}]})})
    with pytest.raises(ConvbenchError, match=r"config 'pics', feature 'picture': feature type 'image' is decoded by datasets"):
        read_rows(folder, "pics", "train")


def test_class_labels_are_read_as_names_at_any_depth(tmp_path: Path) -> None:
    # Written by hand: a top-level ClassLabel, one in each struct of a list, and a list of ClassLabels
    # (datasets writes its item without "dtype"); the names, by id, are the card's.
    import pyarrow as pa

    header = """
        configs:
        - config_name: main
          data_files: m.parquet
        dataset_info:
        - config_name: main
          features:
          - name: kind
            dtype:
              class_label:
                names:
                  '0': greeting
                  '1': farewell
          - name: turns
            list:
            - name: text
              dtype: string
            - name: mood
              dtype:
                class_label:
                  names:
                    '0': calm
                    '1': cross
          - name: tags
            list:
              class_label:
                names:
                  '0': a
                  '1': b
    """
    turns = pa.list_(pa.struct([("text", pa.string()), ("mood", pa.int64())]))
    folder = _folder(tmp_path, header, {"m.parquet": pa.table({
        "kind": pa.array([1, 0], pa.int64()),
        "turns": pa.array([[{"text": "hi", "mood": 0}, {"text": "go", "mood": 1}], []], turns),
        "tags": pa.array([[1, 0], [1]], pa.list_(pa.int64()))})})
    expected = [{"kind": "farewell", "turns": [{"text": "hi", "mood": "calm"}, {"text": "go", "mood": "cross"}],
                 "tags": ["b", "a"]},
                {"kind": "greeting", "turns": [], "tags": ["b"]}]
    assert read_rows(folder, "main", "train") == expected
    _assert_build_reads_like_datasets(folder, "main")  # datasets' own int2str agrees
    # an id past the names: the file, row and field named
    pa_bad = pa.table({"kind": pa.array([0, 1], pa.int64()),
                       "turns": pa.array([[], [{"text": "x", "mood": 2}]], turns),
                       "tags": pa.array([[], []], pa.list_(pa.int64()))})
    import pyarrow.parquet as pq

    pq.write_table(pa_bad, folder / "m.parquet")
    with pytest.raises(ConvbenchError, match=r"m.parquet: row 1: field 'turns\[0\].mood' must be a class id of its 2 "
                                             r"names \(0-1\), got 2"):
        read_rows(folder, "main", "train")


def test_columns_other_than_the_cards_are_named(tmp_path: Path) -> None:
    import pyarrow as pa

    folder = _folder(tmp_path, """
        configs:
        - config_name: main
          data_files: m.parquet
        dataset_info:
        - config_name: main
          features:
          - name: id
            dtype: int64
          - name: text
            dtype: string
    """, {"m.parquet": pa.table({"id": [1], "body": ["x"]})})
    with pytest.raises(ConvbenchError, match=r"m.parquet: its columns do not match the card's features for config 'main' "
                                             r"\(missing: \['text'\], not in the card: \['body'\]\)"):
        read_rows(folder, "main", "train")


def test_the_card_is_parsed_once_per_version(nc_built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    from convbench_datasets import built_rows

    copy = tmp_path / "nc"
    shutil.copytree(nc_built, copy)
    parsed = []
    real = built_rows._parse_card
    monkeypatch.setattr(built_rows, "_parse_card", lambda path, text: parsed.append(path) or real(path, text))
    first = read_card(copy)
    for config in NC_CONFIGS:
        read_rows(copy, config, "test")
    assert read_card(copy) is first and len(parsed) == 1
    card = copy / "README.md"
    # another size, so a new version even where the clock is too coarse to change the mtime
    card.write_text(card.read_text(encoding="utf-8").replace("config_name: all", "config_name: everything"), encoding="utf-8")
    assert list(read_card(copy).configs)[-1] == "everything" and len(parsed) == 2


def test_rows_other_than_the_cards_are_refused(nc_built: Path, tmp_path: Path) -> None:
    import shutil

    import pyarrow.parquet as pq

    copy = tmp_path / "nc"
    shutil.copytree(nc_built, copy)
    rag = copy / "rag" / "test-00000-of-00001.parquet"
    pq.write_table(pq.read_table(rag).slice(0, 10), rag)
    with pytest.raises(ConvbenchError, match="config 'rag' split 'test' has 180 rows, its data files 10"):
        read_rows(copy, "rag", "test")
    with pytest.raises(ConvbenchError, match="config 'all' split 'test' has 720 rows, its data files 550"):
        read_rows(copy, "all", "test")


def test_a_dataset_named_not_a_folder_is_read_through_datasets(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # `--dataset convbench/nc` (installed by `convbench install`) or a Hub id: not a folder here, so datasets
    # loads it by name, as `load_dataset` would; a folder is read with pyarrow (no datasets call at all)
    import datasets

    from convbench_datasets.built_rows import dataset_rows

    calls = []

    split = datasets.Dataset.from_list([{"id": 7, "set": 1}], features=datasets.Features(
        {"id": datasets.Value("int64"), "set": datasets.ClassLabel(names=["basic", "rag"])}))

    def fake_load(path: str, config: str) -> dict:
        calls.append((path, config))
        return {"test": split}

    monkeypatch.chdir(tmp_path)  # no folder named convbench/nc here
    monkeypatch.setattr(datasets, "load_dataset", fake_load)
    assert dataset_rows("nc", "basic", "test", dataset="convbench/nc") == [{"id": 7, "set": "rag"}]  # names, as from a folder
    assert calls == [("convbench/nc", "basic")]
    monkeypatch.setattr(datasets, "load_dataset", lambda *a, **k: (_ for _ in ()).throw(FileNotFoundError("no such")))
    with pytest.raises(ConvbenchError, match=r"convbench/nope is not a folder here, and datasets cannot load it by that "
                                             r"name either \(FileNotFoundError: no such\)"):
        dataset_rows("nc", "basic", "test", dataset="convbench/nope")


_TURNS = NonEmpty([{"role": str, "content": str}])


@pytest.mark.parametrize(("value", "shape", "expected"), [
    # messages written out by hand from shape_problem's docstring rules: the first misfit, its full path
    ([1, 2, True], [int], "field 'f[2]' must be a whole number, got True"),  # a bool is no int, even in a list
    ([{"role": "user", "content": "hi"}, {"role": "user"}], _TURNS, "field 'f[1].content' is missing"),
    ([], _TURNS, "field 'f' must be a non-empty list of {role: string, content: string}, got []"),
    ([{"role": "user", "content": "hi"}, {"role": 3, "content": "x"}], _TURNS, "field 'f[1].role' must be a string, got 3"),
    ({"a": {"b": ["x", 5]}}, {"a": {"b": [str]}}, "field 'f.a.b[1]' must be a string, got 5"),
    ([[1], [2, "3"]], [[int]], "field 'f[1][1]' must be a whole number, got '3'"),
    (("x", "y"), [str], None),  # a tuple reads as a list
    ([type("Text", (str,), {})("x")], [str], None),  # a str subclass is a str
    ({"role": "user", "content": "", "more": None}, {"role": str, "content": str}, None),  # other keys allowed
])
def test_shape_problem_names_the_first_misfit(value, shape, expected) -> None:
    assert shape_problem(value, shape, "f") == expected


def test_row_rules_refuse_a_bool_for_a_whole_number() -> None:
    rules = RowRules({"id": str, "n": int})
    assert rules.problem({"id": "a", "n": 1}) is None
    assert rules.problem({"id": "a", "n": False}) == "field 'n' must be a whole number, got False"
    assert rules.problem({"id": 7, "n": 1}) == "field 'id' must be a string, got 7"
