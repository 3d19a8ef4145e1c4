"""A small server on 127.0.0.1 that behaves like Anthropic's Messages API (``POST /v1/messages``,
``GET /v1/models``), for the anthropic backend's tests: point the official client's base_url at it.

As Anthropic's API does, it refuses (HTTP 400, ``invalid_request_error``) a request without ``max_tokens``,
one with a ``system`` role inside ``messages`` (the system prompt is the top-level ``system``), and fields
the API does not have (``presence_penalty``, ``max_completion_tokens``); a key other than ``state.key``
(``x-api-key``, or ``Authorization: Bearer``, which newer clients send) gets 401. The model name picks the behaviour:
- ``claude-echo``: the last user message, ``stop_reason: "end_turn"``; ``claude-system``: the system prompt;
- ``claude-overloaded``: the first request per body gets 529 ``overloaded_error``, later ones echo;
- ``claude-429``: the first request per body gets 429 with ``Retry-After: 3``, later ones echo;
- ``claude-refuse``: 400 for the rows whose last message holds ``refuse``, else echo;
- ``claude-refusal``: ``stop_reason: "refusal"`` with no text for those rows;
- ``claude-empty-cut``: no text, ``stop_reason: "max_tokens"``, for those rows;
- ``claude-missing``: 404 ``not_found_error`` for every request;
- ``claude-surrogate``: for those rows, the echo with a lone surrogate (JSON ``\\ud800``) in it;
- ``claude-empty``: ``content: []`` with ``stop_reason: "end_turn"`` for those rows; ``state.empty``: for every row;
- ``claude-truncated`` / ``claude-html``: the first request per body gets, with status 200, a reply cut in the
  middle of its JSON / an HTML page (a proxy's); later ones echo. ``-always`` after either: every request.
Every request's JSON body is kept in ``state.bodies`` and the key it sent in ``state.keys``.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from tests.support.openai_server import KeepAliveHandler, send_reply

ALLOWED = {"model", "messages", "max_tokens", "system", "temperature", "top_p", "top_k", "stop_sequences",
           "metadata", "thinking", "stream", "tools", "tool_choice", "service_tier"}


@dataclass
class AnthropicState:
    key: str = "sk-ant-test"
    bodies: list[dict] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)
    gets: int = 0
    empty: bool = False  # every reply is empty (content: [], end_turn)
    seen: set[str] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _handler(state: AnthropicState) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(KeepAliveHandler):

        def _error(self, code: int, kind: str, message: str, headers: dict | None = None) -> None:
            self._json(code, {"type": "error", "error": {"type": kind, "message": message}}, headers)

        def _sent_key(self) -> str:
            return self.headers.get("x-api-key") or self.headers.get("Authorization", "").removeprefix("Bearer ")

        def _key_ok(self) -> bool:
            sent = self._sent_key()
            if sent == state.key:
                return True
            self._error(401, "authentication_error", "invalid x-api-key")
            return False

        def do_GET(self) -> None:  # noqa: N802
            with state.lock:
                state.gets += 1
            if not self._key_ok():
                return
            self._json(200, {"data": [{"id": "claude-echo", "type": "model"}], "has_more": False,
                             "first_id": "claude-echo", "last_id": "claude-echo"})

        def do_POST(self) -> None:  # noqa: N802
            raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            request = json.loads(raw)
            sha = hashlib.sha256(raw).hexdigest()
            with state.lock:
                state.bodies.append(request)
                state.keys.append(self._sent_key())
                first = sha not in state.seen
                state.seen.add(sha)
            if not self._key_ok():
                return
            if "max_tokens" not in request:
                return self._error(400, "invalid_request_error", "max_tokens: Field required")
            extra = sorted(set(request) - ALLOWED)
            if extra:
                return self._error(400, "invalid_request_error", f"{extra[0]}: Extra inputs are not permitted")
            if any(m.get("role") == "system" for m in request["messages"]):
                return self._error(400, "invalid_request_error", "messages: Unexpected role \"system\". The Messages "
                                   "API accepts a top-level `system` parameter, not \"system\" as an input message role.")
            model = request["model"]
            last = request["messages"][-1]["content"]
            hit = "refuse" in last
            broken = model.removesuffix("-always")
            if broken in ("claude-truncated", "claude-html") and (first or model.endswith("-always")):
                body = (b'{"id": "msg_test", "type": "message", "content": [{"type": "te' if broken == "claude-truncated"
                        else b"<html><body>502 Bad Gateway (proxy)</body></html>")
                return send_reply(self, 200, body, {"Content-Type": "application/json" if broken == "claude-truncated"
                                                    else "text/html"})
            if model == "claude-missing":
                return self._error(404, "not_found_error", f"model: {model}")
            if model == "claude-overloaded" and first:
                return self._error(529, "overloaded_error", "Overloaded")
            if model == "claude-429" and first:
                return self._error(429, "rate_limit_error", "slow down", {"Retry-After": "3"})
            if model == "claude-refuse" and hit:
                return self._error(400, "invalid_request_error", "prompt is too long: 300000 tokens > 200000 maximum")
            text, stop = (request.get("system", "") if model == "claude-system" else last), "end_turn"
            if model == "claude-refusal" and hit:
                text, stop = "", "refusal"
            if model == "claude-empty-cut" and hit:
                text, stop = "", "max_tokens"
            if state.empty or (model == "claude-empty" and hit):
                text = ""
            if model == "claude-surrogate" and hit:
                text = f"{last} \ud800 end"  # json.dumps escapes the lone surrogate: valid JSON, not valid text
            self._json(200, {"id": "msg_test", "type": "message", "role": "assistant", "model": model,
                             "content": [{"type": "text", "text": text}] if text else [],
                             "stop_reason": stop, "stop_sequence": None,
                             "usage": {"input_tokens": len(raw) // 4, "output_tokens": len(text.split())}})

        def _json(self, code: int, payload: dict, headers: dict | None = None) -> None:
            send_reply(self, code, json.dumps(payload).encode(), headers)

        def log_message(self, *args: object) -> None:
            pass

    return Handler


@contextmanager
def anthropic_server(state: AnthropicState | None = None) -> Iterator[tuple[str, AnthropicState]]:
    """Serve on 127.0.0.1 (a free port); yields (base_url for the client, state)."""
    state = state or AnthropicState()
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", state
    finally:
        httpd.shutdown()
        httpd.server_close()
