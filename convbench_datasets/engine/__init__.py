"""What the benchmarks use to run models, below them and naming none: model backends and their roles
(:mod:`.backends`), the response cache (:mod:`.cache`), stages (:mod:`.stage`), a run's session of backends
(:mod:`.session`), run folders (:mod:`.run_folder`), samples and shards of rows, error rates. What drives a
run (its config, running, re-scoring, merging, sweeps) is :mod:`convbench_datasets.runs`, above the benchmarks."""

from .backends import Backend, Generation, GenerationParams, ModelRole, backend_from_spec
from .cache import ResponseCache
from .run_folder import RunResult
from .stage import RunIncomplete

__all__ = [
    "Backend",
    "Generation",
    "GenerationParams",
    "ModelRole",
    "backend_from_spec",
    "ResponseCache",
    "RunResult",
    "RunIncomplete",
]
