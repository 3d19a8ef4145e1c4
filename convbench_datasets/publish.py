"""Sharing: publish a built dataset folder or a metric to the Hugging Face Hub, and install the metric
modules where ``evaluate.load("<name>")`` finds them offline.

The token comes from the environment (``HF_TOKEN``) or the standard ``huggingface-cli login``; it is
never taken on the command line. ``HF_ENDPOINT`` points everything at another Hub.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import warnings
from pathlib import Path
from typing import Any

from ._resources import bundled_dir
from .errors import ConvbenchError

SPACE_APP = """import evaluate
from evaluate.utils import launch_gradio_widget

module = evaluate.load("{repo_id}")
launch_gradio_widget(module)
"""
SPACE_HEADER = "---\ntitle: {name}\nsdk: gradio\nsdk_version: 3.19.1\napp_file: app.py\npinned: false\ntags:\n- evaluate\n- metric\n---\n"


NOT_REDISTRIBUTABLE = {"cocoeval": "its IQ2 part states no license"}


def _check_repo_id(repo_id: str) -> None:
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(repo_id)
    except HFValidationError as err:
        raise ConvbenchError(f"invalid repo id {repo_id!r}: {err}") from None
    if "/" not in repo_id:
        raise ConvbenchError(f"repo id {repo_id!r} needs a namespace: ORG/NAME")


def _hub_error(err: Exception, repo_id: str) -> ConvbenchError:
    if type(err).__name__ == "OfflineModeIsEnabled":
        return ConvbenchError(f"cannot publish {repo_id}: HF_HUB_OFFLINE is set; unset it to reach the Hub")
    status = getattr(getattr(err, "response", None), "status_code", None)
    if status in (401, 403):
        return ConvbenchError(f"the Hub refused {repo_id} (HTTP {status}): log in (`huggingface-cli login`) or set "
                              "HF_TOKEN to a token with write access to that namespace")
    if status is not None:
        return ConvbenchError(f"the Hub answered HTTP {status} for {repo_id}: {err}")
    return ConvbenchError(f"could not reach the Hub for {repo_id} ({type(err).__name__}: {err}); check the network or HF_ENDPOINT")


def publish_dataset(folder: str | os.PathLike[str], repo_id: str, *, private: bool = False) -> str:
    """Create the dataset repo if needed and upload the folder (parquet files, card, license).

    A build whose data may not be redistributed (CoCoEvalBench: IQ2 states no license) is only
    published to a private repository.
    """
    from huggingface_hub import HfApi

    path = Path(folder)
    if not (path / "README.md").is_file():
        raise ConvbenchError(f"{path} is not a built dataset folder (no README.md); run `convbench build` first")
    _check_repo_id(repo_id)
    card = (path / "README.md").read_text(encoding="utf-8")
    for name, reason in NOT_REDISTRIBUTABLE.items():
        if f"from cards/{name}/README.md" in card and not private:
            raise ConvbenchError(f"{path} is a {name} build and {reason}: publish it only with --private")
    api = HfApi()
    try:
        api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
        commit = api.upload_folder(repo_id=repo_id, repo_type="dataset", folder_path=str(path),
                                   commit_message="Upload with convbench", ignore_patterns=[".git/*", "*.lock", ".*.tmp"])
    except Exception as err:  # huggingface_hub raises HTTP and connection errors of several kinds
        raise _hub_error(err, repo_id) from err
    return str(getattr(commit, "commit_url", commit))


def metric_space_files(name: str, repo_id: str) -> dict[str, bytes]:
    """The files of an evaluate Space for one of convbench's metrics: its self-contained module
    (:mod:`convbench_datasets.standalone`: the scoring code copied in, PyPI requirements only), the
    card with the Space's header, and the widget app."""
    from .standalone import standalone_metric_files

    files = standalone_metric_files(name)
    card = files["README.md"].decode("utf-8")
    body = card.split("---\n", 2)[2] if card.startswith("---\n") else card
    files["README.md"] = (SPACE_HEADER.format(name=name) + body).encode("utf-8")
    files["app.py"] = SPACE_APP.format(repo_id=repo_id).encode("utf-8")
    return files


