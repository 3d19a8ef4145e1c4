"""Running models on any benchmark: backends, the response cache, stages, and the pipeline that drives
a :class:`convbench_datasets.benchmark.Benchmark` (``run``, ``score_run``). Benchmark-agnostic: each
benchmark's run function lives in its own package (``convbench_datasets.run_nc`` and the like)."""

from .backends import Backend, Generation, GenerationParams, backend_from_spec
from .cache import ResponseCache
from .run_folder import RunResult
from .stage import RunIncomplete


def __getattr__(name: str) -> object:
    # the pipeline sits above the benchmark packages, which import this package's lower layer: loaded on use
    if name in ("run", "score_run"):
        from . import pipeline

        return getattr(pipeline, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Backend",
    "Generation",
    "GenerationParams",
    "backend_from_spec",
    "ResponseCache",
    "RunResult",
    "run",
    "score_run",
    "RunIncomplete",
]
