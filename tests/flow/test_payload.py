"""What a Ray node sends: the branch as data, model settings, never credentials."""

from __future__ import annotations

import threading

import pytest

from lion_nb import Branch, iModel
from lion_nb.flow.errors import NotTransferable
from lion_nb.flow.node import Operation
from lion_nb.flow.payload import build_payload, decode, encode, model_settings
from lion_nb.flow.worker import _build
from lion_nb.session.session import Session
from tests.support.scripted import scripted

SECRETS = (
    "sk-BRANCH-SECRET",
    "tok-OPT-SECRET",
    "tok-ENV-SECRET",
    "hdr-SECRET",
    "pw-URL-SECRET",
    "sk-PARAM-SECRET",
)


def secret_branch() -> Branch:
    model = iModel(
        provider="scripted",
        api_key="sk-BRANCH-SECRET",
        default_reply="ok",
        env={"VENDOR_TOKEN": "tok-ENV-SECRET"},
        headers={"Authorization": "Bearer hdr-SECRET"},
        base_url="https://user:pw-URL-SECRET@models.example/v1",
        temperature=0.2,
        max_tokens=50,
        access_token="tok-OPT-SECRET",
    )
    return Branch(system="s", chat_model=model, name="secretive")


def test_no_credential_is_in_anything_sent():
    branch = secret_branch()
    param_model = iModel(provider="openai", model="gpt-4.1-mini", api_key="sk-PARAM-SECRET")
    node = Operation("communicate", {"instruction": "hi", "chat_model": param_model,
                                     "context": [{"nested": param_model}]})  # fmt: skip
    parts = build_payload(node, branch)
    sent = b"".join(v if isinstance(v, bytes) else v.encode() for v in parts.values())
    for secret in SECRETS:
        assert secret.encode() not in sent, secret
    # what does travel: the settings needed to rebuild the models on the worker
    settings = decode(parts["chat_model"])
    assert settings["options"] == {"default_reply": "ok", "temperature": 0.2, "max_tokens": 50}
    assert settings["base_url"] == "https://models.example/v1"
    params = decode(parts["parameters"])
    rebuilt = params["chat_model"]
    assert isinstance(rebuilt, iModel) and rebuilt.model == "gpt-4.1-mini"
    assert params["context"][0]["nested"].provider_name == "openai"


def test_the_worker_rebuilds_the_same_branch():
    session = Session()
    branch = secret_branch()
    session.include_branches(branch)

    def shout(text: str) -> str:
        """Shout."""
        return text.upper()

    async def summarise(branch, text: str) -> str:
        return text[:2]

    branch.register_tools([shout])
    branch.context_providers.append(lambda b, ins: None)
    session.register_operation("summarise", summarise)
    node = Operation("summarise", {"text": "hello"})
    rebuilt, worker_node = _build(build_payload(node, branch))
    assert rebuilt.id == branch.id and rebuilt.name == "secretive"
    assert [m.id for m in rebuilt.messages] == [m.id for m in branch.messages]
    assert rebuilt.chat_model.request_defaults["temperature"] == 0.2
    assert "env" not in rebuilt.chat_model.request_defaults
    assert rebuilt.tools["shout"].func("a") == "A" and len(rebuilt.context_providers) == 1
    assert rebuilt.get_operation("summarise") is not None
    assert worker_node.operation == "summarise" and worker_node.parameters == {"text": "hello"}


@pytest.mark.parametrize(
    ("parameters", "match"),
    [
        ({"instruction": "x", "lock": threading.Lock()}, "parameter 'lock' cannot be sent"),
        ({"instruction": "x", "where": Branch()}, "parameter 'where': a Branch cannot travel"),
    ],
)
def test_what_cannot_travel_says_so(parameters, match):
    branch = Branch(chat_model=scripted("x"))
    with pytest.raises(NotTransferable, match=match):
        build_payload(Operation("communicate", parameters), branch)


def test_an_untravelling_tool_is_named():
    lock = threading.Lock()

    def guarded(x: int) -> int:
        """Uses a lock."""
        with lock:
            return x

    branch = Branch(chat_model=scripted("x"), tools=[guarded])
    with pytest.raises(NotTransferable, match="tool 'guarded' cannot be sent"):
        build_payload(Operation("communicate", {"instruction": "x"}), branch)


def test_settings_are_the_models_own():
    # one serialiser (iModel.settings), with the code-valued options cloudpickle carries
    def reply(request):
        return "computed"

    model = iModel(provider="scripted", default_reply=reply, api_key_env="MY_KEY", cli_path="x")
    assert model_settings(model) == {
        **model.settings(),
        "options": {**model.settings()["options"], "default_reply": reply},
    }
    assert model_settings(None) is None
    assert decode(encode({"a": 1}, "x")) == {"a": 1}
