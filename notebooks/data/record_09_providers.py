#!/usr/bin/env python
"""Record ``09_providers.cassette.jsonl`` from lion_nb's loopback test servers.

    .venv/bin/python notebooks/data/record_09_providers.py

Starts the Anthropic, Gemini and OpenAI Responses test servers (``tests/servers/``: each speaks
its API's streaming format event for event), scripts the replies below, and executes
``notebooks/09_providers.ipynb`` in a kernel with ``LION_NB_09_SERVERS`` aiming its models at
those servers and ``LION_NB_09_MODE=record``: every call the notebook makes is recorded,
with its streaming pace, into a fresh cassette. The answers are scripted, not a real model's
(the notebook says so); the usage figures are plausible ones, so that the costs are too.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
CASSETTE = NOTEBOOKS / "data" / "09_providers.cassette.jsonl"
DELAY = 0.02  # seconds between streamed events: what the replay shows

sys.path.insert(0, str(ROOT))

from tests.servers.anthropic_server import Message, start_anthropic_server  # noqa: E402
from tests.servers.chat_server import Reply  # noqa: E402
from tests.servers.vendor_servers import start_gemini_server, start_responses_server  # noqa: E402

ONIONS = Message(
    text=(
        "Cutting an onion breaks its cells, and enzymes turn their sulfur compounds into a "
        "volatile gas, syn-propanethial-S-oxide. When that gas reaches your eyes it irritates "
        "the nerves there, and your tear glands flush it out."
    ),
    thinking=(
        "The question is about the chemistry: alliinase, sulfenic acids, the lachrymatory "
        "factor synthase, and the eye's response. Two sentences: cause, then effect."
    ),
    chunk_size=12,
    delay=DELAY,
    usage={
        "input_tokens": 38,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": 1,
    },
    output_tokens=112,
)
ROME_CALL = Reply(
    reasoning="The user wants Fahrenheit. I should call the conversion tool with 24.",
    tool_calls=[{"name": "fahrenheit", "arguments": {"celsius": 24}}],
    chunk_size=12,
    delay=DELAY,
    usage={
        "promptTokenCount": 96,
        "candidatesTokenCount": 9,
        "thoughtsTokenCount": 31,
        "totalTokenCount": 136,
    },
)
ROME_ANSWER = Reply(
    "24 °C is 75.2 °F: a pleasantly warm day for an American visitor.",
    chunk_size=8,
    delay=DELAY,
    usage={
        "promptTokenCount": 142,
        "cachedContentTokenCount": 0,
        "candidatesTokenCount": 19,
        "totalTokenCount": 161,
    },
)
PACKING = Reply(
    json.dumps(
        {
            "destination": "Rome",
            "items": [
                "comfortable walking shoes",
                "a light jacket",
                "sunglasses",
                "a scarf for visiting churches",
                "a refillable water bottle",
            ],
        }
    ),
    reasoning=(
        "**Planning a May weekend in Rome**\n\nMild days, cool evenings, lots of walking on "
        "cobblestones; churches ask for covered shoulders."
    ),
    chunk_size=10,
    delay=DELAY,
    usage={
        "input_tokens": 118,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 236,
        "output_tokens_details": {"reasoning_tokens": 192},
        "total_tokens": 354,
    },
)
POEM = Reply(
    "Seven hills beneath a saffron sky,\nthe Tiber",
    finish_reason="length",
    chunk_size=6,
    delay=DELAY,
    usage={
        "input_tokens": 14,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 16,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 30,
    },
)


def main() -> None:
    import nbformat
    from nbclient import NotebookClient

    CASSETTE.unlink(missing_ok=True)
    with (
        start_anthropic_server() as anthropic,
        start_gemini_server() as gemini,
        start_responses_server() as openai,
    ):
        anthropic.script(ONIONS)
        gemini.script(ROME_CALL, ROME_ANSWER)
        openai.script(PACKING, POEM)
        servers = {"anthropic": anthropic.base_url, "gemini": gemini.base_url}
        servers["openai"] = openai.base_url
        os.environ.update(
            LION_NB_09_SERVERS=json.dumps(servers),
            LION_NB_09_MODE="record",
            PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        )
        nb = nbformat.read(NOTEBOOKS / "09_providers.ipynb", as_version=4)
        NotebookClient(
            nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOKS)}}
        ).execute()
        asked = {k: len(s.requests) for k, s in (("anthropic", anthropic), ("gemini", gemini))}
        asked["openai"] = len(openai.requests)
    if asked != {"anthropic": 1, "gemini": 2, "openai": 2}:  # one request per scripted reply
        raise SystemExit(f"the notebook's requests do not match the script: {asked}")
    calls = len(CASSETTE.read_text().splitlines()) - 1
    print(f"recorded {calls} calls into {CASSETTE.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
