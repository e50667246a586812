"""Branches the inspector's tests share: a long scripted history (``big_branch``) and a short
real conversation with runs and a tool call (``conversation``)."""

from __future__ import annotations

from lion_nb import Branch, Session, iModel
from lion_nb.messages import AssistantResponse, Instruction
from lion_nb.provenance import provenance_of
from tests.support.scripted import scripted

__all__ = ["add", "big_branch", "conversation", "scripted"]


def big_branch(n: int, *, model: iModel | None = None) -> Branch:
    branch = Branch(system="You are terse.", chat_model=model or scripted())
    for i in range((n - 1) // 2):
        branch.add_message(Instruction(instruction=f"question {i}: " + "words " * 8))
        branch.add_message(
            AssistantResponse(
                response=f"answer {i} **bold** " * 4,
                metadata={"usage": {"input_tokens": 10 + i, "output_tokens": 5}},
            )
        )
    return branch


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


async def conversation() -> Branch:
    """Real turns on the scripted model: communicate, a tool call through act, communicate."""
    session = Session()
    branch = session.new_branch(
        system="Be brief.",
        name="demo",
        chat_model=scripted(
            {
                "text": "Hi!",
                "usage": {"input_tokens": 9, "output_tokens": 2, "total_cost_usd": 0.002},
            },
            "It is 5.",
        ),
        tools=[add],
    )
    provenance_of(branch)
    await branch.communicate("hello")
    await branch.act([{"function": "add", "arguments": {"a": 2, "b": 3}, "id": "call_1"}])
    await branch.communicate("what is 2+3?")
    return branch
