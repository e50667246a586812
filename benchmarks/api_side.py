"""One side of B2 (API round trip), run in its own interpreter, or the loopback server.

    python api_side.py serve                                  (prints the base URL, serves
                                                               until stdin closes)
    python api_side.py lion_nb BASE_URL SEQ CONC ROUNDS       (in lion_nb's venv)
    python api_side.py lionagi BASE_URL SEQ CONC ROUNDS       (in the lionagi baseline venv)
    python api_side.py httpx   BASE_URL SEQ CONC ROUNDS       (the floor: bare httpx, no toolkit)

A side prints one JSON line: wall-clock and CPU seconds (``time.process_time``: this process
only, so less sensitive than wall time to other load on the machine) for SEQ sequential
``communicate`` calls on one branch (``clear_messages=True``, so every request has the same
small size and the figure is the per-call cost, not the cost of a growing history), and,
ROUNDS times, for CONC ``communicate`` calls started at once on CONC branches that share one
model (one connection pool), as a notebook fanning a question out would.

The server runs in its own process (``serve``) so that its threads do not compete with the
measured client for the GIL; both sides talk to the same server. It answers every request with
"ok" in one delta (``start_chat_server(benchmark=True)``): streamed (SSE) when the client asks
for a stream, one JSON body otherwise.

The lionagi side is configured so that it works on loopback and offline:

* ``allow_local_network=True``: lionagi's SSRF guard refuses 127.0.0.1 otherwise
  ("SSRF guard: request to '127.0.0.1' is blocked");
* ``requires_tokens=False``: its OpenAI chat endpoint counts prompt tokens with tiktoken before
  every call (``APICalling.required_tokens``, read by the rate-limited processor), and tiktoken
  downloads the ``o200k_base`` encoding from openaipublic.blob.core.windows.net on first use.
  The count only feeds ``limit_tokens`` rate limiting, which is off here, so switching it off
  changes nothing else; it also makes the baseline faster, never slower;
* ``DataLoggerConfig(auto_save_on_exit=False)``: otherwise every branch writes
  ``./data/logs/log_*.json`` at exit;
* the root logger is set back to WARNING after import: importing lionagi's CLI providers calls
  ``logging.basicConfig(level=INFO)``, after which httpx logs one line per request to stderr.
  Silencing it is generous to the baseline.
"""

from __future__ import annotations

import asyncio
import json
import logging
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MODEL = "gpt-4.1-mini"
PROMPT = "hello"


def serve() -> None:
    sys.path.insert(0, str(ROOT))
    from tests.servers.chat_server import start_chat_server

    with start_chat_server(benchmark=True) as server:
        sys.stdout.write(server.base_url + "\n")
        sys.stdout.flush()
        sys.stdin.read()  # until the parent closes our stdin (or dies)


def lion_nb_side(base_url: str) -> tuple[Any, Any, Any]:
    from lion_nb import Branch, iModel

    model = iModel(provider="openai", model=MODEL, base_url=base_url, api_key="x")

    def branch() -> Any:
        return Branch(chat_model=model)

    return model, branch, model.aclose


def lionagi_side(base_url: str) -> tuple[Any, Any, Any]:
    from lionagi import Branch, iModel
    from lionagi.protocols.generic.log import DataLoggerConfig

    model = iModel(
        provider="openai",
        model=MODEL,
        base_url=base_url,
        api_key="x",
        requires_tokens=False,
        allow_local_network=True,
    )
    logging.getLogger().setLevel(logging.WARNING)
    quiet = DataLoggerConfig(auto_save_on_exit=False)

    def branch() -> Any:
        return Branch(chat_model=model, log_config=quiet)

    async def close() -> None:
        return None

    return model, branch, close


class _HttpxBranch:
    """The floor: the same streamed request with bare httpx, nothing recorded or parsed."""

    def __init__(self, client: Any, url: str) -> None:
        self.client, self.url = client, url

    async def communicate(self, prompt: str, **_: Any) -> str:
        body = {
            "model": MODEL,
            "messages": [{"role": "user", "content": prompt}],
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        async with self.client.stream("POST", self.url, json=body) as response:
            data = b"".join([piece async for piece in response.aiter_bytes()])
        return "ok" if b'"ok"' in data else data.decode()


def httpx_side(base_url: str) -> tuple[Any, Any, Any]:
    import httpx

    client = httpx.AsyncClient(timeout=60)

    def branch() -> Any:
        return _HttpxBranch(client, f"{base_url}/chat/completions")

    return client, branch, client.aclose


SIDES = {"lion_nb": lion_nb_side, "lionagi": lionagi_side, "httpx": httpx_side}


async def measure(side: str, base_url: str, seq: int, conc: int, rounds: int) -> dict[str, Any]:
    _, new_branch, close = SIDES[side](base_url)
    try:
        branch = new_branch()
        for _ in range(20):  # warm up imports, the connection pool and caches
            assert await branch.communicate(PROMPT, clear_messages=True) == "ok"
        await asyncio.gather(*(new_branch().communicate(PROMPT) for _ in range(conc)))

        start, cpu = time.perf_counter(), time.process_time()
        for _ in range(seq):
            reply = await branch.communicate(PROMPT, clear_messages=True)
        seq_s, seq_cpu = time.perf_counter() - start, time.process_time() - cpu
        assert reply == "ok", reply

        round_s, round_cpu = [], []
        for _ in range(rounds):
            branches = [new_branch() for _ in range(conc)]  # construction is not timed
            start, cpu = time.perf_counter(), time.process_time()
            replies = await asyncio.gather(*(b.communicate(PROMPT) for b in branches))
            round_s.append(time.perf_counter() - start)
            round_cpu.append(time.process_time() - cpu)
            assert replies == ["ok"] * conc, replies[:3]
    finally:
        await close()
    return {
        "side": side,
        "seq_calls": seq,
        "seq_s": seq_s,
        "seq_cpu_s": seq_cpu,
        "conc_calls": conc,
        "conc_round_s": round_s,
        "conc_median_s": statistics.median(round_s),
        "conc_round_cpu_s": round_cpu,
    }


def main() -> None:
    if sys.argv[1] == "serve":
        serve()
        return
    side, base_url = sys.argv[1], sys.argv[2]
    seq, conc, rounds = (int(a) for a in sys.argv[3:6])
    result = asyncio.run(measure(side, base_url, seq, conc, rounds))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
