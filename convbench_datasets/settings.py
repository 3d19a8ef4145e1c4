"""A benchmark's settings, declared once: each field of its settings dataclass carries its help, its flag,
where the run's signature records it, and the paper's value.

Everything else is read from that declaration: the flags of ``convbench run NAME`` and the keys of a sweep
file's benchmark block (:func:`options`), and the departures from the paper's setup that a report flags
(:func:`setting_departures`, read from a run's signature, so that a run re-scored another way is judged by
what it is now). A field declared without the paper's value is refused when its flags are built
(``tests/test_settings_declared.py`` sets every field of every benchmark to another value and checks both
the signature and the flag).

Example:
    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class ToySettings:
    ...     shots: int = setting(0, help="examples in the prompt (default {default})", paper=0, type=int)
    ...     progress_bar: bool = setting(True, help="show a bar", paper=EVERY_VALUE, why="changes no number")
    >>> [o.flag for o in options(ToySettings)]
    ['--shots', '--progress-bar']
    >>> setting_departures(ToySettings, {"shots": 3})
    ['shots 3 (paper: 0)']
    >>> setting_departures(ToySettings, {"shots": 0})
    []
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any


METADATA = "convbench"  # the key of a field's metadata that holds its Declared


@dataclasses.dataclass(frozen=True)
class Option:
    """One setting of a benchmark: a keyword of its run function and a flag of ``convbench run``.

    ``dest`` is the keyword. ``action`` is argparse's (``store_true``) or None for a value;
    ``to_settings`` turns the parsed value into keywords when the flag is not the keyword one to one
    (``--all-lines`` -> ``first_line_only=False``). ``default`` is the run function's default for
    ``dest``, read from its signature (:func:`declare`), so that it is written once.
    """

    flag: str
    dest: str
    help: str
    type: Callable[[str], Any] | None = None
    choices: Sequence[Any] | None = None
    metavar: str | None = None
    action: str | None = None
    to_settings: Callable[[Any], dict[str, Any]] | None = None
    default: Any = None

    def given(self, value: Any) -> bool:
        """Whether a parsed flag value was given (argparse leaves None, or False for ``store_true``)."""
        return not (value is None or (self.action == "store_true" and value is False))

    def settings(self, value: Any) -> dict[str, Any]:
        """The run keywords for a parsed flag value; the run function's default when it was not given."""
        if not self.given(value):
            return {self.dest: self.default}
        return self.to_settings(value) if self.to_settings else {self.dest: value}



class _EveryValue:
    """The ``paper`` of a setting no value of which changes a number (how progress is shown, pipelining)."""

    def __repr__(self) -> str:
        return "EVERY_VALUE"


EVERY_VALUE: Any = _EveryValue()
_UNSET: Any = object()


@dataclasses.dataclass(frozen=True)
class Declared:
    """What a settings field declares besides its default (see :func:`setting`)."""

    help: str
    paper: Any
    key: str | None = None
    signed: Callable[[Any], Any] | None = None
    unrecorded: Any = _UNSET
    describe: Callable[[Any, Any], str] | None = None
    departs: Callable[[Any, Mapping[str, Any], Sequence[Mapping[str, Any]]], str | None] | None = None
    why: str = ""
    source: str = ""
    flag: str | None = None
    type: Callable[[str], Any] | None = None
    choices: Sequence[Any] | None = None
    metavar: str | None = None
    action: str | None = None
    to_settings: Callable[[Any], dict[str, Any]] | None = None
    cli: bool = True
    recorded: bool = True

    def paper_value(self) -> Any:
        """The paper's value; a callable ``paper`` is read now (a fact kept in a data file, read when needed)."""
        return self.paper() if callable(self.paper) and not isinstance(self.paper, _EveryValue) else self.paper


def setting(default: Any = dataclasses.MISSING, *, help: str, paper: Any, key: str | None = None,
            signed: Callable[[Any], Any] | None = None, unrecorded: Any = _UNSET,
            describe: Callable[[Any, Any], str] | None = None,
            departs: Callable[[Any, Mapping[str, Any], Sequence[Mapping[str, Any]]], str | None] | None = None,
            why: str = "", source: str = "", flag: str | None = None, type: Callable[[str], Any] | None = None,
            choices: Sequence[Any] | None = None, metavar: str | None = None, action: str | None = None,
            to_settings: Callable[[Any], dict[str, Any]] | None = None, cli: bool = True, recorded: bool = True,
            default_factory: Any = dataclasses.MISSING) -> Any:
    """A settings dataclass field with its declaration.

    Args:
        default: the run's default (``{default}`` in ``help`` shows it).
        help: the flag's help, the sweep key's meaning.
        paper: the paper's value, in the form the signature records it (after ``signed``); a run whose
            recorded value differs departs from the paper's setup. :data:`EVERY_VALUE` for a setting no value
            of which changes a number (``why`` then says why).
        key: where the signature records it, a dotted path (``generation.max_new_tokens``); default the name.
        signed: the recorded form of a value (a template object -> its name); default the value itself.
        unrecorded: what a signature without the key means (a run written before it was recorded); default
            the paper's value.
        describe: ``(value, paper) -> text`` of the departure; default ``"<name> <value> (paper: <paper>)"``.
        departs: ``(value, signature, records) -> text or None``: for a departure that depends on what the
            run scored (NC-Bench's rules differ on one task only); replaces the comparison with ``paper``.
        source: where the paper's value comes from, for the docs (``§4.1``, ``paper silent: ...``).
        flag, type, choices, metavar, action, to_settings: the ``convbench run`` flag (default
            ``--<name-with-dashes>``); ``to_settings`` turns a parsed flag into settings when it is not the
            field one to one (``--all-lines`` -> ``first_line_only=False``). ``cli=False``: no flag (a
            setting given from Python or a sweep file only).
        recorded: False for a setting the settings do not write into the signature (``why`` says why): one
            that is not part of what made the numbers (pipelining, whose results are the same either way: runs
            differing in it alone stay one run, and their shards merge), or one another part records (the
            metric's own signature). Its departure is still read at ``key``.
    """
    declared = Declared(help=help, paper=paper, key=key, signed=signed, unrecorded=unrecorded, describe=describe,
                        departs=departs, why=why, source=source, flag=flag, type=type, choices=choices,
                        metavar=metavar, action=action, to_settings=to_settings, cli=cli, recorded=recorded)
    if default_factory is not dataclasses.MISSING:
        return dataclasses.field(default_factory=default_factory, metadata={METADATA: declared})
    return dataclasses.field(default=default, metadata={METADATA: declared})


