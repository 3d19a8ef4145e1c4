"""A model role's configuration (the generator, each judge, a dataset build's model stages), declared once.

Each option of :class:`ModelRole` declares which backend kinds take it, whether it decides the answers (a
sweep cell's definition holds it, as the response cache's identity does), its flags of ``convbench run``
and its check. The backends' constructors, the command line, the sweep file's keys and the checks of both
read that one table (:data:`OPTIONS`); a value is checked once, when the role is made.

Example:
    >>> role = ModelRole("openai:Qwen/Qwen2.5-7B-Instruct", base_url="http://127.0.0.1:8000/v1",
    ...                  params={"temperature": 0.7})
    >>> role.options()
    {'base_url': 'http://127.0.0.1:8000/v1', 'params': {'temperature': 0.7}}
    >>> ModelRole.from_dict(role.to_dict()) == role
    True
    >>> ModelRole("openai:m", api_key_env="sk-proj-a1b2")  # never shown: it may be the key itself
    Traceback (most recent call last):
    convbench_datasets.errors.ConvbenchError: api_key_env (--api-key-env) names the environment variable that holds the API key, and what was given is not a variable name (letters, digits and _, not starting with a digit); it is not shown, since it may be the key itself: put the key in a variable and give its name, e.g. --api-key-env OPENAI_API_KEY
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from typing import Any

from ...counts import MAX_BATCH_SIZE, MAX_CONCURRENCY, CountError, check_count, check_seconds
from ...errors import ConvbenchError
from ...settings import positive
from .base import Backend, check_params

SERVED = ("openai", "anthropic")  # kinds behind a server: building one sends nothing
LOCAL = ("hf",)
KINDS = ("hf", "openai", "anthropic", "baseline")
METADATA = "role"


class OptionProblem(ValueError):
    """A role option's value cannot be used (the message never quotes a value that may be a key); ``whole``: the
    check's own error, naming the option and its flag, for a role to raise as it is."""

    def __init__(self, message: str, whole: ConvbenchError | None = None) -> None:
        super().__init__(message)
        self.whole = whole


@dataclasses.dataclass(frozen=True)
class RoleOption:
    """What a :class:`ModelRole` option declares (see the module docstring)."""

    help: str  # what it is (a sweep file's key, the API's keyword)
    kinds: tuple[str, ...]
    answers: bool  # decides the answers: part of a sweep cell's definition
    check: Callable[[Any], Any]
    flag: str | None = None  # the generator's flag of `convbench run` (every role's, when judge_flag is None)
    flag_help: str | None = None  # its help (default: help)
    judge_flag: str | None = None  # the judges' own flag, when they have one
    judge_help: str | None = None
    sweep: bool = True  # a key of a sweep file's models and judges
    sweep_default: bool = True  # also a top-level key of a sweep file: every model's and judge's default
    type: Callable[[str], Any] | None = None  # the flag's value from its text
    choices: tuple[str, ...] | None = None
    metavar: str | None = None
    repeated: bool = False  # the generator's flag may be given several times (each value one item)


def _option(help: str, kinds: tuple[str, ...], check: Callable[[Any], Any], *, answers: bool = False,
            **more: Any) -> Any:
    return dataclasses.field(default=None, metadata={METADATA: RoleOption(help, kinds, answers, check, **more)})


def _urls(value: Any) -> Any:
    from .endpoints import endpoint_urls

    urls = value if isinstance(value, (list, tuple)) else [value]
    bad = [url for url in urls if not isinstance(url, str) or not url.strip()]
    if not urls or bad:
        got = "an empty list" if not urls else "an empty string" if isinstance(bad[0], str) else repr(bad[0])
        raise OptionProblem(f"expected a URL, a comma list of replicas or a list of them, got {got}")
    try:
        endpoint_urls(list(urls))
    except ConvbenchError as err:
        raise OptionProblem(str(err)) from None
    return list(value) if isinstance(value, tuple) else value


