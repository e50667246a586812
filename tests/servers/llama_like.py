"""Loopback servers that answer as llama.cpp's servers do where lion_nb asks them what they
can do: ``LikeServer(routes)`` is the scriptable chat server (``chat_server.py``) plus GET
routes (llama-server's ``/props``, llama_cpp.server's ``/openapi.json``), recording each GET
and when each generation was being answered (``most_in_flight``). The real servers are in
``real.py``; these script what a test needs of them."""

from __future__ import annotations

import time
from typing import Any

from tests.servers.chat_server import ChatServer, _Handler

__all__ = ["LLAMA_CPP_PYTHON_REFUSAL", "PROPS_4", "SLACK", "LikeServer"]

# llama-server's /props (tools/server/server-context.cpp get_res_props), trimmed to what
# lion_nb reads, for `--parallel 4 -c 2048` on SmolLM2 (whose template declares no tools).
PROPS_4 = {
    "default_generation_settings": {"n_ctx": 512, "params": {}},
    "total_slots": 4,
    "model_alias": "SmolLM2",
    "chat_template_caps": {"supports_tools": False, "supports_tool_calls": False},
}
LLAMA_CPP_PYTHON_REFUSAL = {
    "error": {
        "message": "[{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
        "'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema'}]",
        "type": "internal_server_error",
    }
}


SLACK = 0.02  # seconds


class _ServerHandler(_Handler):
    """The chat server, plus the GET routes of the server it plays, counting the requests
    in flight."""

    def do_GET(self) -> None:
        owner: LikeServer = self.server.owner  # type: ignore[assignment]
        with owner._lock:
            owner.gets.append(self.path)
        route = owner.routes.get(self.path)
        if route is None:
            return self._send_json(404, owner.not_found)
        return self._send_json(200, route)

    def _answer(self, reply: Any, body: dict[str, Any]) -> None:
        owner: LikeServer = self.server.owner  # type: ignore[assignment]
        started = time.monotonic()
        try:
            super()._answer(reply, body)
        finally:
            with owner._lock:
                owner.spans.append((started, time.monotonic()))


class LikeServer(ChatServer):
    handler = _ServerHandler

    def __init__(self, routes: dict[str, Any], not_found: Any = None, **kw: Any) -> None:
        super().__init__(**kw)
        self.routes = routes
        self.not_found = not_found or {"error": {"message": "File Not Found", "code": 404}}
        self.gets: list[str] = []
        self.spans: list[tuple[float, float]] = []  # each generation: arrived, answered

    @property
    def most_in_flight(self) -> int:
        """The most generations the server was answering at once. A request that arrives
        within a few ms of the previous one's last write is not an overlap: the client may
        read [DONE] and send the next one before this thread has noted the end."""
        most = 0
        for start, _ in self.spans:
            most = max(most, sum(1 for s, e in self.spans if s <= start < e - SLACK))
        return most

    @property
    def root(self) -> str:
        return self.base_url.removesuffix("/v1")
