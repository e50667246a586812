"""Export/import: lossless JSON round trip, Markdown and self-contained HTML."""

from __future__ import annotations

import json
import sys

import pytest
from pydantic import BaseModel

from lion_nb import Branch, Session, iModel
from lion_nb.export import export_html, export_json, export_markdown, import_json
from lion_nb.messages import ActionRequest, ActionResponse, AssistantResponse, Instruction
from lion_nb.provenance import provenance_of


class Order(BaseModel):
    item: str
    qty: int
    tags: tuple[str, ...] = ()


def scripted(*replies):
    return iModel(provider="scripted", replies=list(replies))


async def rich_branch() -> Branch:
    """A branch with every kind of content an export must keep."""
    session = Session(name="s")
    branch = session.new_branch(
        system="Be brief.",
        name="main",
        chat_model=scripted(
            {
                "text": "Hello **there**",
                "thinking": "they said hi",
                "usage": {"input_tokens": 12, "output_tokens": 3, "total_cost_usd": 0.0001},
            },
            {"json": {"item": "tea", "qty": 2}},
        ),
    )
    provenance_of(branch)  # record runs from the start
    await branch.communicate("hi", context=[{"k": [1, 2]}], guidance="short")
    order = await branch.communicate("order", response_format=Order)
    request = ActionRequest(function="add", arguments={"a": 1, "pair": (2, 3)}, call_id="c1")
    branch.add_message(request)
    branch.add_message(
        ActionResponse(
            function="add",
            arguments={"a": 1},
            output={"sum": 3},
            call_id="c1",
            action_request_id=request.id,
        )
    )
    branch.add_message(ActionResponse(function="boom", output="ValueError: no", is_error=True))
    branch.add_message(
        AssistantResponse(
            response="done",
            metadata={"result": order, "usage": {"input_tokens": 5}, "pair": (1, "a")},
        )
    )
    branch.metadata["notes"] = {"created_by": "test"}
    return branch


async def test_json_round_trip_is_lossless() -> None:
    branch = await rich_branch()
    text = export_json(branch)
    back = import_json(text)
    assert back.id == branch.id and back.name == branch.name and back.user == branch.user
    assert back.metadata == branch.metadata
    assert list(back.messages) == list(branch.messages)  # every field of every message
    assert [type(m) for m in back.messages] == [type(m) for m in branch.messages]
    result = back.messages[-1].metadata["result"]
    assert isinstance(result, Order) and result == Order(item="tea", qty=2)
    assert back.messages[-1].metadata["pair"] == (1, "a")
    assert back.messages[-4].arguments["pair"] == (2, 3)
    assert back.messages[2].metadata["thinking"] == "they said hi"
    assert back.messages[2].usage == {
        "input_tokens": 12,
        "output_tokens": 3,
        "total_cost_usd": 0.0001,
    }
    # provenance: the two runs, their durations and the messages they recorded
    runs = provenance_of(back).runs
    assert [r.operation for r in runs] == ["communicate", "communicate"]
    assert all(r.status == "ok" and r.duration_ms > 0 for r in runs)
    assert runs[0].message_ids == [str(m.id) for m in branch.messages[1:3]]
    # re-exporting the import gives the same document, except what is not data: the
    # scripted model (its replies are code) and the session (a live object)
    first, again = json.loads(text), json.loads(export_json(back))
    assert first["branch"].pop("chat_model")["provider"] == "scripted"
    assert again["branch"].pop("chat_model") is None
    assert first.pop("session") == {"id": str(branch.session.id), "name": "s"}
    assert again.pop("session") is None
    assert again == first


async def test_fork_lineage_survives_export() -> None:
    branch = await rich_branch()
    fork = branch.fork(2)
    data = json.loads(export_json(fork))
    assert data["lineage"] == {
        "branch_id": str(branch.id),
        "at": str(branch.messages[2].id),
        "index": 2,
    }
    assert data["session"]["name"] == "s"
    back = import_json(export_json(fork))
    assert back.metadata["forked_from"] == fork.metadata["forked_from"]
    assert list(back.messages) == list(branch.messages[:3])


