"""A small in-repo server that speaks the real Chat Completions wire format.

It is a test *peer*, not a mock of the client: the official ``openai`` client talks
to it over HTTP on 127.0.0.1 exactly as it would to api.openai.com, vLLM or
llama.cpp, so tests exercise the real request encoding, response parsing, status
handling, retries and timeouts.

* ``POST /v1/chat/completions`` answers with a ``chat.completion`` object (id,
  object, created, model, choices[].message, finish_reason, usage);
* ``GET /v1/models`` lists the one model;
* scripted replies (``enqueue``) come first: a content string or dict, or an error
  status (429 / 500 / 400 ...) with an OpenAI-style error body and headers such as
  ``Retry-After``; then the ``responder`` callable, if any;
* ``json_schema_supported=False`` makes it reject ``response_format`` of type
  ``json_schema`` with a 400, like servers that only know JSON mode;
* ``api_key`` makes it demand ``Authorization: Bearer <key>`` (else 401);
* every request body and its headers are recorded in ``requests``.

``offline_model`` is a responder that answers each role with the offline backend,
so an end-to-end run through the OpenAI backend gives the offline answers.

Run standalone: ``python -m services.llm.fake_openai_server --port 8000 --offline-model``.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class FakeReply:
    content: str | dict[str, Any] | None = None
    status: int = 200
    error_message: str = ""
    error_type: str = "server_error"
    error_code: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    prompt_tokens: int = 40
    completion_tokens: int = 60
    finish_reason: str = "stop"
    delay_s: float = 0.0


Responder = Callable[[dict[str, Any]], "FakeReply | str | dict[str, Any]"]


class FakeOpenAIServer:
    def __init__(self, responder: Responder | None = None, *, json_schema_supported: bool = True,
                 api_key: str | None = None, model: str = "fake-gpt", host: str = "127.0.0.1", port: int = 0,
                 unsupported_format_status: int = 400):
        self.responder = responder
        self.json_schema_supported = json_schema_supported
        # llama-cpp-python answers an unknown response_format with a 500 naming the field; 400 elsewhere
        self.unsupported_format_status = unsupported_format_status
        self.api_key = api_key
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._script: deque[FakeReply] = deque()
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer((host, port), self._handler())
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def enqueue(self, *replies: FakeReply | str | dict[str, Any]) -> None:
        with self._lock:
            self._script.extend(r if isinstance(r, FakeReply) else FakeReply(content=r) for r in replies)

    def start(self) -> FakeOpenAIServer:
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02},
                                        name="fake-openai", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ── request handling ──────────────────────────────────────────────────
    def _next_reply(self, body: dict[str, Any]) -> FakeReply:
        with self._lock:
            if self._script:
                return self._script.popleft()
        if self.responder is None:
            return FakeReply(status=500, error_message="no scripted reply and no responder")
        out = self.responder(body)
        return out if isinstance(out, FakeReply) else FakeReply(content=out)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
                pass

            def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                try:
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test): nothing to answer, no traceback

            def _error(self, status: int, message: str, kind: str, code: str | None = None,
                       param: str | None = None, headers: dict[str, str] | None = None) -> None:
                self._send(status, {"error": {"message": message, "type": kind, "param": param, "code": code}},
                           headers)

            def _authorized(self) -> bool:
                if server.api_key is None:
                    return True
                if self.headers.get("Authorization") == f"Bearer {server.api_key}":
                    return True
                self._error(401, "Incorrect API key provided.", "invalid_request_error", "invalid_api_key")
                return False

            def do_GET(self) -> None:  # noqa: N802 - stdlib naming
                if self.path.rstrip("/") != "/v1/models":
                    self._error(404, f"no route {self.path}", "invalid_request_error")
                    return
                if self._authorized():
                    self._send(200, {"object": "list", "data": [{"id": server.model, "object": "model",
                                                                 "created": 0, "owned_by": "lastv2x-tests"}]})

            def do_POST(self) -> None:  # noqa: N802 - stdlib naming
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._error(404, f"no route {self.path}", "invalid_request_error")
                    return
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    self._error(400, "request body is not JSON", "invalid_request_error")
                    return
                with server._lock:
                    server.requests.append(body)
                    server.headers.append({k.lower(): v for k, v in self.headers.items()})
                if not self._authorized():
                    return
                if not isinstance(body.get("messages"), list) or not body.get("model"):
                    self._error(400, "'model' and 'messages' are required", "invalid_request_error")
                    return
                fmt = (body.get("response_format") or {}).get("type")
                if fmt == "json_schema" and not server.json_schema_supported:
                    self._error(server.unsupported_format_status,
                                "response_format type 'json_schema' is not supported by this server; "
                                     "use 'json_object'", "invalid_request_error", param="response_format")
                    return
                reply = server._next_reply(body)
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                if reply.status != 200:
                    self._error(reply.status, reply.error_message or f"HTTP {reply.status}", reply.error_type,
                                reply.error_code, headers=reply.headers)
                    return
                content = reply.content if isinstance(reply.content, str) or reply.content is None \
                    else json.dumps(reply.content)
                self._send(200, {
                    "id": f"chatcmpl-fake-{len(server.requests)}", "object": "chat.completion",
                    "created": int(time.time()), "model": body["model"], "system_fingerprint": "fp_fake",
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": content, "refusal": None},
                                 "logprobs": None, "finish_reason": reply.finish_reason}],
                    "usage": {"prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens,
                              "total_tokens": reply.prompt_tokens + reply.completion_tokens},
                }, reply.headers)

        return Handler


def offline_model(body: dict[str, Any]) -> dict[str, Any]:
    """Answer a role request the way the offline backend would (test peer for end-to-end runs)."""
    from lastv2x.core.spec import ScenarioSpec
    from services.llm.assignment import Assigner
    from services.llm.backends import ParseRequest, PlanRequest, ReflectRequest, RepairRequest
    from services.llm.backends.offline import OfflineBackend
    from services.llm.evidence import EvidenceDigest
    from services.llm.knowledge import load_notes
    from services.llm.planner import ApproachCandidate

    system = body["messages"][0]["content"]
    user = json.loads(body["messages"][-1]["content"])
    backend = OfflineBackend()
    if "ScenarioSpec JSON Schema" in system and "previous_answer" in user:
        prev = user["previous_answer"]
        request = RepairRequest(user["intent"], user["seed"], {}, prev if isinstance(prev, dict) else None,
                                prev if isinstance(prev, str) else None, tuple(user["problems"]), user["attempt"])
        return backend.repair(request).data
    if "ScenarioSpec JSON Schema" in system:
        seed = int(user["seed"])
        return backend.parse(ParseRequest(user["intent"], seed, Assigner(seed).preview(()))).data
    if "candidates" in user:
        spec = ScenarioSpec.model_validate(user["spec"])
        cands = tuple(ApproachCandidate.from_dict(c) for c in user["candidates"])
        return backend.plan(PlanRequest(spec, cands)).data
    digest = EvidenceDigest.from_dict(user["evidence_digest"])
    return backend.reflect(ReflectRequest(user["prompt"], digest, load_notes(), spec=user.get("spec"))).data


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="fake OpenAI Chat Completions server (tests only)")
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--offline-model", action="store_true", help="answer with the offline backend")
    ap.add_argument("--no-json-schema", action="store_true")
    args = ap.parse_args(argv)
    server = FakeOpenAIServer(offline_model if args.offline_model else None,
                              json_schema_supported=not args.no_json_schema, port=args.port)
    print(f"serving {server.url}", flush=True)
    try:
        server._httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server._httpd.server_close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
