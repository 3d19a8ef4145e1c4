"""Install a built dataset folder so that ``datasets.load_dataset("convbench/<name>")`` finds it offline.

With ``HF_HUB_OFFLINE=1`` (or no network) ``datasets`` never reads Hub snapshots for a repo id: it falls
back to its own prepared-dataset cache, ``$HF_DATASETS_CACHE/<namespace>___<name>/<config>/<version>/<hash>/``
(``dataset_info.json`` plus ``<name>-<split>.arrow``), read by its ``cache`` builder. Installing prepares
every config of the build there: with no config named, ``datasets`` takes the most recently modified
folder and refuses when several configs share its hash, so the default config is given its own hash and
the newest time, and the other configs share one hash.

Nothing keeps the default config the newest folder: ``.map()``/``.filter()`` on another config writes its
``cache-*.arrow`` into that config's folder, which makes it the newest (``datasets`` has no default-config
notion for cached datasets: a config named ``default`` is not preferred, and folder times are all it
reads). Because the other configs share a hash, ``datasets`` then refuses, naming the configs, instead of
silently loading another config (a build has two or more other configs: nc, nico and cocoeval all do);
users who need certainty name the config.

Every folder installed holds :data:`MARKER`. A folder without it (``convbench/<name>`` downloaded from
the Hub, say) is never touched: installing refuses, or with ``force`` installs beside it.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._version import __version__
from .errors import ConvbenchError
from .hub import GENERATED_MARK, _split_front_matter
from .out_folder import make_staging

NAMESPACE = "convbench"
MARKER = ".convbench-install.json"
VERSION_DIR = "0.0.0"  # what datasets uses for Hub data-file datasets
_CONFIG_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")


@dataclass(frozen=True)
class InstalledDataset:
    """Where a build was installed and what loads from it."""

    repo_id: str
    root: Path
    default: str
    rows: dict[str, dict[str, int]]  # config -> split -> rows

    def lines(self) -> list[str]:
        out = [f"installed {self.repo_id} into {self.root}; offline, load_dataset({self.repo_id!r}) gives "
               f"the default config {self.default!r}"]
        for config, splits in self.rows.items():
            out.append(f"  {config:<20} " + "  ".join(f"{s}: {n} rows" for s, n in splits.items()))
        out.append(f"name the config (load_dataset({self.repo_id!r}, {self.default!r})): datasets loads the most "
                   "recently modified config when none is named, and .map()/.filter() on another config makes "
                   "that one newer (datasets then refuses and asks for a config name)")
        return out


def datasets_cache_root(name: str) -> Path:
    """The folder datasets searches offline for ``convbench/<name>`` (datasets' own naming rule)."""
    import datasets
    from datasets.naming import camelcase_to_snakecase

    return Path(datasets.config.HF_DATASETS_CACHE).expanduser() / f"{NAMESPACE}___{camelcase_to_snakecase(name)}"


def install_dataset(folder: str | os.PathLike[str], name: str, *, force: bool = False,
                    progress: bool = True) -> InstalledDataset:
    """Install the convbench build of ``name`` in ``folder`` as ``convbench/<name>`` in datasets' cache.

    Args:
        folder: a folder ``convbench build <name>`` wrote.
        name: the benchmark (``"nc"``); the folder's card must say it is a build of it.
        force: install even if the cache holds a ``convbench/<name>`` that convbench did not install
            (it is kept; ours is made the newest, so it is the one loaded).
        progress: show datasets' progress bars while preparing.

    Raises:
        ConvbenchError: the folder is not a build of ``name``, or a foreign copy is there and not ``force``.
    """
    source = Path(folder)
    configs, default = _card_configs(source, name)
    root = datasets_cache_root(name)
    foreign = [p for p in _installed_dirs(root) if not (p / MARKER).is_file()]
    if foreign and not force:
        raise ConvbenchError(f"{foreign[0]} holds a {NAMESPACE}/{name} that convbench did not install (a copy "
                             "downloaded from the Hub?); it is left alone: pass --force to install beside it")
    digest = _folder_digest(source)
    root.parent.mkdir(parents=True, exist_ok=True)
    # named by host and process, so the next install removes one a killed install left (out_folder.make_staging)
    staging = make_staging(root)
    try:
        rows = {config: _prepare(source, name, config, staging / config, digest, progress) for config in configs}
        targets = {}
        for config in configs:
            # the default config alone under its hash; the others share one, so that when one of them is the
            # newest folder datasets refuses a load without a config name instead of returning that config
            key = f"{digest}/{config}" if config == default else f"{digest}/*"
            target = root / config / VERSION_DIR / hashlib.sha256(key.encode()).hexdigest()[:16]
            if target.exists():
                shutil.rmtree(target)  # ours (a foreign folder cannot have this name): the same build again
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staging / config, target)
            targets[config] = target
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    for old in _installed_dirs(root):
        if (old / MARKER).is_file() and old not in targets.values():
            shutil.rmtree(old)  # an earlier install of ours
            _remove_empty_parents(old.parent, root)
    now = time.time()
    for config, target in targets.items():
        stamp = now if config == default else now - 1  # the default config is the newest folder
        os.utime(target, (stamp, stamp))
    return InstalledDataset(repo_id=f"{NAMESPACE}/{name}", root=root, default=default, rows=rows)


