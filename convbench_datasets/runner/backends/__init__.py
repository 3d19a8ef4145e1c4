"""Model backends by spec string: ``hf:<path or id>``, ``openai:<model>``, ``anthropic:<model>``, ``baseline:silence|repeat``.

Example:
    >>> backend_from_spec("baseline:repeat").spec
    'baseline:repeat'
"""

from __future__ import annotations

from typing import Any

from ...errors import ConvbenchError
from .base import Backend, Generation, GenerationParams, Messages, check_params, params_from_flags, parse_param

KINDS = ("hf", "openai", "anthropic", "baseline")
SERVED = ("openai", "anthropic")  # kinds behind a server: building one sends nothing


def backend_from_spec(spec: str | Backend, **options: Any) -> Backend:
    """Make a backend from a spec. ``options`` go to the backend that takes them (``base_url``,
    ``concurrency``, ``api_key_env``, ``timeout``, ``model_id``, ``cooldown``, ``max_failures`` for openai;
    ``device``, ``dtype``, ``batch_size``, ``batch_order`` for hf; ``params``, the request fields of
    ``--param``/``--judge-param``, for both); unset (None) options keep the backend's defaults.
    A baseline takes no ``params`` (an error says so).
    For openai, ``base_url`` may name several replicas (a comma-separated string or a list) and
    ``model_id`` names the model for the cache instead of its servers (see
    :meth:`.openai_compat.OpenAICompatBackend.identity`). A Backend object passes through unchanged."""
    if isinstance(spec, Backend):
        return spec
    kind, _, target = spec.partition(":")
    if kind not in KINDS or not target:
        raise ConvbenchError(f"bad model spec {spec!r}: expected one of hf:<path>, openai:<model>, anthropic:<model>, "
                             "baseline:<name>")
    given = {k: v for k, v in options.items() if v is not None}
    if kind == "baseline":
        from .baseline import BaselineBackend

        if given.get("params"):
            raise ConvbenchError(f"{spec} sends no requests: request parameters (--param / --judge-param, "
                                 f"params) do not apply to it")
        return BaselineBackend(target)
    if kind in SERVED:
        from .openai_compat import OpenAICompatBackend

        keys = ("base_url", "concurrency", "api_key_env", "timeout", "retry", "model_id", "cooldown", "max_failures",
                "params")
        if kind == "anthropic":  # the same options: it is the openai backend on Anthropic's wire
            from .anthropic_api import AnthropicBackend

            return AnthropicBackend(target, **{k: v for k, v in given.items() if k in keys})
        return OpenAICompatBackend(target, **{k: v for k, v in given.items() if k in keys})
    from .hf import HFBackend

    keys = ("device", "dtype", "batch_size", "batch_order", "params", "gguf_file")
    return HFBackend(target, **{k: v for k, v in given.items() if k in keys})


def early_backend(spec: str | Backend, **options: Any) -> Backend | None:
    """The backend for ``spec`` if it can be built now, before earlier stages run, to be preflighted
    with them (``stage.complete(..., preflight_also=[...])``): an ``openai:`` or ``anthropic:`` spec (building it sends
    nothing) or a Backend object; None for ``hf:`` (building it loads the weights: it waits for its
    stage) and ``baseline:`` (nothing to check)."""
    if isinstance(spec, Backend):
        return spec
    if spec.partition(":")[0] in SERVED:
        return backend_from_spec(spec, **options)
    return None


__all__ = ["Backend", "Generation", "GenerationParams", "Messages", "backend_from_spec", "check_params",
           "early_backend", "params_from_flags", "parse_param"]
