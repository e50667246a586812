"""What identifies a request: what the model sees, never ids, credentials or machine paths."""

from __future__ import annotations

from lion_nb import iModel
from lion_nb.cassettes.matching import closest, describe, differences, fingerprint, request_of
from lion_nb.models.base import CLIRequest, ModelRequest


def api(messages: list, **kw) -> ModelRequest:
    return ModelRequest(messages=messages, **kw)


def test_credentials_transport_and_machine_settings_are_not_part_of_a_request() -> None:
    a = iModel(
        provider="openai",
        model="m",
        api_key="k1",
        base_url="http://a/v1",
        timeout=5,
        headers={"X-Key": "1"},
        temperature=0.2,
    )
    b = iModel(
        provider="openai",
        model="m",
        api_key="k2",
        base_url="http://b/v1",
        timeout=9,
        max_retries=5,
        temperature=0.2,
    )
    request = api([{"role": "user", "content": "hi"}])
    assert (
        request_of(a, request)
        == request_of(b, request)
        == {
            "provider": "openai",
            "model": "m",
            "messages": [{"content": "hi", "role": "user"}],
            "options": {"temperature": 0.2},
        }
    )


def test_sampling_options_tools_and_formats_are() -> None:
    model = iModel(provider="openai", model="m", temperature=0.2)
    base = api([{"role": "user", "content": "hi"}])
    keys = {
        fingerprint(request_of(model, base)),
        fingerprint(request_of(model, api(base.messages, options={"temperature": 0.9}))),
        fingerprint(request_of(model, api(base.messages, tools=[{"name": "f"}]))),
        fingerprint(request_of(model, api(base.messages, response_schema={"type": "object"}))),
        fingerprint(request_of(iModel(provider="openai", model="other", temperature=0.2), base)),
        fingerprint(request_of(iModel(provider="ollama", model="m", temperature=0.2), base)),
    }
    assert len(keys) == 6


def test_tool_call_ids_are_matched_by_position_not_value() -> None:
    def turn(cid: str) -> list:
        return [
            {"role": "assistant", "content": "", "tool_calls": [{"id": cid, "function": {}}]},
            {"role": "tool", "tool_call_id": cid, "content": "42"},
        ]

    model = iModel(provider="local")
    one = request_of(model, api(turn("call_8f2a")))
    two = request_of(model, api(turn("call_19bb")))
    assert one == two and one["messages"][1]["tool_call_id"] == "#1"


def test_cli_requests_match_prompt_system_resume_and_options_not_paths() -> None:
    a = iModel(provider="claude_code", cli_path="/opt/a/claude", cwd="/home/t", env={"X": "1"})
    b = iModel(provider="claude_code", cli_path="/usr/bin/claude", cwd="/home/s")
    request = CLIRequest(prompt="hi", system="s", resume="sess-1", options={"max_turns": 2})
    assert (
        request_of(a, request)
        == request_of(b, request)
        == {
            "provider": "claude_code",
            "model": None,
            "prompt": "hi",
            "system": "s",
            "resume": "sess-1",
            "options": {"max_turns": 2},
        }
    )


def test_differences_name_the_path_and_both_values() -> None:
    old = {"messages": [{"content": "Capital of France?"}], "options": {"temperature": 0}}
    new = {"messages": [{"content": "Capital of Spain?"}, {"content": "x"}], "options": {}}
    diffs = differences(old, new)
    assert diffs == [
        ("messages[0].content", "Capital of France?", "Capital of Spain?"),
        ("messages (length)", 1, 2),
        ("options.temperature", 0, None),
    ]
    assert describe(diffs) == (
        "messages[0].content: recorded 'Capital of France?', now 'Capital of Spain?'; "
        "messages: recorded 1 item, now 2; options.temperature: recorded 0, now (absent)"
    )


def test_the_closest_recording_is_the_one_at_the_same_position_first() -> None:
    def turn(*prompts: str) -> dict:
        messages = [{"role": "system", "content": "S"}]
        for i, prompt in enumerate(prompts):
            if i:
                messages.append({"role": "assistant", "content": f"A{i}"})
            messages.append({"role": "user", "content": prompt})
        return {"provider": "local", "model": None, "messages": messages}

    recorded = [turn("one"), turn("one", "two"), turn("one", "two", "three")]
    # the second prompt edited: compared with the second call, not the first (1 difference too)
    assert closest(turn("one", "TWO"), recorded) == (
        1,
        [("messages[3].content", "two", "TWO")],
    )
    assert closest(turn("ONE"), recorded) == (0, [("messages[1].content", "one", "ONE")])
    other = {**turn("one"), "provider": "openai"}
    assert closest(turn("one"), [other, recorded[1]])[0] == 1  # the same provider first
    same = [turn("x"), turn("y")]  # equally close: the nearest in call order
    assert closest(turn("z"), same, position=1)[0] == 1
    assert closest(turn("z"), []) is None
