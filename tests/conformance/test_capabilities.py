"""What the real servers say they can do, and lion_nb holding to it: llama.cpp's
``llama-server`` (``/props``: slots, each slot's window, the chat template's tools) and
llama-cpp-python's ``llama_cpp.server`` (one generation at a time, no ``json_schema``), both
on the embedded model's SmolLM2 weights (``tests/servers/real.py``)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from pydantic import BaseModel, Field

from lion_nb import Branch, iModel
from lion_nb.errors import ContextWindowError
from lion_nb.messages import AssistantResponse, Instruction
from lion_nb.session.conversation import Conversation
from tests.servers.real import RealServer

pytestmark = [pytest.mark.real_server, pytest.mark.slow, pytest.mark.local_model]

_QUICK = {"max_tokens": 16, "temperature": 0.0, "timeout": 300}


class WireCount(httpx.AsyncBaseTransport):
    """The generations on the wire at once, as the server sees them: a POST is counted from
    the moment it is sent until its response body is closed."""

    def __init__(self) -> None:
        self._inner = httpx.AsyncHTTPTransport()
        self.now = self.most = self.sent = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.method != "POST":
            return await self._inner.handle_async_request(request)
        self.now += 1
        self.sent += 1
        self.most = max(self.most, self.now)
        try:
            response = await self._inner.handle_async_request(request)
        except BaseException:
            self.now -= 1
            raise
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=_Closing(response.stream, self),  # type: ignore[arg-type]
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


class _Closing(httpx.AsyncByteStream):
    def __init__(self, inner: httpx.AsyncByteStream, count: WireCount) -> None:
        self._inner, self._count, self._closed = inner, count, False

    async def __aiter__(self) -> Any:
        async for chunk in self._inner:
            yield chunk

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            self._count.now -= 1
        await self._inner.aclose()


_opened: list[iModel | httpx.AsyncClient] = []


@pytest.fixture(autouse=True)
async def _close_clients() -> Any:
    yield
    while _opened:
        await _opened.pop().aclose()


def _model(server: RealServer, wire: WireCount | None = None, **kw: Any) -> iModel:
    extra: dict[str, Any] = {}
    if wire is not None:
        extra["http_client"] = client = httpx.AsyncClient(transport=wire, timeout=300)
        _opened.append(client)
    model = iModel(provider="openai", model="smollm2", base_url=server.v1, **_QUICK, **extra, **kw)
    _opened.append(model)
    return model


async def test_llama_server_one_slot_says_so(llama_server_1: RealServer) -> None:
    caps = await _model(llama_server_1).capabilities()
    assert caps.probed and caps.slots == 1 and caps.slot_window == 2048
    assert caps.json_schema is True
    assert caps.native_tools is False  # SmolLM2's chat template declares no tools


async def test_llama_server_four_slots_have_512_tokens_each(llama_server_4: RealServer) -> None:
    model = _model(llama_server_4)
    caps = await model.capabilities()
    assert (caps.slots, caps.slot_window, caps.native_tools) == (4, 512, False)
    assert model.context_window == 512
    # the Anthropic format at the server's root: the same server, the same facts
    messages = iModel(provider="anthropic", model="smollm2", base_url=llama_server_4.root)
    assert (await messages.capabilities()).slot_window == 512
    await messages.aclose()


async def test_llama_cpp_server_is_one_slot_without_json_schema(
    llama_cpp_server: RealServer,
) -> None:
    caps = await _model(llama_cpp_server).capabilities()
    assert (caps.slots, caps.json_schema, caps.native_tools) == (1, False, False)


@pytest.mark.parametrize("which", ["llama_cpp_server", "llama_server_1"])
async def test_five_samples_go_one_at_a_time_and_all_are_real(
    which: str, request: pytest.FixtureRequest
) -> None:
    """``llama_cpp.server`` cuts the running stream short when a second request arrives
    (four of five replies came back empty); ``llama-server --parallel 1`` queues them. lion_nb
    sends one at a time to either, and every reply is a real one."""
    server: RealServer = request.getfixturevalue(which)
    log_before = server.log_path.read_text(errors="replace")
    wire = WireCount()
    branch = Branch(chat_model=_model(server, wire))
    await branch.communicate("Name a colour.")
    samples = await Conversation(branch).asample(5, temperature=0.8)
    assert samples.errors == []
    assert len(samples.replies) == 5 and all(text.strip() for text in samples.texts)
    assert wire.sent == 6 and wire.most == 1
    said = server.log_path.read_text(errors="replace")[len(log_before) :]
    assert "disconnected" not in said.lower()  # llama_cpp.server interrupted nothing


async def test_the_anthropic_format_shares_the_servers_slots(llama_server_1: RealServer) -> None:
    wire = WireCount()
    client = httpx.AsyncClient(transport=wire, timeout=300)
    _opened.append(client)
    model = iModel(
        provider="anthropic",
        model="smollm2",
        base_url=llama_server_1.root,
        http_client=client,
        **_QUICK,
    )
    branch = Branch(chat_model=model)
    await branch.communicate("Name a fruit.")
    samples = await Conversation(branch).asample(3, temperature=0.8)
    assert samples.errors == [] and all(text.strip() for text in samples.texts)
    assert wire.sent == 4 and wire.most == 1


async def test_structured_output_on_llama_cpp_server_needs_no_json_mode(
    llama_cpp_server: RealServer,
) -> None:
    class Colour(BaseModel):
        name: str = Field(max_length=20)

    model = _model(llama_cpp_server, max_retries=0)
    model.request_defaults["max_tokens"] = 40
    branch = Branch(chat_model=model)
    result = await branch.communicate("Name a colour as JSON.", response_format=Colour)
    assert isinstance(result, Colour)
    assert (await model.capabilities()).json_schema is False


def _long_history(branch: Branch, turns: int) -> None:
    words = "the quick brown fox jumps over the lazy dog " * 12  # ~110 tokens
    for i in range(turns):
        branch.add_message(Instruction(instruction=f"turn {i}: {words}"))
        branch.add_message(AssistantResponse(response=f"noted {i}: {words}"))


async def test_a_request_is_fitted_to_llama_server_slot(llama_server_4: RealServer) -> None:
    """A history that fits the model (2,048) but not one of the server's four slots (512):
    refused before sending, naming the slot; fitted with fit_context=True and answered."""
    wire = WireCount()
    branch = Branch(chat_model=_model(llama_server_4, wire))
    _long_history(branch, 4)
    with pytest.raises(ContextWindowError, match="512-token context window") as caught:
        await branch.communicate("Say hi.")
    assert "one of its server's 4 slots" in str(caught.value) and wire.sent == 0
    reply = await branch.communicate("Say hi.", fit_context=True)
    assert isinstance(reply, str) and wire.sent == 1
    assert branch.messages[-2].metadata["context_fit"]["window"] == 512
