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


def test_the_run_flags_are_the_configs_declarations() -> None:
    # every declared run flag is a flag of `convbench run`, and reads back into the field it declares
    from convbench_datasets.cli import _parser
    from convbench_datasets.runs.run_config import flag_values, run_flags

    argv = ["run", "nico", "--model", "baseline:repeat", "--task", "open_domain", "--out", "o", "--cache", "c.sqlite",
            "--dataset", "d", "--sources", "s", "--no-progress", "--retry-errors", "--max-error-rate", "10%",
            "--max-empty-rate", "0.2", "--max-unparsed-rate", "1", "--concurrency", "4", "--sample", "7", "--sample-seed",
            "2", "--shard", "1/3"]
    # the command line above gives each declared flag but --limit (it and --sample choose the rows two ways)
    assert {f.flag for _, f in run_flags()} - set(argv) == {"--limit"}
    run, rows = flag_values(_parser().parse_args(argv))
    assert run == {"out": "o", "cache": "c.sqlite", "dataset": "d", "sources": "s", "progress": False,
                   "retry_errors": True, "max_error_rate": 0.1, "max_empty_rate": 0.2, "max_unparsed_rate": 1.0,
                   "concurrency": 4}
    assert rows == {"limit": None, "sample": 7, "sample_seed": 2, "shard": (1, 3)}
    # not given: each field's default (--sample-seed 0, --max-error-rate 5%, progress shown)
    run, rows = flag_values(_parser().parse_args([*argv[:8], "--limit", "3"]))
    assert run["progress"] is True and run["max_error_rate"] == 0.05 and rows["sample_seed"] == 0
    assert (run["max_empty_rate"], run["max_unparsed_rate"]) == (0.1, 0.1)  # run_checks' defaults, 10% each
    assert rows["limit"] == 3 and rows["sample"] is None
