"""The exported Hub-layout folder: layout, card, determinism, load_dataset round trip, safety."""

from __future__ import annotations

import filecmp
import json
import re
from pathlib import Path

import pytest
import yaml

from convbench_datasets import build
from convbench_datasets.errors import BuildError
from convbench_datasets.nc import schema

CONFIGS = {"basic": 180, "rag": 180, "complex_request": 360, "all": 720}


def _card_header(folder: Path) -> dict:
    text = (folder / "README.md").read_text(encoding="utf-8")
    return yaml.safe_load(text.split("---\n")[1])


def test_layout(nc_built: Path) -> None:
    files = sorted(str(p.relative_to(nc_built)) for p in nc_built.rglob("*") if p.is_file())
    assert files == [
        ".convbench-build", "LICENSE", "README.md",
        "basic/test-00000-of-00001.parquet",
        "complex_request/test-00000-of-00001.parquet",
        "rag/test-00000-of-00001.parquet",
    ]


def test_card_header_declares_configs_splits_and_features(nc_built: Path) -> None:
    header = _card_header(nc_built)
    assert header["license"] == "apache-2.0"
    assert [c["config_name"] for c in header["configs"]] == list(CONFIGS)
    assert [c for c in header["configs"] if c.get("default")] == [header["configs"][-1]]  # "all"
    for info in header["dataset_info"]:
        assert info["splits"][0]["name"] == "test"
        assert info["splits"][0]["num_examples"] == CONFIGS[info["config_name"]]
        assert [f["name"] for f in info["features"]] == [c.name for c in schema.COLUMNS]


def test_card_body_has_provenance_license_and_citation(nc_built: Path) -> None:
    text = (nc_built / "README.md").read_text(encoding="utf-8")
    assert "487225a9704cd3bf84e87592da0735161402f1c8" in text
    assert "96c2ef96702817693a7f62074c13f3e963272df7bbe84f1c0ff98c9d6d5aab63" in text
    assert "Apache License 2.0" in text and "arXiv:2601.06426" in text
    assert not re.search(r"\{\{[a-z_]+\}\}", text)  # every placeholder filled
    assert "@article{moore2026ncbench," in text  # the citation field, from citation.bib
    assert (nc_built / "LICENSE").read_text().lstrip().startswith("Apache License")


@pytest.mark.parametrize("config", list(CONFIGS))
def test_load_dataset_offline_with_declared_features(nc_built: Path, config: str) -> None:
    import datasets

    ds = datasets.load_dataset(str(nc_built), config, split="test")
    assert ds.num_rows == CONFIGS[config]
    assert ds.features == schema.features()
    if config == "all":
        # set is a ClassLabel: datasets gives its ids, the features their names
        assert ds.features["set"].int2str(ds["set"]) == ["basic"] * 180 + ["rag"] * 180 + ["complex_request"] * 360


def test_loaded_rows_equal_built_rows(nc_built: Path, nc_rows: dict) -> None:
    import datasets

    ds = datasets.load_dataset(str(nc_built), "complex_request", split="test")
    names = ds.features
    built = nc_rows["complex_request"]
    # the ClassLabel columns hold ids; datasets' own int2str gives back the builder's names
    for column in ("set", "task", "pattern"):
        assert names[column].int2str(ds[column]) == [r[column] for r in built]
    assert ds.remove_columns(["set", "task", "pattern"]).to_list() == [
        {k: v for k, v in r.items() if k not in ("set", "task", "pattern")} for r in built]


def test_rebuild_is_byte_identical(nc_built: Path, nc_sources: Path, tmp_path: Path) -> None:
    again = build("nc", tmp_path / "nc", sources=nc_sources, progress=False).path
    compared = filecmp.dircmp(nc_built, again)
    assert not compared.left_only and not compared.right_only
    for path in nc_built.rglob("*"):
        if path.is_file():
            assert path.read_bytes() == (again / path.relative_to(nc_built)).read_bytes(), path


def test_an_earlier_build_is_replaced_but_other_folders_are_refused(nc_sources: Path, tmp_path: Path) -> None:
    out = tmp_path / "nc"
    build("nc", out, sources=nc_sources, progress=False)
    # A file an older build wrote (listed in its marker) is removed; tests/test_out_folder.py covers
    # the folders that are refused in detail.
    marker = json.loads((out / ".convbench-build").read_text())
    (out / "stale.txt").write_text("from an older build")
    (out / ".convbench-build").write_text(json.dumps({**marker, "files": marker["files"] + ["stale.txt"]}))
    build("nc", out, sources=nc_sources, progress=False)
    assert not (out / "stale.txt").exists()

    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "notes.txt").write_text("keep me")
    with pytest.raises(BuildError, match="is not empty and is not a convbench build"):
        build("nc", precious, sources=nc_sources, progress=False)
    assert (precious / "notes.txt").read_text() == "keep me"


def test_failed_export_leaves_no_staging_folder(nc_sources: Path, tmp_path: Path) -> None:
    from convbench_datasets.hub import export
    from convbench_datasets.nc.builder import build as build_nc

    built = build_nc(sources_dir=nc_sources, progress=False)
    template = tmp_path / "card.md"
    template.write_text("---\nlicense: apache-2.0\n---\n{{missing_field}}\n")
    built.card_template = template
    out = tmp_path / "out"
    with pytest.raises(BuildError, match=r"unfilled field\(s\): \['\{\{missing_field\}\}'\]"):
        export(built, out / "nc")  # fails after the parquet files are written
    assert list(out.iterdir()) == []


def test_current_folder_is_refused(nc_sources: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "notes.txt").write_text("keep me")
    monkeypatch.chdir(tmp_path)
    for out in (".", "", ".."):
        with pytest.raises(BuildError, match="current folder or one above it"):
            build("nc", out, sources=nc_sources, progress=False)
    assert (tmp_path / "notes.txt").read_text() == "keep me"


def test_rebuild_keeps_a_git_clone(nc_sources: Path, tmp_path: Path) -> None:
    out = tmp_path / "nc"
    build("nc", out, sources=nc_sources, progress=False)
    (out / ".git").mkdir()
    (out / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (out / ".gitattributes").write_text("*.parquet filter=lfs\n")
    build("nc", out, sources=nc_sources, progress=False)
    assert (out / ".git" / "HEAD").read_text() == "ref: refs/heads/main\n" and (out / ".gitattributes").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nc"]  # no staging or retired folder left
