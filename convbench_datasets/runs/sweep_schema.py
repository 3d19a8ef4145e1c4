"""The pydantic models a sweep file's top level and its models and judges are validated against, built from the
model roles' declarations (:data:`.backends.roles.OPTIONS`): a role option is a key of a model's mapping (and,
where it says so, of the top level, as every model's default) and is checked by the role's own check.

pydantic reports every problem at once with its key path; :func:`problems` turns them into convbench's lines
(``models[1].base_url: ...``) from ``errors(include_input=False)``, so that a mistyped key or a value (perhaps a
key pasted in the wrong place) is never echoed back. A benchmark's block is checked by its settings (see
:mod:`.sweep_file`).

Example:
    >>> problems(MODEL_ENTRY, {"spec": "openai:m", "base_url": "", "api_kye_env": "X"}, "models[1]")
    ['models[1].base_url: expected a URL, a comma list of replicas or a list of them, got an empty string', "models[1].api_kye_env: unknown key; a model's keys: spec, name, model_id, params, base_url, concurrency, timeout, stall_timeout, api_key_env, device, dtype, batch_size, batch_order"]
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pydantic

from ..engine.backends.roles import OptionProblem, check_option, role_options

# the role options a sweep file's top level sets for every model and judge, and a model's or judge's own keys
DEFAULT_KEYS = tuple(name for name, option in role_options() if option.sweep_default)
OWN_KEYS = tuple(name for name, option in role_options() if option.sweep and not option.sweep_default)
MODEL_KEYS = ("spec", "name", *OWN_KEYS, *DEFAULT_KEYS)
FILE_KEYS = ("out", "cache", "sources", "limit", "retry_errors", "max_error_rate", "max_empty_rate", "max_unparsed_rate",
             "models", "judges", "benchmarks", *DEFAULT_KEYS)


def _checked(name: str) -> Any:
    """A field validator running role option ``name``'s own check (None: not given)."""
    def check(value: Any) -> Any:
        try:
            return check_option(name, value)
        except OptionProblem as err:
            raise ValueError(str(err)) from None
    return pydantic.field_validator(name)(classmethod(lambda cls, value: check(value)))


def _model(title: str, keys: tuple[str, ...], **fields: Any) -> type[pydantic.BaseModel]:
    """A pydantic model refusing unknown keys, with one checked field per role option in ``keys``."""
    validators = {f"check_{name}": _checked(name) for name in keys if name in dict(role_options())}
    definitions = {**{name: (Any, None) for name in keys if name not in fields}, **fields}
    return pydantic.create_model(title, __config__=pydantic.ConfigDict(extra="forbid"),  # type: ignore[call-overload]
                                 __validators__=validators, **definitions)


MODEL_ENTRY = _model("ModelEntry", MODEL_KEYS, spec=(Any, None), name=(Any, None))
FILE_TOP = _model("SweepFile", FILE_KEYS)
_WHOSE = {MODEL_ENTRY: ("a model's keys", MODEL_KEYS), FILE_TOP: ("the keys of a sweep file", FILE_KEYS)}


def validate(model: type[pydantic.BaseModel], data: Mapping[str, Any],
             where: str = "") -> tuple[pydantic.BaseModel | None, list[str]]:
    """``data`` validated by ``model``, or None and every problem found, one line each under its key path
    (``where`` before it)."""
    try:
        return model.model_validate(dict(data)), []
    except pydantic.ValidationError as err:
        return None, [_line(model, error, where) for error in err.errors(include_input=False, include_url=False)]


def problems(model: type[pydantic.BaseModel], data: Mapping[str, Any], where: str = "") -> list[str]:
    """Every problem ``model`` finds in ``data`` (see :func:`validate`)."""
    return validate(model, data, where)[1]


def _line(model: type[pydantic.BaseModel], error: Any, where: str) -> str:
    path = ".".join(str(part) for part in error["loc"])
    path = f"{where}.{path}" if where and path else where or path
    if error["type"] == "extra_forbidden":
        whose, keys = _WHOSE[model]
        message = f"unknown key; {whose}: {', '.join(keys)}"
    else:  # a role option's own check: its message as it wrote it
        message = str(error["msg"]).removeprefix("Value error, ")
    return f"{path}: {message}" if path else message


__all__ = ["DEFAULT_KEYS", "FILE_KEYS", "FILE_TOP", "MODEL_ENTRY", "MODEL_KEYS", "OWN_KEYS", "problems", "validate"]
