"""Which message each prompt token spells (``models/prompt_tokens.py``), on templates written
here, and who may be asked to tokenize or give next-token probabilities
(``models/reading.py``): the refusals, without a model. The embedded model and llama-server
themselves are in ``test_reading_local.py`` and ``conformance/test_reading_llama_server.py``."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from lion_nb import iModel
from lion_nb.errors import ConfigurationError
from lion_nb.models import capabilities
from lion_nb.models.prompt_tokens import (
    PromptToken,
    marked,
    message_spans,
    messages_of,
    prompt_tokens,
)
from tests.servers.chat_server import Reply
from tests.servers.llama_like import PROPS_4, LikeServer


@pytest.fixture(autouse=True)
def _forget_servers() -> Iterator[None]:
    yield
    capabilities.forget()


def chatml(messages: list[dict[str, Any]]) -> str:
    """SmolLM2's template: a system prompt of its own when none is given."""
    out = ""
    if messages and messages[0]["role"] != "system":
        out += "<|im_start|>system\nYou are SmolLM<|im_end|>\n"
    for m in messages:
        out += f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n"
    return out + "<|im_start|>assistant\n"


def trimming(messages: list[dict[str, Any]]) -> str:
    """A Llama-3-like template: headers, and the content trimmed."""
    out = "<s>"
    for m in messages:
        out += f"<h>{m['role']}</h>\n\n{m['content'].strip()}<e>"
    return out + "<h>assistant</h>\n\n"


SPECIALS = ("<|im_start|>", "<|im_end|>", "<s>", "<h>", "</h>", "<e>")


def tokenizer(prompt: str, words: str = r"\s|\S+") -> list[tuple[int, bytes, bool]]:
    """Specials whole, then ``words``, 3 bytes at a time (so characters split over tokens)."""
    out: list[tuple[int, bytes, bool]] = []
    rest = prompt
    while rest:
        special = next((s for s in SPECIALS if rest.startswith(s)), None)
        if special is not None:
            out.append((SPECIALS.index(special), special.encode(), True))
            rest = rest[len(special) :]
            continue
        cut = min((i for s in SPECIALS if (i := rest.find(s)) > 0), default=len(rest))
        for word in re.findall(words, rest[:cut], flags=re.DOTALL):
            raw = word.encode()
            out += [(100 + len(out), raw[i : i + 3], False) for i in range(0, len(raw), 3)]
        rest = rest[cut:]
    return out


def read(template: Any, messages: list[dict[str, Any]]) -> list[PromptToken]:
    prompt = template(messages)
    renders = [template(marked(messages, i)) for i in range(len(messages))]
    return prompt_tokens(tokenizer(prompt), prompt, message_spans(prompt, renders))


def spelled(tokens: list[PromptToken], message: int | None) -> str:
    return "".join(t.text for t in tokens if t.message == message)


CONVERSATION = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Où est Zürich? 😀"},
    {"role": "assistant", "content": "In Switzerland."},
    {"role": "user", "content": "user"},  # the same text as the role marker before it
]


@pytest.mark.parametrize("template", [chatml, trimming])
def test_each_messages_content_and_nothing_else_is_its_own(template: Any) -> None:
    tokens = read(template, CONVERSATION)
    assert "".join(t.text for t in tokens) == template(CONVERSATION)
    for i, message in enumerate(CONVERSATION):
        assert spelled(tokens, i) == message["content"]
    scaffolding = spelled(tokens, None)
    assert "<|im_start|>" in scaffolding or "<h>" in scaffolding
    assert all(t.message is None for t in tokens if t.special)


def test_a_token_that_straddles_content_and_scaffolding_counts_as_content() -> None:
    messages = messages_of("Hi")
    prompt = chatml(messages)
    pieces = tokenizer(prompt, words=r".+")  # "user\nHi" is one word: its tokens straddle
    tokens = prompt_tokens(pieces, prompt, message_spans(prompt, [chatml(marked(messages, 0))]))
    assert [t.text for t in tokens if t.message == 0] == ["r\nH", "i"]  # after "use"
    assert "<|im_start|>use<|im_end|>" in spelled(tokens, None)


def test_a_system_prompt_the_template_adds_is_scaffolding() -> None:
    tokens = read(chatml, messages_of("Hi"))
    assert spelled(tokens, 0) == "Hi"
    assert "You are SmolLM" in spelled(tokens, None)