def _name(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise OptionProblem(f"expected a name, got {value!r}")
    return value


def _text(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise OptionProblem(f"expected a string, got {value!r}")
    return value


def _params(value: Any) -> dict[str, Any] | None:
    try:
        return check_params(value, "params")
    except ConvbenchError as err:
        raise OptionProblem(str(err).removeprefix("params: ")) from None


def _count(name: str, most: int, flag: str | None = None) -> Callable[[Any], int]:
    named = f"{name} ({flag})" if flag else name

    def check(value: Any) -> int:
        try:
            return check_count(named, value, least=1, most=most)
        except CountError as err:
            raise OptionProblem(str(err).removeprefix(f"{named} "), err) from None
    return check


def _seconds(value: Any) -> float:
    try:  # NaN and infinity too: a request with either would never time out
        return check_seconds("timeout (--timeout)", value)
    except CountError as err:
        raise OptionProblem(str(err).removeprefix("timeout (--timeout) "), err) from None


def _stall_seconds(value: Any) -> float:
    try:
        return check_seconds("stall_timeout (--stall-timeout)", value)
    except CountError as err:
        raise OptionProblem(str(err).removeprefix("stall_timeout (--stall-timeout) "), err) from None


def _key_env(value: Any) -> str:
    from .openai_compat import key_env_problem

    problem = key_env_problem(value)  # never shows the value: it may be the key
    if problem:
        raise OptionProblem(problem)
    return str(value)


def _batch_order(value: Any) -> str:
    from .hf import BATCH_ORDERS

    if value not in BATCH_ORDERS:
        raise OptionProblem(f"expected one of {', '.join(BATCH_ORDERS)}, got {value!r}")
    return str(value)


def _flag_seconds(text: str) -> float:
    import argparse

    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, got {value}")
    return value


def _anything(value: Any) -> Any:
    return value


def _positive_seconds(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise OptionProblem(f"expected seconds (0 or more), got {value!r}")
    return float(value)


@dataclasses.dataclass(frozen=True)
class ModelRole:
    """One model role of a run: its spec and its backend's options, checked (see the module docstring).

    ``spec`` is a spec string (``hf:...``, ``openai:...``, ``anthropic:...``, ``baseline:...``) or a Backend
    object (the caller's, used as it is: its options are its own). An option left None keeps the backend's
    default; an option the spec's kind does not take is not passed to it.
    """

    spec: str | Backend
    base_url: str | list[str] | None = _option(
        "the model's server (OpenAI-compatible; default https://api.openai.com/v1, anthropic: "
        "https://api.anthropic.com/v1): a URL, a comma list of replicas or a list of them", SERVED, _urls,
        answers=True, flag="--base-url", metavar="URL", repeated=True,
        flag_help="OpenAI-compatible server for the model (and the judge, unless --judge-base-url); replicas of "
                  "one model: a comma list, or the option repeated (requests shared by each replica's speed)",
        judge_flag="--judge-base-url",
        judge_help="OpenAI-compatible server(s) for the judge, a comma list for replicas; with one --judge, every "
                   "value is a replica; with several, once for all or once per judge, in order")
    model_id: str | None = _option(
        "the name the response cache keys answers on instead of the server URLs", SERVED, _name, answers=True,
        flag="--model-id", metavar="NAME", sweep_default=False,
        flag_help="openai: and anthropic: models: the name the response cache keys answers on instead of the "
                  "server URLs (default: the URL for one server, none for several); you vouch that it names the weights",
        judge_flag="--judge-model-id",
        judge_help="the same for the judge; with several --judge, once for all or once per judge, in order")
    params: dict[str, Any] | None = _option(
        "request fields sent with every request (null leaves a field out); part of the cache key and the signature",
        (*SERVED, "hf"), _params, answers=True, flag="--param", metavar="KEY=VALUE", sweep_default=False,
        repeated=True,
        flag_help="a request field for the model, repeat for more: temperature=0.7, top_p=0.9, seed=1, "
                  "stop='[\"\\n\"]', max_tokens=512, reasoning_effort=low, any field the server takes; VALUE "
                  "is read as JSON when it parses, else as a string; null leaves the field out of the request. "
                  "Part of the cache key and the run's signature",
        judge_flag="--judge-param", judge_help="the same for every judge (the model's --param never applies to a judge)")
    concurrency: int | None = _option(
        "this role's requests in flight at most, within the run's total", SERVED,
        _count("concurrency", MAX_CONCURRENCY, "--concurrency"))
    timeout: float | None = _option(
        "seconds each request attempt may take in all before a retry (default 120)", SERVED, _seconds,
        flag="--timeout", type=_flag_seconds)
    stall_timeout: float | None = _option(
        "seconds with no answer from any of the role's servers before the run stops, its answers so far cached "
        "(default 300)", SERVED, _stall_seconds, flag="--stall-timeout", type=_flag_seconds)
    api_key_env: str | None = _option(
        "environment variable holding the API key (default OPENAI_API_KEY)", SERVED, _key_env, flag="--api-key-env")
    device: str | None = _option("hf backends: cpu, cuda, cuda:1... (default: cuda if available)", LOCAL, _text,
                                 flag="--device")
    dtype: str | None = _option("hf backends: float32, bfloat16, float16 or auto (default)", LOCAL, _text,
                                answers=True, flag="--dtype")
    batch_size: int | None = _option("hf backends: prompts per batch (default 8)", LOCAL,
                                     _count("batch_size", MAX_BATCH_SIZE, "--batch-size"), flag="--batch-size", type=positive)
    batch_order: str | None = _option(
        "hf backends: which prompts share a batch (bf16 answers depend on it): length (default: sorted by length, "
        "least padding) or file (a released script's: in row order, --batch-size at a time, each group on its own)",
        LOCAL, _batch_order, answers=True, flag="--batch-order", choices=("length", "file"))
    gguf_file: str | None = _option("hf backends: the GGUF file in the model's folder or repo", LOCAL, _text,
                                    answers=True, sweep=False, sweep_default=False)
    cooldown: float | None = _option("seconds a failing replica stays out of rotation", SERVED, _positive_seconds,
                                     sweep=False, sweep_default=False)
    max_failures: int | None = _option("failures in a row that take a replica out of rotation", SERVED,
                                       _count("max_failures", 1_000), sweep=False, sweep_default=False)
    retry: Any = _option("the retry policy (openai_compat.RetryPolicy)", SERVED, _anything, sweep=False,
                         sweep_default=False)

    def __post_init__(self) -> None:
        if not isinstance(self.spec, (str, Backend)):
            raise ConvbenchError(f"a model spec must be a string or a Backend object, got {self.spec!r}")
        for name, declared in role_options():
            value = getattr(self, name)
            if value is None:
                continue
            try:
                object.__setattr__(self, name, declared.check(value))
            except OptionProblem as err:  # a message that names its option already stands alone
                if err.whole is not None:
                    raise err.whole from None
                raise ConvbenchError(str(err) if str(err).startswith(name) else f"{self.label}: {name}: {err}") from None
        if self.model_id is not None and self.kind not in SERVED:
            raise ConvbenchError(f"{self.label}: model_id applies to {served_kinds()} models only")
        if self.kind == "baseline" and self.params:
            raise ConvbenchError(f"{self.spec} sends no requests: request parameters (--param / --judge-param, "
                                 f"params) do not apply to it")

    @property
    def kind(self) -> str:
        """``hf``, ``openai``, ``anthropic``, ``baseline``; ``object`` for a Backend object."""
        return "object" if isinstance(self.spec, Backend) else self.spec.partition(":")[0]

    @property
    def label(self) -> str:
        return self.spec if isinstance(self.spec, str) else f"{type(self.spec).__name__} object"

    def options(self) -> dict[str, Any]:
        """The options set (not None), by name."""
        return {name: getattr(self, name) for name, _ in role_options() if getattr(self, name) is not None}

    def backend_options(self) -> dict[str, Any]:
        """The options its kind's backend takes (the rest are another kind's: not passed)."""
        return {name: value for name, value in self.options().items() if self.kind in OPTIONS[name].kinds}

    def replace(self, **changes: Any) -> ModelRole:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """JSON form: the spec and the options set (a Backend object and a retry policy have none).

        Raises:
            ConvbenchError: the spec is a Backend object, or a retry policy is set (neither is data).
        """
        if not isinstance(self.spec, str) or self.retry is not None:
            raise ConvbenchError(f"{self.label}: a role holding a Python object cannot be written as data")
        return {"spec": self.spec, **self.options()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ModelRole:
        """The role of :meth:`to_dict`'s form; an unknown key is refused by name."""
        unknown = [key for key in data if key != "spec" and key not in OPTIONS]
        if unknown:
            raise ConvbenchError(f"unknown model option {unknown[0]!r}; the options: {', '.join(OPTIONS)}")
        return cls(**dict(data))


def role_options() -> list[tuple[str, RoleOption]]:
    """Every option of :class:`ModelRole` with its declaration, in field order."""
    return [(f.name, f.metadata[METADATA]) for f in dataclasses.fields(ModelRole) if METADATA in f.metadata]


OPTIONS: dict[str, RoleOption] = dict(role_options())


def served_kinds() -> str:
    """``openai: and anthropic:``, for messages."""
    return " and ".join(f"{kind}:" for kind in SERVED)


def check_option(name: str, value: Any) -> Any:
    """One option's value checked as :class:`ModelRole` checks it (None stays None).

    Raises:
        OptionProblem: the reason, without the option's name.
    """
    return None if value is None else OPTIONS[name].check(value)


__all__ = ["KINDS", "LOCAL", "OPTIONS", "SERVED", "ModelRole", "OptionProblem", "RoleOption", "check_option",
           "role_options", "served_kinds"]
