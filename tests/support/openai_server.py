"""A small OpenAI-compatible server on 127.0.0.1 for tests and benchmarks.

The model name picks the behaviour (answers are deterministic functions of the request):
- ``echo``: the last user message, verbatim;
- ``label``: a label chosen by a hash of the messages, from LABELS (one of them is not a label);
- ``fail429`` / ``fail500``: the first request for each distinct body fails with that status
  (429 carries ``Retry-After: 0``), later ones answer like ``label``;
- ``malformed``: the first request per body gets invalid JSON; ``malformed-always``: every request;
- ``slow``: the first request per body sleeps ``slow_seconds`` before answering;
- ``unauthorized``: 401 with an OpenAI-style error body;
- ``delay``: every request sleeps ``delay_seconds``, then answers like ``label``;
- ``retryafter``: the first request per body gets 429 with ``Retry-After: 3``, then answers like ``label``;
- ``refuse``: 400 (a context-length error) for the rows :func:`affected` picks, else ``label``;
- ``refuse404`` / ``refuse422``: the same with 404 / 422; ``refuse-echo``: the same 400, whose message
  echoes the request's Authorization header (as some servers do);
- ``filtered``: ``finish_reason: "content_filter"`` (content null) for the same rows; ``filtered400``:
  HTTP 400 with an Azure-style content-filter error for them;
- ``null``: ``message.content: null`` for the same rows; ``nochoices``: ``choices: []`` for them;
  ``null-once``: content null on the first request per body only, then ``label``;
- ``length``: ``label`` cut short, with ``finish_reason: "length"``, for the same rows; ``blank-length``:
  ``content: ""`` with ``finish_reason: "length"`` for them (a reasoning model out of tokens);
- ``reject-param``: the same HTTP 400 for every request (a parameter the model does not take);
- echoes of the key sent (``Authorization`` without ``Bearer``, three times, as some servers quote it):
  ``malformed-echo``: invalid JSON on every request; ``nochoices-echo``: ``choices: []`` with the echo,
  for the affected rows; ``badstatus-echo``: a broken HTTP status line, then the connection closes;
- ``trickle``: the whole reply (status line included) sent one byte every ``trickle_seconds``;
- ``redirect``: 302 to ``state.redirect_to``;
- an OpenAI reasoning model's name (``o1``, ``o3``, ``o4-mini``...: ``o`` and a digit; ``gpt-5``...) behaves like one:
  ``max_tokens``, a temperature other than 1, ``presence_penalty`` or ``frequency_penalty`` get OpenAI's
  HTTP 400 for them; its hidden reasoning spends ``state.reasoning_tokens`` of ``max_completion_tokens``
  first (reported in ``usage.completion_tokens_details``), and when the rest cannot hold the answer the
  reply is ``content: ""`` with ``finish_reason: "length"``, as OpenAI's is; otherwise it answers like ``label``.

``state.answer``: when set, a function of the request (the parsed JSON body) giving the content of every
reply that would be ``label``'s (a scripted model behind a real HTTP client).

``state.require_key``: when set, every request (``GET /models`` too) whose ``Authorization`` is not
``Bearer <require_key>`` gets 401 with OpenAI's wording, echoing the key it was sent.
``state.hold``: when set to a threading.Event, every chat request (any model) is counted, then waits
until the event is set (at most 30 s) before it is answered: a replica kept busy for as long as a test needs.
``state.in_flight`` counts the chat requests being answered now, ``state.peak`` the most there were at once
(over every model), ``state.peaks`` the same per model: what a client's concurrency limit is checked by.
``GET /v1/models`` lists ``state.models`` (default: none, as some servers do). ``state.strict_models``:
a request for a model not listed gets vLLM's 404 (by default any name is served, as TGI does).
``state.broken``: a replica broken whatever the model is: ``"404"``, vLLM's 404 for every chat request
(with no ``models``: a replica that lists none and answers 404 to everything); ``"400"``, the same 400
for every request; ``"nochoices"``, ``choices: []`` in every reply.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

LABELS = ["Answer", "Repeat", "PreClosing", "Silence", "Definition", "I am not sure"]
REASONING_MODEL = re.compile(r"o\d|gpt-5")  # OpenAI's reasoning models: o1, o3-mini, o4-mini, gpt-5-mini...


def reasoning_refusal(request: dict) -> str | None:
    """OpenAI's HTTP 400 message for a request a reasoning model does not take, or None."""
    if "max_tokens" in request:
        return "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead."
    if "temperature" in request and request["temperature"] != 1:
        return (f"Unsupported value: 'temperature' does not support {request['temperature']} with this model. "
                "Only the default (1) value is supported.")
    for name in ("presence_penalty", "frequency_penalty"):
        if name in request:
            return f"Unsupported parameter: '{name}' is not supported with this model."
    return None


