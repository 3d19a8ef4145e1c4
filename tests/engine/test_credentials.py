"""Keys never reach a message, a lookup or a file (issue 19): --api-key-env takes a variable's name only, flags
are never read by prefix, and a base URL with user-info is refused before anything is sent or looked up."""

from __future__ import annotations

import argparse
import socket
from pathlib import Path
from typing import Any

import pytest

from convbench_datasets.cli import _parser, main
from convbench_datasets.errors import ConvbenchError
from convbench_datasets.engine.backends import backend_from_spec
from convbench_datasets.engine.backends.endpoints import endpoint_urls, public_url
from convbench_datasets.engine.backends.openai_compat import OpenAICompatBackend
from convbench_datasets.engine.redact import redact
from convbench_datasets.runs.sweep_file import read_sweep

KEY = "sk-proj-Zq8XbT0dEaDbEeF"  # what a user pastes


def _parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    found = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found += _parsers(sub)
    return found


def test_no_parser_reads_a_flag_by_its_prefix() -> None:
    parsers = _parsers(_parser())
    assert len(parsers) > 10 and all(not p.allow_abbrev for p in parsers)


@pytest.mark.parametrize("flag", ["--api-key", "--api-key-e", "--api_key", "--API-KEY", "--token", "--key"])
def test_a_key_flag_is_refused_without_showing_the_key(flag: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["run", "nc", "--model", "openai:m", "--judge", "baseline:smoke-judge", "--out", "x", flag, KEY]
    assert main(argv) == 1
    assert main([*argv[:-2], f"{flag}={KEY}"]) == 1
    err = capsys.readouterr().err
    assert f"there is no {flag} flag" in err and "--api-key-env NAME" in err and KEY not in err


@pytest.mark.parametrize("name", [KEY, "1KEY", "MY-KEY", "", "A B", 7])
def test_a_key_env_that_is_no_variable_name_is_refused_unshown(name: Any) -> None:
    for make in (lambda: OpenAICompatBackend("m", base_url="http://127.0.0.1:1/v1", api_key_env=name),
                 lambda: backend_from_spec("openai:m", base_url="http://127.0.0.1:1/v1", api_key_env=name)):
        with pytest.raises(ConvbenchError, match=r"^api_key_env \(--api-key-env\) names the environment variable") as err:
            make()
        assert (str(name) not in str(err.value)) if str(name) else True
    OpenAICompatBackend("m", base_url="http://127.0.0.1:1/v1", api_key_env="_My_Key2")  # a name: taken


def test_the_cli_refuses_a_key_given_as_the_variable_name(tmp_path: Path, nc_built: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "nc", "--model", "openai:m", "--judge", "baseline:smoke-judge", "--out", str(tmp_path / "r"),
                 "--dataset", str(nc_built), "--base-url", "http://127.0.0.1:1/v1", "--api-key-env", KEY,
                 "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "api_key_env (--api-key-env)" in err and KEY not in err
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("url", [f"http://user:{KEY}@example.invalid/v1", f"http://{KEY}@example.invalid:8000/v1",
                                 f"https://u:{KEY}@[::1]:8443/v1", f"http://127.0.0.1:1/v1,http://u:{KEY}@b.invalid/v1"])
def test_a_url_with_user_info_is_refused_before_any_lookup(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    looked_up: list[Any] = []
    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: looked_up.append(a) or [])
    with pytest.raises(ConvbenchError, match="carries user-info") as err:
        OpenAICompatBackend("m", base_url=url)
    message = str(err.value)
    assert KEY not in message and "u:" not in message and "--api-key-env" in message
    assert looked_up == []


def test_url_messages_never_quote_user_info_or_a_bad_port() -> None:
    with pytest.raises(ConvbenchError, match="port that is not a number") as err:
        endpoint_urls(f"http://host:{KEY}/v1")  # a key typed where the port goes
    assert KEY not in str(err.value)
    with pytest.raises(ConvbenchError, match="empty entry") as err:
        endpoint_urls(f"http://a/v1,,http://u:{KEY}@b/v1")
    assert KEY not in str(err.value)
    assert public_url(f"http://u:{KEY}@[::1]:80/v1?k={KEY}") == "http://[::1]:80/v1"


def test_openai_base_url_from_the_environment_is_checked_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://u:{KEY}@example.invalid/v1")
    with pytest.raises(ConvbenchError, match=r"^\$OPENAI_BASE_URL: base URL http://example.invalid/v1 carries") as err:
        endpoint_urls(None)
    assert KEY not in str(err.value)


def test_echoed_user_info_is_redacted() -> None:
    assert redact(f"cannot reach https://user:{KEY}@host/v1: refused") == "cannot reach https://[redacted]@host/v1: refused"


def test_a_sweep_file_refuses_user_info_and_a_key_as_the_variable_name() -> None:
    sweep = {"out": "x", "models": [{"spec": "openai:m", "base_url": f"http://u:{KEY}@host/v1"}],
             "api_key_env": KEY, "benchmarks": {"nico": {"task": "open_domain"}}}
    with pytest.raises(ConvbenchError) as err:
        read_sweep(sweep)
    message = str(err.value)
    assert "models[0].base_url: base URL http://host/v1 carries user-info" in message
    assert "api_key_env: api_key_env (--api-key-env) names" in message
    assert KEY not in message


@pytest.mark.parametrize("name", ["gsk_8Hq2mZ0aLxQwErTy", "hf_AbCdEfGhIjKlMnOpQrStUv", "sk_live_51Hx", "Ab3dEf6hIj9kLm"])
def test_a_key_that_is_a_valid_variable_name_is_never_shown_in_the_401_hint(name: str,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    # reported: a Groq or Hugging Face key given to --api-key-env is a valid variable name, was accepted, and was
    # printed back in the hint of the server's 401 ("$gsk_... is not set")
    from convbench_datasets.engine.backends.openai_compat import BackendError, OpenAICompatBackend
    from tests.support.openai_server import ServerState, openai_server

    monkeypatch.delenv(name, raising=False)
    with openai_server(ServerState(require_key="the-right-key")) as (url, _):
        with pytest.raises(BackendError) as caught:
            OpenAICompatBackend("label", base_url=url, api_key_env=name).preflight()
    assert "401" in str(caught.value) and name not in str(caught.value)
    assert "the variable given to --api-key-env (not shown: it looks like a key) is not set" in str(caught.value)
    # a variable's name is shown as it is
    monkeypatch.delenv("MY_GROQ_KEY", raising=False)
    with openai_server(ServerState(require_key="the-right-key")) as (url, _):
        with pytest.raises(BackendError, match=r"\$MY_GROQ_KEY is not set"):
            OpenAICompatBackend("label", base_url=url, api_key_env="MY_GROQ_KEY").preflight()
