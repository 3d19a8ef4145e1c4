"""What every model backend shares: generation parameters, results, and the interface."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ...errors import ConvbenchError

Messages = list[dict[str, str]]
# request fields a backend builds itself from the prompt: never a --param
RESERVED_PARAMS = ("model", "messages", "stream", "system")


def parse_param(text: str, flag: str = "--param") -> tuple[str, Any]:
    """``KEY=VALUE`` from the command line: VALUE read as JSON when it parses (``0.7``, ``true``,
    ``["\\n"]``, ``{"type": "enabled"}``; ``null`` leaves the field out of the request), else as the string.

    Example:
        >>> parse_param("temperature=0.7"), parse_param("reasoning_effort=low"), parse_param("stop=null")
        (('temperature', 0.7), ('reasoning_effort', 'low'), ('stop', None))
    """
    import json

    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ValueError(f"{flag} expects KEY=VALUE (VALUE as JSON, else a string; null leaves KEY out), got {text!r}")
    try:
        return key, json.loads(value)
    except ValueError:
        return key, value
    except RecursionError:  # a 50,000-deep list: no request field nests so, and Python's reader cannot follow it
        raise ValueError(f"{flag} {key}=...: the value nests too deeply to read") from None


def params_from_flags(values: Sequence[str] | None, flag: str = "--param") -> dict[str, Any] | None:
    """The request parameters of repeated ``flag KEY=VALUE`` options (None when none is given); a key
    given twice is an error naming the flag."""
    if not values:
        return None
    params: dict[str, Any] = {}
    for text in values:
        key, value = parse_param(text, flag)
        if key in params:
            raise ValueError(f"{flag} {key}=... is given twice; give each request field once")
        params[key] = value
    return params


def check_params(params: Any, what: str = "params (--param / --judge-param)") -> dict[str, Any] | None:
    """``params`` checked: a mapping of request field names to JSON values (None: the field is left out of
    the request); returned as a plain dict sorted by key, or None when empty or None. Field names a backend
    builds itself (:data:`RESERVED_PARAMS`), non-string keys and values JSON cannot hold (NaN, objects) are
    one-line errors naming ``what``."""
    import json

    if params is None:
        return None
    if not isinstance(params, Mapping):
        raise ConvbenchError(f"{what} must be a mapping of request fields to values, got {type(params).__name__}")
    checked: dict[str, Any] = {}
    for key in sorted(params, key=str):
        if not isinstance(key, str) or not key:
            raise ConvbenchError(f"{what}: field names must be non-empty strings, got {key!r}")
        if key in RESERVED_PARAMS:
            raise ConvbenchError(f"{what}: {key!r} is built by convbench from the prompt and cannot be set")
        value = params[key]
        try:
            json.dumps(value, allow_nan=False)
        except RecursionError:
            raise ConvbenchError(f"{what}: {key}=... nests too deeply to send") from None
        except (TypeError, ValueError):
            raise ConvbenchError(f"{what}: {key}={value!r} is not a JSON value (numbers, strings, true/false, "
                                 "lists, mappings; null leaves the field out)") from None
        checked[key] = value
    return checked or None


@dataclass(frozen=True)
class GenerationParams:
    """Decoding settings; part of every cache key. Greedy (temperature 0) unless said otherwise.

    ``presence_penalty`` (OpenAI's meaning: subtracted once from the logit of every token already in
    the answer) is left out of :meth:`to_dict` when unset, so that cache keys made before it existed
    stay valid.

    ``verdict``: the answers are a judge's verdicts, so an empty one is no answer (a served backend asks
    again, then records the row's error; a stage reads any empty verdict as the row's error). A generator's
    empty answer can be a real one (a benchmark may score silence). Not part of :meth:`to_dict`: it changes what counts
    as an answer, never what the model is asked.
    """

    max_new_tokens: int = 1024
    temperature: float | None = 0.0  # None: not sent, the server's own default (a local hf model: greedy)
    presence_penalty: float | None = None
    verdict: bool = False

    def to_dict(self) -> dict[str, Any]:
        values = asdict(self)
        del values["verdict"]
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

    A backend whose requests run on the process's event loop may also define ``submit(messages, params)``,
    returning a ``concurrent.futures.Future`` of one prompt's :class:`Generation` (cancelling it cancels
    the request): a stage fed one prompt at a time (``stage.pipeline``'s judges) then asks through it, with
    no thread per request in flight.
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

    def twin(self) -> Backend | None:
        """Another object for this very backend, for a second role in one run (a judge whose spec is the
        generator's own), so that the two roles can run side by side (``stage.pipeline`` wants one object
        per role): same identity (so the same cache keys), connections and preflight; call counts its own.
        None (the default): no twin; the backend plays both roles itself, stage after stage (a local
        model: one copy of its weights in memory)."""
        return None

    def share_slots(self, slots: Any) -> None:
        """Make each request this backend sends take a slot of ``slots`` (a :class:`~.slots.RequestSlots`:
        the run's limit on requests in flight, shared by all its backends) while it is in flight. Default:
        nothing to limit (a backend that sends no requests)."""

    def close(self) -> None:
        """Release resources (models, sessions)."""
