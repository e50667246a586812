"""09 — The providers people bring: Anthropic (thinking), Gemini (tools) and the OpenAI Responses
API (reasoning summaries, structured output, the token limit), with cost; live with a key, from a
cassette recorded from loopback test servers without one."""

from _src import code, md

CELLS = [
    md("""
    # Anthropic, Gemini and OpenAI's Responses API

    Most people who prompt in a notebook bring a key for one of the big APIs. `lion_nb` speaks
    each one's own streaming API, so what the model does shows up as it happens and is recorded
    the same way for all of them:

    | | provider | here it shows |
    | --- | --- | --- |
    | Anthropic | `iModel(provider="anthropic", model="claude-sonnet-4-5")` | extended thinking, kept apart from the reply |
    | Gemini | `iModel(provider="gemini", model="gemini-2.5-flash")` | a Python tool called through function calling |
    | OpenAI | `iModel(provider="openai", api="responses", model="gpt-5-mini")` | reasoning summaries, structured output, a reply cut by the token limit |

    and, for each, the **usage** and what the call **cost** (from the price table of
    `genai-prices`; `None` when a model has no known price — never a guess).

    **Setting a key.** Each provider reads its key from an environment variable:
    `ANTHROPIC_API_KEY`, `GEMINI_API_KEY` (or `GOOGLE_API_KEY`) and `OPENAI_API_KEY`. Set it
    *before* starting Jupyter (`export GEMINI_API_KEY=...` in the shell, or your platform's
    secrets settings), or in the kernel with `os.environ["GEMINI_API_KEY"] = getpass.getpass()`,
    or pass `api_key=` to `iModel`. Never type a key into a cell that is saved: `lion_nb` keeps
    keys out of its reprs, errors, cassettes and saved settings, but it cannot clean your
    notebook file. A missing or wrong key is an `AuthenticationError` naming the variable.

    **Without a key** the provider's cells run from a cassette, `data/09_providers.cassette.jsonl`.
    Its answers were **not written by the real models**: they were recorded from lion_nb's
    loopback test servers, which speak each API's streaming format event for event
    (`data/record_09_providers.py` records it again). The calls, streams, thinking, tool calls,
    usage and cost are handled exactly as live ones; only the words are scripted. The first
    code cell says, per provider, which you are looking at.
    """),
    code("""
    import json
    import os
    from contextlib import nullcontext
    from pathlib import Path

    import lion_nb
    from lion_nb import Branch, iModel
    from lion_nb.signals import RunEnd

    CASSETTE = Path("data/09_providers.cassette.jsonl")
    KEYS = {
        "anthropic": ["ANTHROPIC_API_KEY"],
        "gemini": ["GEMINI_API_KEY", "GOOGLE_API_KEY"],
        "openai": ["OPENAI_API_KEY"],
    }
    # data/record_09_providers.py sets these to record the cassette from its loopback servers;
    # the test suite sets LION_NB_REPLAY to use the cassette even where a key is set.
    SERVERS = json.loads(os.environ.get("LION_NB_09_SERVERS", "{}"))
    MODE = os.environ.get("LION_NB_09_MODE", "replay")
    LIVE = {
        provider: not SERVERS
        and not os.environ.get("LION_NB_REPLAY")
        and any(os.environ.get(name) for name in names)
        for provider, names in KEYS.items()
    }


    def model(provider, name, **options):
        \"""The model, aimed at the loopback server while the cassette is being recorded.\"""
        if provider in SERVERS:
            options.update(base_url=SERVERS[provider], api_key="loopback-test-key")
        return iModel(provider=provider, model=name, **options)


    def answers(provider):
        \"""Live with a key; from the cassette (recorded from a loopback server) without one.\"""
        if LIVE[provider]:
            return nullcontext()
        return lion_nb.cassette(CASSETTE, mode=MODE, speed=1.0)


    for provider, names in KEYS.items():
        if LIVE[provider]:
            print(f"{provider:<10} live: ${names[0]} is set")
        else:
            print(f"{provider:<10} no key: replayed from {CASSETTE} (a loopback test server's answers)")
    """),
    md("""
    A small helper collects what each run ended with (`RunEnd` carries the run's usage and
    cost), so the last section can compare them.
    """),
    code("""
    runs = {}


    def watch(branch, label):
        branch.observe(RunEnd, handler=lambda end: runs.setdefault(label, []).append(end))
        return branch


    def show_usage(message):
        usage = message.metadata.get("usage", {})
        cost = usage.get("total_cost_usd")
        print("finish_reason:", message.metadata.get("finish_reason"))
        print("usage:", {k: v for k, v in usage.items() if k != "total_cost_usd"})
        print("cost (genai-prices):", "unknown" if cost is None else f"${cost:.6f}")
    """),
    md("""
    ## 1. Anthropic: extended thinking

    With `thinking={"type": "enabled", "budget_tokens": ...}` Claude thinks before it answers.
    The thinking streams live, apart from the reply: the chat view shows it collapsed above the
    answer, and it is recorded as `metadata["thinking"]` — never mixed into the reply's text.
    Its signed blocks are kept too (`metadata["thinking_blocks"]`), because in a tool loop the
    API wants them sent back unchanged; lion_nb does that for you.
    """),
    code("""
    claude = model(
        "anthropic",
        "claude-sonnet-4-5",
        max_tokens=2048,
        thinking={"type": "enabled", "budget_tokens": 1024},
    )
    chat = watch(Branch(system="Answer in two sentences.", chat_model=claude), "anthropic")
    view = lion_nb.view(chat)
    view
    """),
    code("""
    with answers("anthropic"):
        reply = await chat.communicate("Why do onions make you cry?")
    print(reply)
    print("thinking:", chat.messages[-1].metadata["thinking"][:60], "...")
    show_usage(chat.messages[-1])
    """),
    md("""
    ## 2. Gemini: a Python tool through function calling

    A Python function becomes a tool: its signature and docstring are the schema Gemini sees
    (as a `functionDeclaration`). Gemini answers with a `functionCall`; lion_nb records it as an
    `ActionRequest`, runs the function, and sends the result back as a `functionResponse` in
    the next turn. Gemini 2.5 models think too: their thought parts arrive as thinking.
    """),
    code("""
    def fahrenheit(celsius: float) -> float:
        \"""Convert a temperature from degrees Celsius to degrees Fahrenheit.\"""
        return round(celsius * 9 / 5 + 32, 1)


    gemini = model("gemini", "gemini-2.5-flash")
    trip = watch(Branch(chat_model=gemini, tools=[fahrenheit]), "gemini")
    with answers("gemini"):
        await trip.operate(
            instruction="It is 24 °C in Rome. How warm is that for an American?", actions=True
        )
        answer = await trip.communicate("So, in one sentence?")
    print("thinking before the call:", trip.messages[1].metadata["thinking"])
    for message in trip.messages:
        if message.role == "action_request":
            print(f"tool call: {message.function}({message.arguments})")
        elif message.role == "action_response":
            print(f"tool result: {message.output}")
    print("answer:", answer)
    show_usage(trip.messages[-1])
    """),
    md("""
    ## 3. OpenAI's Responses API: reasoning summaries and structured output

    `iModel(provider="openai", ...)` speaks chat completions, as every OpenAI-compatible server
    does. `api="responses"` speaks OpenAI's newer Responses API instead, where its reasoning
    models report a **summary of their reasoning**: it streams as thinking. A `response_format`
    is sent as the API's JSON-schema output format, and the reply is validated into the model.
    """),
    code("""
    from pydantic import BaseModel


    class Packing(BaseModel):
        destination: str
        items: list[str]


    gpt = model("openai", "gpt-5-mini", api="responses")
    planner = watch(Branch(chat_model=gpt), "openai")
    with answers("openai"):
        packing = await planner.operate(
            instruction="A weekend in Rome in May: what should I pack? Five items.",
            response_format=Packing,
        )
    print(repr(packing))
    print("reasoning summary:", planner.messages[-1].metadata["thinking"].splitlines()[0])
    show_usage(planner.messages[-1])
    """),
    md("""
    When a reply hits the token limit (`max_tokens=`, sent as the API's `max_output_tokens`),
    the API ends it as *incomplete*; lion_nb records it with `finish_reason == "length"`, the
    same as for every other provider, and the chat view marks it truncated (with a *Continue*
    button).
    """),
    code("""
    brief = model("openai", "gpt-5-mini", api="responses", max_tokens=16)
    cut = watch(Branch(chat_model=brief), "openai")
    with answers("openai"):
        poem = await cut.communicate("Write a long poem about Rome.")
    print(repr(poem))
    print("finish_reason:", cut.messages[-1].metadata["finish_reason"])
    """),
    md("""
    ## 4. What it cost

    Every run ends with a `RunEnd` signal carrying the tokens and the cost of the model calls
    made during that run — the numbers the inspector, the chat view's status line and the flow
    view show. The cost comes from `genai-prices`, with cached input tokens at their own price.
    """),
    code("""
    for label, ends in runs.items():
        tokens = sum((end.input_tokens or 0) + (end.output_tokens or 0) for end in ends)
        costs = [end.total_cost_usd for end in ends]
        total = None if None in costs else sum(costs)
        shown = "unknown" if total is None else f"${total:.6f}"
        print(f"{label:<10} {len(ends)} runs, {tokens} tokens, cost {shown}")
    """),
]
