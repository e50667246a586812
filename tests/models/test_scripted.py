"""The offline scripted model: what its ``json`` replies send, on the API and the CLI path."""

from __future__ import annotations

import json

from lion_nb import Branch, iModel
from lion_nb.signals import StreamDelta

DATA = {"title": "Crème brûlée", "note": "très bien ☕", "tags": ["日本語"]}


async def test_json_replies_keep_non_ascii_text_readable() -> None:
    branch = Branch(chat_model=iModel(provider="scripted", replies=[{"json": DATA}]))
    deltas: list[str] = []
    branch.observe(StreamDelta, handler=lambda s: deltas.append(s.delta))
    text = await branch.communicate("dessert")
    assert "Crème brûlée" in text and "très bien ☕" in text and "日本語" in text
    assert "\\u" not in text  # not escaped to \u00e8 ...
    assert json.loads(text) == DATA
    assert "".join(deltas) == text  # what streamed is what was recorded
    assert branch.messages[-1].response == text


async def test_json_replies_on_the_cli_path_too() -> None:
    branch = Branch(chat_model=iModel(provider="scripted", cli=True, replies=[{"json": DATA}]))
    async for _ in branch.run("dessert"):
        pass
    text = branch.messages[-1].response
    assert "Crème brûlée" in text and "\\u" not in text
    assert json.loads(text) == DATA
