"""Model backends by spec string: ``hf:<path or id>``, ``openai:<model>``, ``anthropic:<model>``, ``baseline:silence|repeat``.

Example:
    >>> backend_from_spec("baseline:repeat").spec
    'baseline:repeat'
"""

from __future__ import annotations

from typing import Any

from ...errors import ConvbenchError
from .base import Backend, Generation, GenerationParams, Messages, check_params, params_from_flags, parse_param
from .roles import KINDS, OPTIONS, SERVED, ModelRole

def backend_from_spec(spec: str | Backend | ModelRole, **options: Any) -> Backend:
    """Make a backend from a spec (or a :class:`~.roles.ModelRole`) and its options (:data:`.roles.OPTIONS`:
    ``base_url``, ``model_id``, ``params``, ``concurrency``, ``timeout``, ``api_key_env`` for the served kinds;
    ``device``, ``dtype``, ``batch_size``, ``batch_order``, ``params`` for hf); unset (None) options keep the
    backend's defaults, and an option another kind takes is not passed. A baseline takes no ``params`` (an
    error says so). For openai, ``base_url`` may name several replicas (a comma-separated string or a list)
    and ``model_id`` names the model for the cache instead of its servers (see
    :meth:`.openai_compat.OpenAICompatBackend.identity`). A Backend object passes through unchanged."""
    if isinstance(spec, Backend):
        return spec
    role = spec if isinstance(spec, ModelRole) else make_role(spec, options)
    if isinstance(role.spec, Backend):
        return role.spec
    kind, _, target = role.spec.partition(":")
    if kind not in KINDS or not target:
        raise ConvbenchError(f"bad model spec {role.spec!r}: expected one of hf:<path>, openai:<model>, "
                             "anthropic:<model>, baseline:<name>")
    given = role.backend_options()
    if kind == "baseline":
        from .baseline import BaselineBackend

        return BaselineBackend(target)
    if kind == "anthropic":  # the openai backend on Anthropic's wire: the same options
        from .anthropic_api import AnthropicBackend

        return AnthropicBackend(target, **given)
    if kind in SERVED:
        from .openai_compat import OpenAICompatBackend

        return OpenAICompatBackend(target, **given)
    from .hf import HFBackend

    return HFBackend(target, **given)


def make_role(spec: str | Backend, options: dict[str, Any] | None = None) -> ModelRole:
    """``ModelRole(spec, **options)``, an option it does not know refused by name (never dropped)."""
    options = {k: v for k, v in (options or {}).items() if v is not None}
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise ConvbenchError(f"{spec if isinstance(spec, str) else 'a backend'}: unknown backend option "
                             f"{unknown[0]!r}; the options: {', '.join(OPTIONS)}")
    return ModelRole(spec, **options)


def early_backend(spec: str | Backend | ModelRole, **options: Any) -> Backend | None:
    """The backend for ``spec`` if it can be built now, before earlier stages run, to be preflighted
    with them (``stage.complete(..., preflight_also=[...])``): an ``openai:`` or ``anthropic:`` spec (building it sends
    nothing) or a Backend object; None for ``hf:`` (building it loads the weights: it waits for its
    stage) and ``baseline:`` (nothing to check)."""
    role = spec if isinstance(spec, ModelRole) else make_role(spec, options)
    if isinstance(role.spec, Backend):
        return role.spec
    if role.kind in SERVED:
        return backend_from_spec(role)
    return None


__all__ = ["KINDS", "SERVED", "Backend", "Generation", "GenerationParams", "Messages", "ModelRole", "backend_from_spec",
           "check_params", "early_backend", "make_role", "params_from_flags", "parse_param"]
