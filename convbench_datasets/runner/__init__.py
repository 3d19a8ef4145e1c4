"""Running models on benchmarks: backends, the response cache, and the generate -> judge -> score pipeline."""

from .backends import Backend, Generation, GenerationParams, backend_from_spec
from .cache import ResponseCache
from .nc_run import NCRun, run_nc, score_run
from .nico_run import run_nico
from .run_folder import RunResult
from .stage import RunIncomplete

__all__ = [
    "Backend",
    "Generation",
    "GenerationParams",
    "backend_from_spec",
    "ResponseCache",
    "run_nc",
    "run_nico",
    "RunResult",
    "score_run",
    "NCRun",
    "RunIncomplete",
]