def declared(cls: type) -> list[tuple[dataclasses.Field[Any], Declared]]:
    """The settings fields of a settings dataclass with their declarations, in field order; fields without
    one (a plan's working state, ``dataset``/``sources``) are not settings.

    Raises:
        TypeError: a field that looks like a setting (init, not ``dataset``/``sources``) declares nothing,
            or declares no paper value.
    """
    found = []
    for f in dataclasses.fields(cls):
        info = f.metadata.get(METADATA)
        if info is None:
            if f.init and f.name not in RUN_ARGUMENTS:
                raise TypeError(f"{cls.__name__}.{f.name} is not declared with setting(...): give its help and "
                                "the paper's value")
            continue
        if info.paper is _UNSET:
            raise TypeError(f"{cls.__name__}.{f.name} declares no paper value")
        if not info.recorded and not info.why:
            raise TypeError(f"{cls.__name__}.{f.name}: a setting left out of the run's signature needs why= (it changes "
                            "no number, or another part of the signature records it)")
        if info.paper is EVERY_VALUE and not info.why:
            raise TypeError(f"{cls.__name__}.{f.name}: paper=EVERY_VALUE needs why= (why no value changes a number)")
        found.append((f, info))
    return found


RUN_ARGUMENTS = ("dataset", "sources")  # the run's, passed to every plan beside its settings


def default_of(f: dataclasses.Field[Any]) -> Any:
    """A field's default (None for a required one: the plan refuses it with its own message)."""
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return None


def options(cls: type) -> tuple[Option, ...]:
    """The ``convbench run`` flags (and sweep-file keys) of a settings dataclass, one per declared field
    that has one, its default the field's."""
    made = []
    for f, info in declared(cls):
        if not info.cli:
            continue
        made.append(Option(info.flag or "--" + f.name.replace("_", "-"), f.name, info.help, type=info.type,
                           choices=info.choices, metavar=info.metavar, action=info.action,
                           to_settings=info.to_settings, default=default_of(f)))
    return tuple(made)


def signature_key(f: dataclasses.Field[Any], info: Declared) -> str:
    return info.key or f.name


def recorded_value(signature: Mapping[str, Any], key: str) -> Any:
    """The value at a dotted ``key`` of a signature; :data:`_UNSET` when it is not there."""
    value: Any = signature
    for part in key.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return _UNSET
        value = value[part]
    return value


def signed_settings(settings: Any) -> dict[str, Any]:
    """Every declared setting of a settings object in its signature form, at its key (dotted keys nested):
    the part of a run's signature that its settings write, so that none is left out."""
    fields: dict[str, Any] = {}
    for f, info in declared(type(settings)):
        if not info.recorded:
            continue
        value = getattr(settings, f.name)
        value = info.signed(value) if info.signed is not None else value
        *parents, last = signature_key(f, info).split(".")
        place = fields
        for part in parents:
            place = place.setdefault(part, {})
        place[last] = value
    return fields


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b or (isinstance(a, bool) and isinstance(b, bool) and a == b)
    return bool(a == b)


def setting_departures(cls: type, signature: Mapping[str, Any], records: Sequence[Mapping[str, Any]] = ()) -> list[str]:
    """How a run's recorded settings depart from the paper's, one line each, in field order.

    A setting the signature does not hold counts as its ``unrecorded`` value (default: the paper's)."""
    lines = []
    for f, info in declared(cls):
        if info.paper is EVERY_VALUE:
            continue
        paper = info.paper_value()
        value = recorded_value(signature, signature_key(f, info))
        if value is _UNSET:
            value = paper if info.unrecorded is _UNSET else info.unrecorded
        if info.departs is not None:
            line = info.departs(value, signature, records)
        elif _same(value, paper):
            line = None
        elif info.describe is not None:
            line = info.describe(value, paper)
        else:
            line = f"{f.name} {_shown(value)} (paper: {_shown(paper)})"
        if line:
            lines.append(line)
    return lines


def _shown(value: Any) -> str:
    return "none" if value is None else str(value)


def positive(text: str) -> int:
    """A flag value that must be a whole number of at least 1."""
    import argparse

    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def non_negative(text: str) -> int:
    """A flag value that must be a whole number of at least 0."""
    import argparse

    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


__all__ = ["EVERY_VALUE", "Option", "non_negative", "positive", "Declared", "declared", "default_of", "options", "recorded_value", "setting",
           "setting_departures", "signed_settings"]
