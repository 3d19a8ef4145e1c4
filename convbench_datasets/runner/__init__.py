"""Running models on any benchmark: backends, the response cache, stages, and the pipeline that drives
a :class:`convbench_datasets.benchmark.Benchmark` (``run``, ``score_run``). Benchmark-agnostic: each
benchmark's run function lives in its own package (``convbench_datasets.run_nc`` and the like)."""

from .backends import Backend, Generation, GenerationParams, backend_from_spec
from .cache import ResponseCache
from .pipeline import run, score_run
from .run_folder import RunResult
from .stage import RunIncomplete

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