def publish_metric(name: str, repo_id: str, *, private: bool = False) -> str:
    """Create (if needed) an evaluate Space holding the metric module, card, requirements and app."""
    from huggingface_hub import CommitOperationAdd, HfApi

    _check_repo_id(repo_id)
    files = metric_space_files(name, repo_id)
    api = HfApi()
    try:
        api.create_repo(repo_id, repo_type="space", space_sdk="gradio", private=private, exist_ok=True)
        operations = [CommitOperationAdd(path_in_repo=p, path_or_fileobj=data) for p, data in files.items()]
        commit = api.create_commit(repo_id=repo_id, repo_type="space", operations=operations,
                                   commit_message=f"Upload the {name} metric with convbench")
    except Exception as err:
        raise _hub_error(err, repo_id) from err
    return str(getattr(commit, "commit_url", commit))


def evaluate_modules_dir() -> Path:
    """Where evaluate keeps loaded modules: evaluate's own setting when this process has imported it (a
    notebook may have changed ``evaluate.config``), else the rules its config reads at import
    (``HF_MODULES_CACHE``, else ``HF_HOME``, else ``$XDG_CACHE_HOME/huggingface``)/modules: importing
    evaluate only to read them costs seconds (it imports datasets and more), for every ``metrics install``.
    tests/test_publish_modules_dir.py checks the two agree."""
    config = sys.modules.get("evaluate.config")
    if config is not None:
        return Path(config.HF_MODULES_CACHE).expanduser() / config.MODULE_NAME_FOR_DYNAMIC_MODULES
    modules = os.environ.get("HF_MODULES_CACHE")
    if not modules:
        cache = os.environ.get("XDG_CACHE_HOME") or os.path.join("~", ".cache")
        home = os.environ.get("HF_HOME") or os.path.join(cache, "huggingface")
        modules = os.path.join(home, "modules")
    return Path(os.path.expanduser(modules)) / "evaluate_modules"


OURS = ".convbench-metric"  # in each module folder convbench installs: what tells ours from another's
CANONICAL = "evaluate-metric"  # the namespace a bare evaluate.load("<name>") looks up


def install_metrics(names: list[str] | None = None, namespace: str = "convbench") -> list[Path]:
    """Place convbench's metric modules in evaluate's module cache, so that offline both
    ``evaluate.load("<namespace>/<name>")`` and the bare ``evaluate.load("<name>")`` find them (evaluate 0.4's
    layout: ``metrics/<namespace>--<name>/<sha256>/<name>.py``; a bare name is ``evaluate-metric--<name>``).

    The canonical namespace belongs to Hugging Face's official metrics: only convbench's own names are written
    there, each module folder marked as ours (:data:`OURS`), and a name under which the cache already holds a
    module convbench did not install is left alone, with a warning saying so (``convbench/<name>`` still
    loads ours)."""
    root = evaluate_modules_dir()
    available = sorted(p.name for p in bundled_dir("metrics").iterdir() if (p / f"{p.name}.py").is_file())
    chosen = names or available
    unknown = sorted(set(chosen) - set(available))
    if unknown:
        raise ConvbenchError(f"unknown metric(s) {unknown}; available: {available}")
    installed = []
    for name in chosen:
        source = bundled_dir("metrics") / name
        module = (source / f"{name}.py").read_bytes()
        digest = hashlib.sha256(module).hexdigest()
        for space in (namespace, CANONICAL):
            folder = root / "metrics" / f"{space}--{name}"
            foreign = _foreign_modules(folder) if space == CANONICAL else []  # convbench's namespace is its own
            if foreign:
                warnings.warn(f"{foreign[0]} holds a module named {name!r} that convbench did not install: left "
                              f"alone, so the bare evaluate.load({name!r}) loads that one; "
                              f"evaluate.load('{namespace}/{name}') loads convbench's", stacklevel=2)
                continue
            target = folder / digest
            target.mkdir(parents=True, exist_ok=True)
            for package in (root, root / "metrics", target.parent, target):
                (package / "__init__.py").touch(exist_ok=True)
            (target / f"{name}.py").write_bytes(module)
            for extra in ("README.md", "requirements.txt"):
                shutil.copyfile(source / extra, target / extra)
            (target / OURS).write_text(f"{name}\n", encoding="utf-8")
            installed.append(target)
    return installed


def _foreign_modules(folder: Path) -> list[Path]:
    """The module folders (one per hash) under ``folder`` that convbench did not install (no :data:`OURS`)."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.is_dir() and p.name != "__pycache__" and not (p / OURS).is_file())


