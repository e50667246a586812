"""A branch and its fork with real scripted turns on both sides (the compare tests share it;
``scripted`` is re-exported from tests/support/scripted.py)."""

from __future__ import annotations

from lion_nb import Branch, Session
from lion_nb.provenance import provenance_of
from tests.support.scripted import scripted


async def forked_pair() -> tuple[Branch, Branch]:
    session = Session()
    origin = session.new_branch(
        system="Be brief.",
        name="origin",
        chat_model=scripted(
            {"text": "Paris.", "usage": {"input_tokens": 20, "output_tokens": 2}},
            {
                "text": "About 2.1 million people.",
                "usage": {"input_tokens": 40, "output_tokens": 8},
            },
        ),
    )
    await origin.communicate("Capital of France?")
    fork = session.fork(origin, 2, name="what-if")
    fork.chat_model = scripted(
        {
            "text": "About 2 million people live there.",
            "usage": {"input_tokens": 41, "output_tokens": 9},
        },
        {"text": "The Eiffel Tower.", "usage": {"input_tokens": 60, "output_tokens": 4}},
    )
    provenance_of(origin), provenance_of(fork)
    await origin.communicate("Population?")
    await fork.communicate("Population?")
    await fork.communicate("Famous landmark?")
    return origin, fork
