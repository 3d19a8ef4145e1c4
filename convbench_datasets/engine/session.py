"""The backends of one run, by role, and the stages a benchmark asks them through.

A run has a generator (the ``model`` role) and zero or more judges. The session builds each backend
when it is first needed and frees it as soon as its work is done, so that one local model (``hf:``) it
loaded is in memory at a time (a Backend object passed in instead of a spec is the caller's: used, never
closed, so a local model passed in stays loaded beside the next); it builds the server-backed judges
early so that their preflight runs before the first stage (an unreachable judge fails in seconds, not
after hours of generation). A judge whose role is the generator's (its spec, and the same options its backend
takes: a judge given no options is lent the generator's, less its request params, when the run is made) is the generator's
:meth:`~.backends.Backend.twin` (a server's: same connections and preflight, so the two stages can run
side by side), or the generator itself where a backend has no twin (a local model: one copy in memory).

:meth:`Session.ask` answers one list of prompts (``stage.complete`` with the run's cache, progress and
``retry_errors``). :meth:`Session.generate_then_judge` runs the common two-step shape, generation and
then each judge on what was generated: pipelined (each judge starts on a row as soon as its answer is
stored) when no local model has to be freed for another, else stage after stage. Results are the same.

``concurrency`` is the run's total of requests in flight, every stage and backend together: the session
gives every backend it builds one :class:`~.backends.slots.RequestSlots` to share (first come, first
served: a pipelined judge's requests queue between generation's, none starves), and lends the number to
each backend that has no ``concurrency`` of its own. A backend's own ``concurrency`` caps it within the
total (its workers). Without ``concurrency``, the total is the largest of the backends' own (default 8
each): a stage run alone keeps its backend's concurrency, and a pipelined run has no more in flight
than its busiest backend would alone.

Example (two baselines, no model needed):
    >>> import tempfile
    >>> from convbench_datasets.engine.cache import ResponseCache
    >>> from convbench_datasets.engine.backends import GenerationParams
    >>> with ResponseCache(tempfile.mkdtemp() + "/c.sqlite") as store, \\
    ...         Session(store, "baseline:repeat", ["baseline:silence"], progress=False) as session:
    ...     generated, judged = session.generate_then_judge(
    ...         [[{"role": "assistant", "content": "hello"}, {"role": "user", "content": "again?"}]],
    ...         GenerationParams(8), lambda i, g: [{"role": "user", "content": g.text}], GenerationParams(8))
    >>> generated.generations[0].text, judged[0].generations[0].text
    ('hello', '')
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import ConvbenchError
from .backends import SERVED, Backend, Generation, GenerationParams, Messages, ModelRole, backend_from_spec, early_backend
from .backends.slots import RequestSlots
from .cache import ResponseCache
from .stage import Follow, StageResult, complete, empty_outcome, listening, pipeline, pipelines

Spec = str | Backend


def spec_kind(spec: Spec) -> str:
    """``hf``, ``openai``, ``baseline`` for a spec string; ``object`` for a Backend object."""
    return "object" if isinstance(spec, Backend) else spec.partition(":")[0]


class Session:
    """The backends of one run and the run's cache, progress and error policy (see the module docstring).

    ``model`` and ``judges``: each role's spec and options (a :class:`~.backends.roles.ModelRole`, or a bare
    spec: a role with no options). ``concurrency``: the run's total of requests in flight (see the module
    docstring); ``slots`` holds them.
    """

    def __init__(self, store: ResponseCache, model: Spec | ModelRole, judges: Sequence[Spec | ModelRole] = (), *,
                 progress: bool = True, retry_errors: bool = False, concurrency: int | None = None) -> None:
        self.store, self.progress, self.retry_errors = store, progress, retry_errors
        self.concurrency = concurrency
        # without a total, it grows to the largest concurrency of the backends built (_keep)
        self.slots = RequestSlots(concurrency if concurrency is not None else 1)
        self.model = model if isinstance(model, ModelRole) else ModelRole(model)
        self.judge_roles = [j if isinstance(j, ModelRole) else ModelRole(j) for j in judges]
        self.model_spec, self.judge_specs = self.model.spec, [j.spec for j in self.judge_roles]
        # the first judge is the generator (its twin, or itself) when it is the same spec with the same options its
        # backend takes: a generator with request params is never its own judge unless that judge has the same params
        self.same = (bool(self.judge_roles) and isinstance(self.model.spec, str) and self.judge_roles[0].spec == self.model.spec
                     and self.judge_roles[0].backend_options() == self.model.backend_options())
        self._generator: Backend | None = None
        self._judges: list[Backend | None] = [None] * len(self.judge_specs)
        self._built: list[Backend] = []
        # the backends built here from spec strings (a Backend object passed in is the caller's)
        self._owned: set[int] = set()
        self._freed: set[int] = set()
        self._answers: dict[str, list[int]] = {}  # per role: [outcomes, empty ones] of every stage run in the session
        self._listening: Any = None

    # -- backends --------------------------------------------------------------------------------------

    @property
    def generator(self) -> Backend:
        """The ``model`` role's backend (built on first use)."""
        if self._generator is None:
            self._generator = self._build(self.model)
        return self._generator

    def judge(self, k: int = 0) -> Backend:
        """Judge ``k``'s backend (built on first use; judge 0 may be the generator's twin or the generator
        itself, see ``same`` and the module docstring)."""
        if self._judges[k] is None:
            if self.same and k == 0:
                twin = self.generator.twin()
                self._judges[k] = self.generator if twin is None else self._keep(twin, owned=True)
            else:
                self._judges[k] = self._build(self.judge_roles[k])
        return self._judges[k]  # type: ignore[return-value]

    def early_judges(self) -> list[Backend | None]:
        """The judges that can be built before generation (servers, objects), to preflight with it;
        None for a local model (it loads at its stage) and for the judge that is the generator's own spec
        (the generator's preflight is its)."""
        early: list[Backend | None] = []
        for k, role in enumerate(self.judge_roles):
            if self._judges[k] is None and not (self.same and k == 0):
                backend = early_backend(self._lent(role))
                if backend is not None:
                    self._judges[k] = self._keep(backend, owned=not isinstance(role.spec, Backend))
            early.append(None if self.same and k == 0 else self._judges[k])
        return early

    def free(self, backend: Backend) -> None:
        """Release ``backend`` (a local model's memory) now that its stages are done; once. A Backend object
        the caller passed in is left open: it is the caller's, to use again (a notebook's loaded model)."""
        if id(backend) in self._owned and id(backend) not in self._freed:
            self._freed.add(id(backend))
            backend.close()

    def _build(self, role: ModelRole) -> Backend:
        return self._keep(backend_from_spec(self._lent(role)), owned=not isinstance(role.spec, Backend))

    def _lent(self, role: ModelRole) -> ModelRole:
        """``role`` with the run's ``concurrency`` for a served backend that has none of its own."""
        if self.concurrency is None or role.concurrency is not None or role.kind not in SERVED:
            return role
        return role.replace(concurrency=self.concurrency)

    def _keep(self, backend: Backend, *, owned: bool) -> Backend:
        """Hold ``backend`` and give it the run's slots; ``owned``: the session built it (freed with the session)."""
        self._built.append(backend)
        if owned:
            self._owned.add(id(backend))
        own = getattr(backend, "concurrency", None)
        if self.concurrency is None and isinstance(own, int) and not isinstance(own, bool) and own >= 1:
            self.slots.at_least(own)
        share = getattr(backend, "share_slots", None)  # a duck-typed backend object may lack it: not limited
        if share is not None:
            share(self.slots)
        return backend

    def close(self) -> None:
        """Free every backend the session built and has not freed; none, the caller's included, keeps this
        run's slots."""
        for backend in self._built:
            self.free(backend)
            share = getattr(backend, "share_slots", None)
            if share is not None:
                share(None)

    def __enter__(self) -> Session:
        self._listening = listening(self._count)  # every stage run inside the block, whoever runs it
        self._listening.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            self.close()
        finally:
            self._listening.__exit__(None, None, None)

    def role_of(self, backend: Backend) -> str:
        """The role ``backend`` plays in this run: ``model``, ``judge`` (``judge 2`` for the second of several),
        or ``other`` (a backend the session did not hand out)."""
        if backend is self._generator:
            return "model"
        for k, judge in enumerate(self._judges):
            if backend is judge:
                return "judge" if k == 0 else f"judge {k + 1}"
        return "other"

    def _count(self, backend: Backend, result: StageResult) -> None:
        tally = self._answers.setdefault(self.role_of(backend), [0, 0])
        tally[0] += len(result.generations)
        tally[1] += sum(empty_outcome(g) for g in result.generations)

    def empty_answers(self) -> dict[str, dict[str, int]]:
        """Per role, how many of its outcomes (answers and per-row errors, asked now or from the cache) were
        empty answers (:func:`.stage.empty_outcome`): ``{"model": {"empty": 3, "of": 720}, ...}``."""
        return {role: {"empty": empty, "of": total} for role, (total, empty) in self._answers.items()}

    def identities(self) -> dict[str, Any]:
        """The signature fields naming the backends: model (and judge; with several, every judge)."""
        fields: dict[str, Any] = {"model": self.generator.spec, "model_identity": self.generator.identity()}
        if self.judge_specs:
            judges = [self.judge(k) for k in range(len(self.judge_specs))]
            fields.update(judge=judges[0].spec, judge_identity=judges[0].identity())
            if len(judges) > 1:
                fields.update(judges=[j.spec for j in judges], judge_identities=[j.identity() for j in judges])
        return fields

    # -- stages ----------------------------------------------------------------------------------------

    def ask(self, backend: Backend, prompts: Sequence[Messages], params: GenerationParams, desc: str,
            preflight_also: Sequence[Backend | None] = (), groups: Sequence[Any] | None = None) -> StageResult:
        """Answer ``prompts`` with ``backend`` (``stage.complete`` with this run's cache and policies; ``groups``:
        one value per prompt, where a backend's fixed batches restart, see :mod:`.stage`)."""
        return complete(backend, prompts, params, self.store, desc=desc, progress=self.progress,
                        retry_errors=self.retry_errors, preflight_also=preflight_also, groups=groups)

    def generate_then_judge(self, prompts: Sequence[Messages], params: GenerationParams,
                            judge_prompt: Callable[[int, Generation], Messages | None],
                            judge_params: GenerationParams | Sequence[GenerationParams], *, pipelined: bool = True,
                            desc: str = "generate",
                            groups: Sequence[Any] | None = None) -> tuple[StageResult, list[StageResult]]:
        """Generate an answer to each prompt, then have every judge answer ``judge_prompt(i, answer)``
        (None: row ``i`` is not judged, e.g. its generation failed; it gets an empty answer, no hit flag).
        ``groups`` (one value per prompt, e.g. the row's set) is where a backend's fixed batches restart.
        ``judge_params``: every judge's decoding, or one per judge (a reasoning model's token limit is not
        another judge's).

        Returns the generation and, per judge, its results placed at their rows. Pipelined when
        ``pipelined`` and every backend may run beside another (:func:`stage.pipelines`: none holds a
        local model) and no object plays two roles; else generation first, the generator freed
        (unless it is the judge), then each judge in turn, each freed before the next loads.
        """
        n_judges = len(self.judge_specs)
        each = [judge_params] * n_judges if isinstance(judge_params, GenerationParams) else list(judge_params)
        if len(each) != n_judges:
            raise ConvbenchError(f"got {len(each)} judge parameters for {n_judges} judges")
        each = [dataclasses.replace(p, verdict=True) for p in each]  # an empty judge answer is no verdict
        descs = ["judge" if n_judges == 1 else f"judge {k + 1}/{n_judges}" for k in range(n_judges)]
        early = self.early_judges()
        generator = self.generator
        if pipelined and pipelines(generator):
            # a baseline judge has nothing to load, and the generator's twin loads nothing new either:
            # built now to pipeline them (a generator without a twin stays one object in two roles: not pipelined)
            early = [self.judge(k) if e is None and (spec_kind(spec) == "baseline" or (self.same and k == 0)) else e
                     for k, (e, spec) in enumerate(zip(early, self.judge_specs))]
        if (pipelined and all(e is not None and pipelines(e) for e in early) and pipelines(generator)
                and len({id(b) for b in [generator, *early]}) == 1 + len(early)):
            judges = [e for e in early if e is not None]
            generated, followed = pipeline(
                generator, prompts, params, self.store, desc=desc, progress=self.progress,
                retry_errors=self.retry_errors, follow=judge_prompt, groups=groups,
                then=[Follow(b, p, d) for b, p, d in zip(judges, each, descs)])
            for backend in [generator, *judges]:
                self.free(backend)
            return generated, [spread(judged, rows, len(prompts)) for rows, judged in followed]
        generated = self.ask(generator, prompts, params, desc, preflight_also=early, groups=groups)
        asked = [(i, judge_prompt(i, g)) for i, g in enumerate(generated.generations)]
        asked = [(i, p) for i, p in asked if p is not None]
        if not self.same:
            self.free(generator)
        stages = []
        for k in range(n_judges):
            judge = self.judge(k)
            judged = self.ask(judge, [p for _, p in asked], each[k], descs[k],
                              groups=None if groups is None else [groups[i] for i, _ in asked])
            self.free(judge)
            stages.append(spread(judged, [i for i, _ in asked], len(prompts)))
        return generated, stages


def spread(judged: StageResult, rows: list[int], n: int) -> StageResult:
    """A later stage's results placed back at their rows; rows not asked get an empty answer and no hit flag."""
    generations: list[Generation] = [Generation("")] * n
    hits: list[bool | None] = [None] * n
    for position, row in enumerate(rows):
        generations[row], hits[row] = judged.generations[position], judged.cache_hits[position]
    return StageResult(generations, hits, judged.model_calls)  # type: ignore[arg-type]
