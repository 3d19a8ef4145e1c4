"""What every model backend shares: generation parameters, results, and the interface."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import Any

Messages = list[dict[str, str]]


@dataclass(frozen=True)
class GenerationParams:
    """Decoding settings; part of every cache key. Greedy (temperature 0) unless said otherwise.

    ``presence_penalty`` (OpenAI's meaning: subtracted once from the logit of every token already in
    the answer) is left out of :meth:`to_dict` when unset, so that cache keys made before it existed
    stay valid.
    """

    max_new_tokens: int = 1024
    temperature: float = 0.0
    presence_penalty: float | None = None

    def to_dict(self) -> dict[str, Any]:
        values = asdict(self)
        if self.presence_penalty is None:
            del values["presence_penalty"]
        return values


@dataclass(frozen=True)
class Generation:
    """One model answer, or the error that prevented it (``error`` set, ``text`` empty).

    ``finish_reason`` is why generation stopped as the backend reports it (``stop``, ``length`` when
    the token limit cut the answer, ...; None when unknown). ``permanent`` marks an error that belongs
    to the row itself (the server refused this prompt, filtered it, or never gave a usable reply):
    it is recorded as the row's result and not asked again unless errors are retried; any other error
    (a timeout, a 5xx after the retries) leaves the run incomplete, to be resumed. ``status`` is the
    HTTP status of a request the server refused (None otherwise; never stored in the cache).
    """

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    error: str | None = None
    finish_reason: str | None = None
    permanent: bool = False
    status: int | None = None


class Backend(ABC):
    """A model behind a spec string (``hf:...``, ``openai:...``, ``baseline:...``).

    ``generate`` yields ``(index, Generation)`` as answers complete, in any order, so that the
    caller can store each one at once: an interrupted run loses only what was in flight.
    ``generate_batches`` yields the same answers grouped as they arrived together (a backend with
    many requests in flight overrides it, so that the answers waiting at one moment are stored at once).
    """

    kind: str = ""
    model: str = ""
    calls: int = 0  # model calls made (not counting retries), for tests and run statistics
    # True for a model loaded into this process (hf): its stage runs alone, and it is freed before the next
    # local model loads; False (servers, baselines, stubs) lets stages run side by side (stage.pipeline)
    holds_weights: bool = False

    @property
    def spec(self) -> str:
        return f"{self.kind}:{self.model}"

    def identity(self) -> dict[str, Any]:
        """What, besides prompt and parameters, decides the answer (the cache key uses it)."""
        return {"kind": self.kind, "model": self.model}

    def preflight(self) -> None:
        """Check, before a stage sends its first request, that this backend can work at all (server
        reachable, key accepted); raise ConvbenchError with a one-line reason if not. Default: nothing to check."""

    @abstractmethod
    def generate(self, prompts: Sequence[Messages], params: GenerationParams) -> Iterator[tuple[int, Generation]]:
        ...

    def generate_batches(self, prompts: Sequence[Messages], params: GenerationParams) -> Iterator[list[tuple[int, Generation]]]:
        """The answers of :meth:`generate`, in lists of those that arrived together: each list is what
        was already waiting when the caller asked for more (never held back to wait for others), so
        that a caller can store each list in one transaction. Default: one answer per list."""
        for item in self.generate(prompts, params):
            yield [item]

    def close(self) -> None:
        """Release resources (models, sessions)."""