@dataclass
class ServerState:
    slow_seconds: float = 1.0
    redirect_to: str = ""
    delay_seconds: float = 0.0
    trickle_seconds: float = 1.0
    require_key: str | None = None
    models: list[str] = field(default_factory=list)
    strict_models: bool = False
    broken: str | None = None
    hold: threading.Event | None = None
    answer: Callable[[dict], str] | None = None
    reasoning_tokens: int = 2000  # what a reasoning model's hidden reasoning spends of max_completion_tokens
    gets: int = 0  # GET /models requests (preflights)
    requests: list[tuple[str, str]] = field(default_factory=list)  # (model, body sha)
    bodies: list[dict] = field(default_factory=list)  # each chat request's parsed JSON body (parallel to requests)
    arrived: list[float] = field(default_factory=list)  # time.monotonic() of each chat request (parallel to requests)
    authorizations: list[str] = field(default_factory=list)
    in_flight: dict[str, int] = field(default_factory=dict)  # chat requests being answered now, per model
    peak: int = 0  # the most chat requests answered at once, every model together
    peaks: dict[str, int] = field(default_factory=dict)  # the same per model
    seen: set[str] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, model: str | None = None) -> int:
        with self.lock:
            return sum(1 for m, _ in self.requests if model is None or m == model)


def label_for(messages: list[dict]) -> str:
    digest = hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).digest()
    return LABELS[digest[0] % len(LABELS)]


def affected(messages: list[dict]) -> bool:
    """The rows the per-row faults hit: about a quarter, fixed by the messages (whatever the model)."""
    return hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()[0] in "0123"