def test_trimmed_and_empty_contents() -> None:
    messages = [{"role": "user", "content": "  padded  "}, {"role": "assistant", "content": ""}]
    tokens = read(trimming, messages)
    assert spelled(tokens, 0) == "padded"
    assert spelled(tokens, 1) == ""


def test_a_character_split_over_tokens_is_spelled_by_the_token_that_completes_it() -> None:
    tokens = read(chatml, messages_of("😀😀"))  # bytes: f09f98 80f09f 9880
    content = [t for t in tokens if t.message == 0]
    assert [t.text for t in content] == ["", "😀", "😀"]


def test_a_bos_before_the_prompt_shifts_nothing() -> None:
    messages = messages_of("Hi")
    prompt = chatml(messages)
    pieces = [(0, b"<bos>", True), *tokenizer(prompt)]
    tokens = prompt_tokens(pieces, prompt, message_spans(prompt, [chatml(marked(messages, 0))]))
    assert tokens[0] == PromptToken("<bos>", 0, True, None)
    assert spelled(tokens, 0) == "Hi"


def test_messages_are_a_text_or_role_dicts() -> None:
    assert messages_of("Hi") == [{"role": "user", "content": "Hi"}]
    assert messages_of(({"role": "system", "content": "x"},)) == [
        {"role": "system", "content": "x"}
    ]
    with pytest.raises(ConfigurationError, match="role"):
        messages_of([{"content": "no role"}])
    with pytest.raises(ConfigurationError, match="int"):
        messages_of(3)


@pytest.mark.parametrize(
    "model",
    [
        iModel(provider="openai", model="gpt-4.1-mini"),
        iModel(provider="scripted", replies=["x"]),
        iModel(provider="claude_code"),
    ],
    ids=["vendor", "scripted", "cli"],
)
async def test_models_without_a_tokenizer_say_which_can(model: iModel) -> None:
    for call in (model.tokenize("Hi"), model.next_tokens("Hi")):
        with pytest.raises(ConfigurationError) as caught:
            await call
        said = str(caught.value)
        assert repr(model.provider_name) in said
        assert "provider='local'" in said and "llama-server" in said


async def test_a_server_that_is_not_llama_server_is_refused() -> None:
    with LikeServer({}, default=Reply("ok")).start() as server:  # no /props: unknown
        model = iModel(provider="openai", model="m", base_url=server.base_url)
        with pytest.raises(ConfigurationError, match="not llama-server"):
            await model.tokenize("Hi")
    routes = {"/openapi.json": {"openapi": "3.1.0", "info": {"title": "🦙 llama.cpp Python API"}}}
    with LikeServer(routes, default=Reply("ok")).start() as server:
        model = iModel(provider="openai", model="m", base_url=server.base_url)
        with pytest.raises(ConfigurationError, match=r"llama_cpp\.server"):
            await model.next_tokens("Hi")


async def test_a_server_that_says_llama_server_but_lacks_the_routes_is_refused() -> None:
    with LikeServer({"/props": PROPS_4}, default=Reply("ok")).start() as server:
        model = iModel(provider="openai", model="m", base_url=server.base_url)
        with pytest.raises(ConfigurationError, match="cannot show the prompt") as caught:
            await model.tokenize("Hi")
        assert caught.value.__cause__ is not None  # the server's 404


@pytest.mark.parametrize("k", [0, -1, 2.5, True])
async def test_k_is_a_positive_whole_number(k: Any) -> None:
    with pytest.raises(ConfigurationError, match="k="):
        await iModel(provider="local").next_tokens("Hi", k=k)


async def test_capabilities_say_which_server_answered() -> None:
    with LikeServer({"/props": PROPS_4}, default=Reply("ok")).start() as server:
        model = iModel(provider="openai", model="m", base_url=server.base_url)
        assert (await model.capabilities()).server == "llama-server"
    routes = {"/openapi.json": {"openapi": "3.1.0", "info": {"title": "🦙 llama.cpp Python API"}}}
    with LikeServer(routes, default=Reply("ok")).start() as server:
        model = iModel(provider="openai", model="m", base_url=server.base_url)
        assert (await model.capabilities()).server == "llama_cpp.server"