def _card_configs(folder: Path, name: str) -> tuple[list[str], str]:
    """The configs a build's card declares, in order, and the default one's name."""
    card = folder / "README.md"
    text = card.read_text(encoding="utf-8") if card.is_file() else ""
    if GENERATED_MARK.format(name=name) not in text:
        raise ConvbenchError(f"{folder} is not a convbench build of {name} ({card} lacks the convbench mark); "
                             f"run `convbench build {name} --out {folder}` first")
    header, _ = _split_front_matter(text, card)
    entries = header.get("configs") or []
    names = [e.get("config_name") for e in entries if isinstance(e, dict)]
    bad = [n for n in names if not isinstance(n, str) or not _CONFIG_NAME.match(n)]
    if not names or bad:
        raise ConvbenchError(f"{card}: the YAML header's configs list is missing or has bad config names {bad}")
    defaults = [e["config_name"] for e in entries if e.get("default")]
    default = defaults[0] if defaults else names[0]
    return names, default


def _installed_dirs(root: Path) -> list[Path]:
    # glob.glob as datasets does: hidden entries (our staging folders) are not datasets' either
    return sorted(Path(p) for p in glob.glob(os.path.join(glob.escape(str(root)), "*", "*", "*")) if os.path.isdir(p))


def _folder_digest(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def _prepare(folder: Path, name: str, config: str, out: Path, digest: str, progress: bool) -> dict[str, int]:
    """Write one config as datasets' cache builder reads it; return its rows per split."""
    import datasets
    from datasets import utils as hf_utils

    quiet = not progress and not hf_utils.are_progress_bars_disabled()
    if quiet:
        hf_utils.disable_progress_bars()
    try:
        with tempfile.TemporaryDirectory(prefix="convbench-install-") as scratch:
            builder = datasets.load_dataset_builder(str(folder), config, cache_dir=scratch)
            # The cache builder opens "<dataset name>-<split>.arrow"; the folder's own name may differ.
            builder.dataset_name = name
            builder.download_and_prepare(output_dir=str(out))
    finally:
        if quiet:
            hf_utils.enable_progress_bars()
    info: dict[str, Any] = json.loads((out / "dataset_info.json").read_text(encoding="utf-8"))
    record = {"benchmark": name, "config": config, "convbench": __version__, "source": str(folder.resolve()),
              "source_sha256": digest}
    (out / MARKER).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return {split: int(s["num_examples"]) for split, s in info["splits"].items()}


def _remove_empty_parents(folder: Path, root: Path) -> None:
    while folder != root.parent and folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()
        folder = folder.parent