def test_credentials_are_never_exported() -> None:
    branch = Branch(
        chat_model=iModel(
            provider="openai", model="gpt-4.1-mini", api_key="sk-test-SECRET-123", temperature=0.2
        )
    )
    branch.add_message(Instruction(instruction="hi"))
    text = export_json(branch)
    assert "SECRET" not in text
    back = import_json(text)
    assert back._chat_model is not None and back._chat_model.model == "gpt-4.1-mini"
    assert json.loads(text)["branch"]["chat_model"]["options"] == {"temperature": 0.2}


def test_a_model_class_that_is_not_imported_is_kept_as_data_and_never_imported() -> None:
    branch = Branch()
    branch.add_message(AssistantResponse(response="x", metadata={"result": {"a": 1}}))
    data = json.loads(export_json(branch))
    data["branch"]["messages"][0]["metadata"]["result"] = {
        "__lion_nb_model__": "lion_nb_never_imported_mod:Thing",
        "data": {"a": 1},
    }
    back = import_json(json.dumps(data))
    assert "lion_nb_never_imported_mod" not in sys.modules
    assert back.messages[0].metadata["result"] == {
        "__lion_nb_model__": "lion_nb_never_imported_mod:Thing",
        "data": {"a": 1},
    }


@pytest.mark.parametrize(
    "text, match",
    [
        ("not json", "invalid JSON"),
        ("[1, 2]", "not a lion_nb export"),
        ('{"format": "other/1"}', "format 'other/1'"),
    ],
)
def test_bad_input_is_a_clear_error(text: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        import_json(text)


def test_an_invalid_message_is_named_by_position() -> None:
    branch = Branch()
    branch.add_message(Instruction(instruction="ok"))
    branch.add_message(AssistantResponse(response="ok"))
    data = json.loads(export_json(branch))
    data["branch"]["messages"][1]["role"] = "robot"
    with pytest.raises(ValueError, match="message 1 of the export is invalid"):
        import_json(json.dumps(data))


HOSTILE = "<script>alert(1)</script> <img src=x onerror=alert(2)> [x](javascript:alert(3))"


def hostile_branch() -> Branch:
    branch = Branch(name="hostile <b>name</b>")
    branch.add_message(Instruction(instruction="Say " + HOSTILE))
    branch.add_message(AssistantResponse(response="Here: " + HOSTILE + "\n\n**bold** text"))
    branch.add_message(ActionResponse(function="f", output=HOSTILE))
    return branch


def _live_html_and_links(md: str) -> list[str]:
    """What a CommonMark renderer with raw HTML on (GitHub, Lab) would turn into markup."""
    from markdown_it import MarkdownIt

    found = []
    for token in MarkdownIt("commonmark").parse(md):
        if token.type == "html_block":
            found.append(token.content)
        for child in token.children or ():
            if child.type == "html_inline":
                found.append(child.content)
            if child.type == "link_open":
                found.append(str(child.attrGet("href")))
    return found


def test_markdown_export_has_the_transcript_and_no_live_html() -> None:
    md = export_markdown(hostile_branch())
    assert md.startswith("# hostile")
    assert "**bold** text" in md
    assert "alert(1)" in md  # shown as text...
    assert _live_html_and_links(md) == []  # ...never as markup or a javascript: link


def test_markdown_export_notes_the_fork_origin() -> None:
    branch = hostile_branch()
    fork = branch.fork(1, name="fork")
    md = export_markdown(fork)
    assert f"*Forked from branch {branch.id} at message #1*" in md
    assert md.split("\n")[0] == "# fork" and md.split("\n")[1] == ""


def _elements(page: str) -> list[tuple[str, dict[str, str | None]]]:
    from html.parser import HTMLParser

    found: list[tuple[str, dict[str, str | None]]] = []

    class Collect(HTMLParser):
        def handle_starttag(self, tag, attrs):
            found.append((tag, dict(attrs)))

    Collect().feed(page)
    return found


def test_html_export_is_self_contained_and_inert() -> None:
    page = export_html(hostile_branch())
    assert page.startswith("<!DOCTYPE html>")
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    assert "lion-msg" in page and "<strong>bold</strong> text" in page
    assert "alert(1)" in page  # the hostile text is there, as text
    elements = _elements(page)
    tags = {tag for tag, _ in elements}
    assert "style" in tags
    assert not tags & {"script", "img", "iframe", "object", "embed", "link", "svg", "b"}
    for _tag, attrs in elements:
        assert not any(name.startswith("on") or name == "src" for name in attrs)
        assert not str(attrs.get("href") or "").startswith("javascript:")