class KeepAliveHandler(http.server.BaseHTTPRequestHandler):
    """The test servers' request handler: HTTP/1.1 keep-alive, as API servers are; TCP_NODELAY, since a reply's
    headers and body are two writes and Nagle's algorithm held the body ~40 ms for the client's delayed ACK."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True


def _handler(state: ServerState) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(KeepAliveHandler):

        def _key_refused(self) -> bool:
            sent = self.headers.get("Authorization", "")
            if state.require_key is None or sent == f"Bearer {state.require_key}":
                return False
            # OpenAI's own wording, with the key it was sent (masked there; echoed whole by some servers)
            self._json(401, {"error": {"message": f"Incorrect API key provided: {sent or 'none'}",
                                       "type": "invalid_request_error"}})
            return True

        def do_GET(self) -> None:  # noqa: N802
            with state.lock:
                state.gets += 1
            if self._key_refused():
                return
            if self.path.rstrip("/").endswith("/models"):
                return self._json(200, {"object": "list", "data": [{"id": m, "object": "model"} for m in state.models]})
            return self._json(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:  # noqa: N802
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            request = json.loads(body)
            model = request["model"]
            with state.lock:
                state.in_flight[model] = state.in_flight.get(model, 0) + 1
                state.peaks[model] = max(state.peaks.get(model, 0), state.in_flight[model])
                state.peak = max(state.peak, sum(state.in_flight.values()))
            self._counted = model
            try:
                self._answer(body, request)
            finally:
                self._answered()

        def _answered(self) -> None:
            """The request leaves ``in_flight`` as its reply goes out, not after: a client that has read the
            reply may send its next request before this thread runs again, and would be counted twice."""
            model, self._counted = getattr(self, "_counted", None), None
            if model is not None:
                with state.lock:
                    state.in_flight[model] -= 1

        def _answer(self, body: bytes, request: dict) -> None:
            model, messages = request["model"], request["messages"]
            sha = hashlib.sha256(body).hexdigest()
            with state.lock:
                state.requests.append((model, sha))
                state.bodies.append(request)
                state.arrived.append(time.monotonic())
                state.authorizations.append(self.headers.get("Authorization", ""))
                first = sha not in state.seen
                state.seen.add(sha)
            kind = model.split(":")[0]
            if state.hold is not None:
                state.hold.wait(30)
            if self._key_refused():
                return
            hit = affected(messages)
            key = self.headers.get("Authorization", "").removeprefix("Bearer ")
            echo = f"key {key} rejected; key {key} unknown; key {key}"
            if state.broken == "404" or (state.strict_models and model not in state.models):
                return self._json(404, {"error": {"message": f"The model `{model}` does not exist.",
                                                  "type": "NotFoundError", "code": 404}})
            if state.broken == "500":  # a server whose model died: every request fails
                return self._json(500, {"error": {"message": "the model is not running"}})
            if state.broken == "400":
                return self._json(400, {"error": {"message": "bad request"}})
            if state.broken == "nochoices":
                return self._json(200, {"id": "cmpl-test", "choices": []})
            if kind == "surrogate" and hit:  # a lone surrogate, as JSON escapes it: valid JSON, not valid text
                return self._json(200, {"choices": [{"index": 0, "finish_reason": "stop", "message": {
                    "role": "assistant", "content": f"{label_for(messages)} \ud800 end"}}]})
            if state.broken == "empty" or (kind == "empty" and hit):  # what a reasoning parser that moved it all leaves
                return self._json(200, {"choices": [{"index": 0, "finish_reason": "stop", "message": {
                    "role": "assistant", "content": "", "reasoning_content": "the answer is in here"}}]})
            if REASONING_MODEL.match(model):
                return self._reasoning(request)
            if kind == "reject-param":
                return self._json(400, {"error": {"message": "Unsupported parameter: 'max_tokens' is not supported "
                                                  "with this model. Use 'max_completion_tokens' instead."}})
            if kind == "malformed-echo":
                return self._raw(200, f"<html>{echo}</html>".encode())
            if kind == "nochoices-echo" and hit:
                return self._json(200, {"choices": [], "detail": echo})
            if kind == "badstatus-echo":
                self.wfile.write(f"HTTP/1.1 abc {echo}\r\n\r\n".encode())
                self.close_connection = True
                return None
            if kind == "blank-length" and hit:
                return self._json(200, {"choices": [{"index": 0, "finish_reason": "length", "message": {
                    "role": "assistant", "content": ""}}]})
            if kind == "trickle":
                return self._trickle(label_for(messages))
            if kind in ("refuse404", "refuse422") and hit:
                return self._json(int(kind[-3:]), {"error": {"message": "this prompt cannot be served"}})
            if kind == "refuse-echo" and hit:
                sent = self.headers.get("Authorization", "")
                return self._json(400, {"error": {"message": f"bad request (Authorization: {sent}) for key {sent[7:]}"}})
            if kind == "filtered400" and hit:
                return self._json(400, {"error": {"code": "content_filter", "message":
                                                  "The response was filtered due to the prompt triggering Azure "
                                                  "OpenAI's content management policy."}})
            if (kind in ("filtered", "null") and hit) or (kind == "null-once" and first):
                finish = "content_filter" if kind == "filtered" else "stop"
                return self._json(200, {"choices": [{"index": 0, "message": {"role": "assistant", "content": None},
                                                     "finish_reason": finish}]})
            if kind == "nochoices" and hit:
                return self._json(200, {"id": "cmpl-test", "choices": []})
            if kind == "length" and hit:
                return self._json(200, {"choices": [{"index": 0, "finish_reason": "length", "message": {
                    "role": "assistant", "content": label_for(messages)[:3]}}]})
            if kind == "redirect":
                return self._raw(302, b"", {"Location": state.redirect_to})
            if kind == "retryafter" and first:
                return self._json(429, {"error": {"message": "slow down"}}, {"Retry-After": "3"})
            if kind == "refuse" and hit:
                return self._json(400, {"error": {"message": "maximum context length exceeded"}})
            if kind == "unauthorized":
                return self._json(401, {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}})
            if kind in ("fail429", "fail500") and first:
                code = 429 if kind == "fail429" else 500
                return self._json(code, {"error": {"message": "try again"}}, {"Retry-After": "0"} if code == 429 else {})
            if (kind == "malformed" and first) or kind == "malformed-always":
                return self._raw(200, b"{not json")
            if kind == "slow" and first:
                time.sleep(state.slow_seconds)
            if kind == "delay":
                time.sleep(state.delay_seconds)
            content = messages[-1]["content"] if kind == "echo" else state.answer(request) if state.answer else \
                label_for(messages)
            return self._json(200, {
                "id": "cmpl-test", "object": "chat.completion", "model": model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": len(body) // 4, "completion_tokens": len(content.split()), "total_tokens": 0},
            })

        def _reasoning(self, request: dict) -> None:
            refusal = reasoning_refusal(request)
            if refusal is not None:
                return self._json(400, {"error": {"message": refusal, "type": "invalid_request_error"}})
            content = state.answer(request) if state.answer else label_for(request["messages"])
            budget = request.get("max_completion_tokens")
            finish = "stop"
            if budget is not None and budget < state.reasoning_tokens + len(content.split()):
                content, finish = "", "length"  # the budget went on reasoning: nothing visible is left
            spent = state.reasoning_tokens if budget is None else min(budget, state.reasoning_tokens)
            return self._json(200, {
                "id": "cmpl-test", "object": "chat.completion", "model": request["model"],
                "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish}],
                "usage": {"prompt_tokens": 0, "completion_tokens": spent + len(content.split()), "total_tokens": 0,
                          "completion_tokens_details": {"reasoning_tokens": spent}},
            })

        def _trickle(self, content: str) -> None:
            body = json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                                            "finish_reason": "stop"}]}).encode()
            reply = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                     + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
            try:
                for i in range(len(reply)):
                    self.wfile.write(reply[i : i + 1])
                    self.wfile.flush()
                    time.sleep(state.trickle_seconds)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client's deadline cut the connection, as it should
            self.close_connection = True

        def _json(self, code: int, payload: dict, headers: dict | None = None) -> None:
            self._raw(code, json.dumps(payload).encode(), headers)

        def _raw(self, code: int, data: bytes, headers: dict | None = None) -> None:
            self._answered()
            send_reply(self, code, data, headers)

        def log_message(self, *args: object) -> None:
            pass

    return Handler


class Server(http.server.ThreadingHTTPServer):
    """A thread per connection, with a listen queue deep enough for a client that opens hundreds of
    connections at once (the default of 5 makes the kernel drop connection attempts, and the client's
    retransmission then waits a second or more)."""

    request_queue_size = 1024
    daemon_threads = True

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._open: set[socket.socket] = set()  # connections being served (kept alive between requests)
        self._open_lock = threading.Lock()

    def process_request(self, request: socket.socket, client_address: object) -> None:  # type: ignore[override]
        with self._open_lock:
            self._open.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: socket.socket) -> None:  # type: ignore[override]
        with self._open_lock:
            self._open.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        """End every connection still open, kept-alive ones too, as a server process that dies does
        (``shutdown`` alone only stops accepting new ones)."""
        with self._open_lock:
            for sock in self._open:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass


@contextmanager
def openai_server(state: ServerState | None = None) -> Iterator[tuple[str, ServerState]]:
    """Serve on 127.0.0.1 (a free port); yields (base_url, state)."""
    state = state or ServerState()
    httpd = Server(("127.0.0.1", 0), _handler(state))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", state
    finally:
        httpd.shutdown()
        httpd.close_connections()
        httpd.server_close()


def send_reply(handler: http.server.BaseHTTPRequestHandler, code: int, data: bytes, headers: dict | None = None) -> None:
    """A JSON reply of ``data`` with ``code`` and ``headers`` (the test servers' one way to answer); a client that
    gave up meanwhile (a deadline, a timeout test) is no error."""
    try:
        handler.send_response(code)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            handler.send_header(key, value)
        handler.end_headers()
        handler.wfile.write(data)
    except (BrokenPipeError, ConnectionResetError):
        pass


if __name__ == "__main__":  # python tests/support/openai_server.py PORT [DELAY]: serve until killed
    import sys

    state = ServerState(delay_seconds=float(sys.argv[2]) if len(sys.argv) > 2 else 0.0)
    server = Server(("127.0.0.1", int(sys.argv[1])), _handler(state))
    server.serve_forever()
