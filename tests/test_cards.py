"""The YAML headers of the built dataset cards: what the Hub reads for license and size."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from convbench_datasets.hub import BuiltConfig, BuiltDataset, size_category


def _header(folder: Path) -> dict:
    text = (folder / "README.md").read_text(encoding="utf-8")
    assert text.startswith("---\n")
    return yaml.safe_load(text[4 : text.index("\n---\n", 4)])


def _largest_config(header: dict) -> int:
    return max(sum(s["num_examples"] for s in info["splits"]) for info in header["dataset_info"])


@pytest.mark.parametrize("fixture", ["nc_built", "nico_built", "cocoeval_built"])
def test_card_header_parses_and_has_license_and_size(fixture: str, request: pytest.FixtureRequest) -> None:
    folder = request.getfixturevalue(fixture)
    header = _header(folder)
    # nc (all = 720) and nico (the 20-dialogue sample) are under 1,000 rows in their largest config, the
    # Hub's "n<1K" bin; cocoeval's all is 200 test + about 1,400 train rows (tests/cocoeval/test_build.py), "1K<n<10K"
    low, high, expected = (1000, 10_000, "1K<n<10K") if fixture == "cocoeval_built" else (0, 1000, "n<1K")
    assert low <= _largest_config(header) < high and header["size_categories"] == [expected]
    if fixture == "nc_built":
        assert header["license"] == "apache-2.0"  # IBM's upstream license, a Hub license id
        return
    # nico and cocoeval: no single Hub license id fits (user data / mixed sources), so the Hub's form
    # for another license: `other`, an id of our own and a link to a file in the repository
    assert header["license"] == "other"
    assert header["license_name"] == {"nico_built": "nico-user-provided",
                                      "cocoeval_built": "cocoeval-reconstruction-mixed-sources"}[fixture]
    assert header["license_link"] == "LICENSE.md"
    assert (folder / "LICENSE.md").read_text(encoding="utf-8").startswith("# Terms of this ")


# the Hub's closed vocabularies for these card keys (its dataset card specification)
HUB_VALUES = {"annotations_creators": {"crowdsourced", "expert-generated", "found", "machine-generated", "no-annotation", "other"},
              "language_creators": {"crowdsourced", "expert-generated", "found", "machine-generated", "other"},
              "multilinguality": {"monolingual", "multilingual", "translation", "other"}}
# who made each benchmark's text and annotations, as its paper says: NC-Bench's examples adapted from
# existing datasets and written by its authors, who set the acceptable labels; NICO's dialogues drafted by
# GPT-4-turbo, revised and annotated by hired workers; CoCoEval's transcripts real meetings and debates,
# with metadata from the sources' annotations or a model (--metadata-model)
EXPECTED = {"nc_built": (["expert-generated"], ["expert-generated", "found"], ["original"]),
            "nico_built": (["crowdsourced"], ["machine-generated", "crowdsourced"], ["original"]),
            "cocoeval_built": (["found", "machine-generated"], ["found"], ["extended|qmsum", "extended|other-iq2-debates"])}


@pytest.mark.parametrize("fixture", ["nc_built", "nico_built", "cocoeval_built"])
def test_card_header_has_the_hubs_taxonomy_keys(fixture: str, request: pytest.FixtureRequest) -> None:
    header = _header(request.getfixturevalue(fixture))
    for key, allowed in HUB_VALUES.items():
        assert header[key] and set(header[key]) <= allowed, (key, header.get(key))
    annotations, language, sources = EXPECTED[fixture]
    assert (header["annotations_creators"], header["language_creators"], header["source_datasets"]) == \
        (annotations, language, sources)
    assert header["multilinguality"] == ["monolingual"] and header["task_ids"] == ["dialogue-generation"]
    assert header["task_categories"] == ["text-generation"]


@pytest.mark.parametrize("rows,expected", [(0, "n<1K"), (999, "n<1K"), (1000, "1K<n<10K"), (4000, "1K<n<10K"),
                                           (10_000, "10K<n<100K"), (2_500_000, "1M<n<10M")])
def test_size_category_bins(rows: int, expected: str, tmp_path: Path) -> None:
    # the Hub's bins (hub-docs datasetcard.md: n<1K, 1K<n<10K, ...); NICO's 4,000 dialogues fall in 1K<n<10K.
    # The largest config counts, its splits together: here one config of rows split in two.
    built = BuiltDataset(name="t", features=None, configs=[
        BuiltConfig("a", {"train": [{}] * (rows - rows // 3), "test": [{}] * (rows // 3)}),
        BuiltConfig("b", {"train": [{}]}),
    ], card_template=tmp_path / "card.md")
    assert size_category(built) == expected
