"""The package's YAML tables are read with libyaml's safe loader when present (#20: a run reads several);
the data must be what PyYAML's pure-Python safe loader reads, and nothing unsafe may load."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

import convbench_datasets
from convbench_datasets.parsed_yaml import safe_loader as safe_yaml_loader

TABLES = sorted(Path(convbench_datasets.__file__).parent.rglob("*.yaml"))


def test_the_package_ships_yaml_tables() -> None:
    assert len(TABLES) >= 10


@pytest.mark.parametrize("path", TABLES, ids=lambda p: p.name)
def test_every_table_reads_as_the_pure_python_safe_loader_reads_it(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert yaml.load(text, Loader=safe_yaml_loader()) == yaml.load(text, Loader=yaml.SafeLoader)


def test_the_loader_is_a_safe_one() -> None:
    with pytest.raises(yaml.constructor.ConstructorError):
        yaml.load("!!python/object/apply:os.getcwd []", Loader=safe_yaml_loader())
