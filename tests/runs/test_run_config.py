"""A run config is data: it pickles and round-trips through JSON for every benchmark (what a cluster job or a
provider batch will carry), and a bad part is refused when it is made, by name."""

from __future__ import annotations

import json
import pickle

import pytest

from convbench_datasets.engine.backends import ModelRole
from convbench_datasets.errors import ConvbenchError
from convbench_datasets.registry import RUNS
from convbench_datasets.runs.run_config import Rows, RunConfig

SETTINGS = {"nc": {"config": "basic", "rules": "released_script"}, "nico": {"task": "open_domain", "shots": 3},
            "cocoeval": {"turns_per_call": 30, "repetition_countermeasure": False}}


@pytest.mark.parametrize("name", list(RUNS))
def test_a_config_pickles_and_round_trips_through_json(name: str) -> None:
    model = ModelRole("openai:m", base_url=["http://127.0.0.1:8000/v1", "http://127.0.0.1:8001/v1"],
                      params={"temperature": 0.7, "stop": ["\n"]}, timeout=30)
    judge = "openai:j" if name != "nico" else None
    config = RunConfig.make(name, model=model, judge=judge, out="runs/x", settings=SETTINGS[name],
                            rows=Rows(sample=40, sample_seed=3, shard=(2, 4)), cache="c.sqlite", concurrency=16)
    again = RunConfig.from_dict(json.loads(json.dumps(config.to_dict())))
    assert again == config and pickle.loads(pickle.dumps(config)) == config
    assert again.rows.shard == (2, 4) and again.model.params == {"stop": ["\n"], "temperature": 0.7}
    for key, value in SETTINGS[name].items():
        assert getattr(again.settings, key) == value


def test_bad_parts_are_refused_when_made() -> None:
    with pytest.raises(ConvbenchError, match="--limit and --sample choose the rows two ways"):
        Rows(limit=3, sample=4)
    with pytest.raises(ConvbenchError, match="NICO takes no setting 'rules'"):
        RunConfig.make("nico", model="baseline:repeat", out="x", settings={"task": "open_domain", "rules": "paper"})
    with pytest.raises(ConvbenchError, match="unknown backend option 'base_ur'"):
        RunConfig.make("nico", model="openai:m", out="x", settings={"task": "open_domain"},
                       backend_options={"base_ur": "http://x"})
    with pytest.raises(ConvbenchError, match="unknown model option 'base_ur'"):
        ModelRole.from_dict({"spec": "openai:m", "base_ur": "http://x"})
    with pytest.raises(ConvbenchError, match="cannot be written as data"):
        RunConfig.make("nico", model="openai:m", out="x", settings={"task": "open_domain"},
                       cache=object()).to_dict()
