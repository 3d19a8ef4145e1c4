"""A small in-memory server for the part of the Hugging Face Hub HTTP API that huggingface_hub,
datasets and evaluate use to create repositories, upload, list and download files. Tests only."""

from __future__ import annotations

import base64
import hashlib
import http.server
import json
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from tests.support.openai_server import KeepAliveHandler

TYPES = {"datasets": "dataset", "spaces": "space", "models": "model"}


@dataclass
class HubState:
    repos: dict[tuple[str, str], dict[str, bytes]] = field(default_factory=dict)  # (type, id) -> path -> bytes
    commits: dict[tuple[str, str], str] = field(default_factory=dict)
    log: list[str] = field(default_factory=list)
    authorizations: list[str] = field(default_factory=list)  # of write requests
    lock: threading.Lock = field(default_factory=threading.Lock)


def _sha(files: dict[str, bytes]) -> str:
    digest = hashlib.sha1()
    for path in sorted(files):
        digest.update(path.encode() + hashlib.sha1(files[path]).digest())
    return digest.hexdigest()


def _handler(state: HubState) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(KeepAliveHandler):

        def log_message(self, *args: object) -> None:
            pass

        def _send(self, code: int, body: bytes = b"", headers: dict[str, str] | None = None, content_type: str = "application/json") -> None:
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def _json(self, payload: object, code: int = 200) -> None:
            self._send(code, json.dumps(payload).encode())

        def _body(self) -> bytes:
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))

        def _route(self) -> tuple[list[str], dict[str, list[str]]]:
            url = urllib.parse.urlsplit(self.path)
            return [urllib.parse.unquote(p) for p in url.path.strip("/").split("/")], urllib.parse.parse_qs(url.query)

        def do_POST(self) -> None:  # noqa: N802
            parts, _ = self._route()
            body = self._body()
            state.log.append(f"POST {self.path}")
            state.authorizations.append(self.headers.get("Authorization", ""))
            if parts[:2] == ["api", "validate-yaml"]:
                return self._json({"errors": [], "warnings": []})
            if parts[:3] == ["api", "repos", "create"]:
                request = json.loads(body)
                kind = request.get("type") or "model"
                repo_id = f"{request['organization']}/{request['name']}" if request.get("organization") else request["name"]
                with state.lock:
                    state.repos.setdefault((kind, repo_id), {})
                prefix = "" if kind == "model" else f"{kind}s/"
                return self._json({"url": f"http://{self.headers['Host']}/{prefix}{repo_id}", "name": repo_id})
            if parts[0] == "api" and parts[1] in TYPES:
                kind, repo_id, action = TYPES[parts[1]], f"{parts[2]}/{parts[3]}", parts[4]
                if action == "preupload":
                    files = json.loads(body)["files"]
                    return self._json({"files": [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False}
                                                 for f in files]})
                if action == "commit":
                    return self._commit(kind, repo_id, body)
                if action == "paths-info":
                    return self._paths_info(kind, repo_id, body)
            return self._json({"error": f"not handled: POST {self.path}"}, 404)

        def _commit(self, kind: str, repo_id: str, body: bytes) -> None:
            with state.lock:
                files = state.repos.setdefault((kind, repo_id), {})
                for line in body.decode().splitlines():
                    item = json.loads(line)
                    if item["key"] == "file":
                        files[item["value"]["path"]] = base64.b64decode(item["value"]["content"])
                    elif item["key"] == "deletedFile":
                        files.pop(item["value"]["path"], None)
                sha = state.commits[(kind, repo_id)] = _sha(files)
            return self._json({"commitUrl": f"http://{self.headers['Host']}/{kind}s/{repo_id}/commit/{sha}", "commitOid": sha,
                               "success": True})

        def _entry(self, path: str, data: bytes) -> dict:
            return {"type": "file", "path": path, "size": len(data), "oid": hashlib.sha1(data).hexdigest()}

        def _paths_info(self, kind: str, repo_id: str, body: bytes) -> None:
            files = state.repos.get((kind, repo_id), {})
            try:
                wanted = json.loads(body)["paths"]
            except (ValueError, KeyError):
                wanted = urllib.parse.parse_qs(body.decode()).get("paths", [])
            out = []
            for path in wanted:
                if path in files:
                    out.append(self._entry(path, files[path]))
                elif any(p.startswith(path.rstrip("/") + "/") for p in files) or path in ("", "."):
                    out.append({"type": "directory", "path": path, "oid": "0" * 40})
            return self._json(out)

        def do_GET(self) -> None:  # noqa: N802
            state.log.append(f"{self.command} {self.path}")
            parts, query = self._route()
            if parts[0] == "api" and len(parts) >= 4 and parts[1] in TYPES:
                kind, repo_id = TYPES[parts[1]], f"{parts[2]}/{parts[3]}"
                if (kind, repo_id) not in state.repos:
                    return self._json({"error": "Repository not found"}, 404)
                files = state.repos[(kind, repo_id)]
                sha = state.commits.get((kind, repo_id), "0" * 40)
                if len(parts) == 4 or parts[4] == "revision":
                    return self._json({"id": repo_id, "sha": sha, "private": False, "disabled": False, "gated": False,
                                       "lastModified": "2026-01-01T00:00:00.000Z", "tags": [], "downloads": 0,
                                       "likes": 0, "siblings": [{"rfilename": p} for p in sorted(files)]})
                if parts[4] == "tree":
                    prefix = "/".join(parts[6:]).strip("/")
                    recursive = query.get("recursive", ["false"])[0].lower() == "true"
                    return self._json(self._tree(files, prefix, recursive))
            if parts[0] in TYPES and len(parts) >= 6 and parts[3] == "resolve":
                kind, repo_id = TYPES[parts[0]], f"{parts[1]}/{parts[2]}"
                return self._resolve(kind, repo_id, "/".join(parts[5:]))
            if len(parts) >= 5 and parts[2] == "resolve":  # models have no type prefix
                return self._resolve("model", f"{parts[0]}/{parts[1]}", "/".join(parts[4:]))
            return self._json({"error": f"not handled: GET {self.path}"}, 404)

        do_HEAD = do_GET

        def _tree(self, files: dict[str, bytes], prefix: str, recursive: bool) -> list[dict]:
            out, dirs = [], set()
            for path in sorted(files):
                if prefix and not path.startswith(prefix + "/"):
                    continue
                rest = path[len(prefix) + 1 :] if prefix else path
                if recursive or "/" not in rest:
                    out.append(self._entry(path, files[path]))
                if "/" in rest:
                    top = (prefix + "/" if prefix else "") + rest.split("/")[0]
                    if top not in dirs:
                        dirs.add(top)
                        out.append({"type": "directory", "path": top, "oid": "0" * 40})
                if recursive:
                    pieces = rest.split("/")[:-1]
                    for k in range(1, len(pieces) + 1):
                        sub = (prefix + "/" if prefix else "") + "/".join(pieces[:k])
                        if sub not in dirs:
                            dirs.add(sub)
                            out.append({"type": "directory", "path": sub, "oid": "0" * 40})
            return out

        def _resolve(self, kind: str, repo_id: str, path: str) -> None:
            files = state.repos.get((kind, repo_id))
            if files is None or path not in files:
                return self._send(404, b'{"error": "Entry not found"}', {"X-Error-Code": "EntryNotFound"})
            data = files[path]
            headers = {"X-Repo-Commit": state.commits.get((kind, repo_id), "0" * 40),
                       "ETag": f'"{hashlib.sha1(data).hexdigest()}"', "Accept-Ranges": "bytes"}
            byte_range = self.headers.get("Range")
            if byte_range and byte_range.startswith("bytes="):
                start, _, end = byte_range[6:].partition("-")
                start_i = int(start or 0)
                end_i = int(end) if end else len(data) - 1
                chunk = data[start_i : end_i + 1]
                headers["Content-Range"] = f"bytes {start_i}-{start_i + len(chunk) - 1}/{len(data)}"
                return self._send(206, chunk, headers, "application/octet-stream")
            return self._send(200, data, headers, "application/octet-stream")

    return Handler


@contextmanager
def hub_server() -> Iterator[tuple[str, HubState]]:
    state = HubState()
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", state
    finally:
        httpd.shutdown()
        httpd.server_close()


if __name__ == "__main__":  # python -m tests.support.hub_server PORT (from the repository root)
    import sys

    server = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), _handler(HubState()))
    server.serve_forever()
