"""The model roles' flags of ``convbench run``, read from their declarations
(:data:`convbench_datasets.engine.backends.roles.OPTIONS`), and the roles a command line makes."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from ..errors import ConvbenchError
from ._parsing import _flag_attr


def _add_role_options(run: argparse.ArgumentParser) -> None:
    """The model roles' flags, read from their declarations (:data:`.engine.backends.roles.OPTIONS`): a flag for the
    generator (every role's, unless the judges have their own) and the judges' own flag where there is one."""
    from ..engine.backends.roles import role_options

    for name, option in role_options():
        for flag, text, repeated in ((option.flag, option.flag_help, option.repeated),
                                     (option.judge_flag, option.judge_help, True)):
            if flag is None:
                continue
            kwargs: dict[str, Any] = {"dest": _flag_attr(flag), "help": (text or option.help).replace("%", "%%"),
                                      "metavar": option.metavar, "type": option.type, "choices": option.choices}
            if repeated:
                kwargs["action"] = "append"
            run.add_argument(flag, **{k: v for k, v in kwargs.items() if v is not None})


def _role_values(args: argparse.Namespace, judge: bool) -> dict[str, Any]:
    """Each role option's parsed flag value for the generator's role or (``judge``) the judges': the judges' own
    flag where they have one (as given: a list when repeated), else the flag every role shares; without
    --judge-base-url the judges use --base-url. Request params are parsed from KEY=VALUE."""
    from ..engine.backends.roles import role_options

    values: dict[str, Any] = {}
    for name, option in role_options():
        if option.flag is None:
            continue
        value = getattr(args, _flag_attr(option.flag))
        flag = option.flag
        if judge and option.judge_flag is not None:
            flag, own = option.judge_flag, getattr(args, _flag_attr(option.judge_flag))
            value = (own or value) if name == "base_url" else own
        values[name] = _params(value, flag) if name == "params" else value
    return values


def _params(values: Sequence[str] | None, flag: str) -> dict[str, Any] | None:
    """The request fields of repeated ``flag KEY=VALUE`` options, checked (a one-line error names ``flag``)."""
    from ..engine.backends import check_params, params_from_flags

    try:
        return check_params(params_from_flags(values, flag), flag)
    except ValueError as err:
        raise ConvbenchError(str(err)) from None


def _model_role(args: argparse.Namespace) -> Any:
    """The generator's role from the flags; --model-id only for a model behind a server (openai:, anthropic:)."""
    from ..engine.backends import SERVED, make_role
    from ..engine.backends.roles import served_kinds

    values = _role_values(args, judge=False)
    if values["model_id"] is not None and args.model.partition(":")[0] not in SERVED:
        raise ConvbenchError(f"--model-id applies to {served_kinds()} models only, not {args.model}")
    return make_role(args.model, values)


def _judge_roles(args: argparse.Namespace) -> list[Any]:
    """The judges' roles. With one --judge every --judge-base-url value (each perhaps a comma list) is a replica
    of it. With several, a judge's own repeated flag (--judge-base-url, --judge-model-id) is given once (for
    every judge; a comma list of URLs is one replica pool they all use) or once per --judge, in order (one
    value, perhaps a comma list, per judge); other counts are errors. Other flags (--timeout...) are every role's."""
    from ..engine.backends import SERVED, make_role
    from ..engine.backends.roles import role_options, served_kinds

    judges, values = args.judge, _role_values(args, judge=True)
    each: dict[str, list[Any]] = {}  # option -> one value per judge
    for name, option in role_options():
        if option.judge_flag is None or name == "params":
            continue
        given = values[name] or []
        if name == "base_url" and len(judges) == 1:
            continue  # every value a replica of the one judge
        if len(given) > 1 and len(given) != len(judges) and getattr(args, _flag_attr(option.judge_flag)):
            raise ConvbenchError(f"{option.judge_flag} is given {len(given)} times for {len(judges)} --judge: give it "
                                 "once (for every judge) or once per --judge, in the same order")
        if len(given) == len(judges) > 1 and getattr(args, _flag_attr(option.judge_flag)):
            each[name] = list(given)
        elif name == "model_id":
            values[name] = given[0] if given else None
    if args.judge_model_id and not any(spec.partition(":")[0] in SERVED for spec in judges):
        raise ConvbenchError(f"--judge-model-id applies to {served_kinds()} judges only, not {', '.join(judges)}")
    roles = []
    for k, spec in enumerate(judges):
        mine = {**values, **{name: per[k] for name, per in each.items()}}
        if spec.partition(":")[0] not in SERVED:  # another judge's name for the cache is not this one's
            mine["model_id"] = None
        roles.append(make_role(spec, mine))
    return roles
