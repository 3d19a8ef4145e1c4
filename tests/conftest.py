"""Shared fixtures. Tests never reach the network for models; upstream sources come from the mirror
named by CONVBENCH_SOURCES, else they are downloaded once, else the tests that need them skip."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

# datasets and evaluate read these when imported; a test run must never reach the Hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_EVALUATE_OFFLINE", "1")
# Builds and responses made by tests stay out of the user's own convbench cache.
os.environ.setdefault("CONVBENCH_CACHE", tempfile.mkdtemp(prefix="convbench-test-cache-"))


SOURCES_SKIP = "sources unavailable"  # in the reason of every skip for missing upstream data, counted at the end


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> Iterator[None]:
    """Say how many tests did not run for want of upstream data, and how to run them (README, Set-up).
    The outermost wrapper, so that it comes after pytest's own short summary, just above the counts."""
    result = yield
    missing = [r for r in terminalreporter.stats.get("skipped", [])
               if isinstance(r.longrepr, tuple) and SOURCES_SKIP in str(r.longrepr[2])]
    if missing:
        plural = "" if len(missing) == 1 else "s"
        terminalreporter.write_sep("=", f"{len(missing)} test{plural} skipped: upstream {SOURCES_SKIP}", yellow=True)
        terminalreporter.write_line("set CONVBENCH_SOURCES=DIR to a mirror of the upstream files (README: Upstream "
                                    "sources), or give the machine network, to run them")
    return result


UPSTREAM_ORIGINS = ("https://raw.githubusercontent.com/", "https://github.com/")  # where pinned sources live


@pytest.fixture(autouse=True)
def _upstream_or_skip(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test goes through this guard, so none can forget it: without CONVBENCH_SOURCES, a download of a
    pinned upstream file (from its real origin, not a test's local server) that fails for want of network
    skips the test, counted as a missing source, instead of failing it (the README's test command, offline)."""
    if os.environ.get("CONVBENCH_SOURCES"):
        return
    from convbench_datasets import sources
    from convbench_datasets.errors import ChecksumError, SourceError

    download = sources._download

    def guarded(source, out, progress, timeout):  # type: ignore[no-untyped-def]
        try:
            return download(source, out, progress, timeout)
        except ChecksumError:
            raise  # the origin served other bytes than pinned: a real failure
        except SourceError as err:
            if source.url.startswith(UPSTREAM_ORIGINS):
                pytest.skip(f"{source.name}: {SOURCES_SKIP}: no CONVBENCH_SOURCES mirror and no network ({err})")
            raise

    monkeypatch.setattr(sources, "_download", guarded)


def _mirror_or_download(sources: list, what: str, cache: Path) -> Path:
    """CONVBENCH_SOURCES, else the files downloaded once into ``cache``, else skip (no network)."""
    from convbench_datasets.errors import ChecksumError, SourceError
    from convbench_datasets.sources import fetch

    mirror = os.environ.get("CONVBENCH_SOURCES")
    if mirror:
        return Path(mirror)
    try:
        for src in sources:
            fetch(src, cache_dir=cache, progress=False)
    except ChecksumError:
        raise  # the origin served other bytes than pinned: a real failure, not a missing network
    except SourceError as err:
        pytest.skip(f"{what} {SOURCES_SKIP}: no CONVBENCH_SOURCES mirror and no network ({err})")
    return cache / "sources"


@pytest.fixture(scope="session")
def nc_sources(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder laid out like a mirror that holds the NC-Bench upstream files."""
    from convbench_datasets.nc.upstream import source_files

    files = [*source_files().values(), *source_files("code").values()]  # data, and the released prompt and rule
    return _mirror_or_download(files, "NC-Bench", tmp_path_factory.mktemp("convbench-cache"))


@pytest.fixture(scope="session")
def nc_built(nc_sources: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """NC-Bench exported once per session into a Hub-layout folder."""
    from convbench_datasets import build

    out = tmp_path_factory.mktemp("hub") / "nc"
    build("nc", out, sources=nc_sources, progress=False)
    return out


@pytest.fixture(scope="session")
def nc_rows(nc_sources: Path) -> dict[str, list[dict]]:
    """The built rows per config, straight from the builder (no parquet round trip)."""
    from convbench_datasets.nc.builder import build

    built = build(sources_dir=nc_sources, progress=False)
    return {c.name: c.splits["test"] for c in built.configs}


@pytest.fixture(scope="session")
def nico_built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled sample exported once per session."""
    import warnings

    from convbench_datasets import build

    out = tmp_path_factory.mktemp("hub") / "nico"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        build("nico", out, progress=False)
    return out


@pytest.fixture(scope="session")
def qmsum_iq2_sources(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A mirror holding QMSum and IQ2 (CONVBENCH_SOURCES, else downloaded once, else skip)."""
    from convbench_datasets.cocoeval.conversations import iq2_source, qmsum_sources

    return _mirror_or_download([*qmsum_sources(), iq2_source()], "QMSum/IQ2", tmp_path_factory.mktemp("coco-cache"))


@pytest.fixture(scope="session")
def cocoeval_built(qmsum_iq2_sources: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from convbench_datasets import build

    out = tmp_path_factory.mktemp("hub") / "cocoeval"
    build("cocoeval", out, sources=qmsum_iq2_sources, progress=False)
    return out


@pytest.fixture(scope="session")
def built_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel of this checkout, built once per session offline (the test venv's hatchling, a test extra)."""
    pytest.importorskip("hatchling", reason="hatchling (a test extra) builds the wheel offline")
    root = tmp_path_factory.mktemp("wheel")
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", str(Path(__file__).resolve().parents[1]), "--no-deps",
                           "--no-build-isolation", "-q", "-w", str(root)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"pip wheel:\n{done.stdout}\n{done.stderr}"
    (wheel,) = root.glob("convbench-*.whl")
    return wheel
