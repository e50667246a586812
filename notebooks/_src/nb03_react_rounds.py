"""03 — ReAct rounds with two Python tools, live in the rounds view."""

from _src import code, md

CELLS = [
    md("""
    # ReAct: reasoning and acting in rounds

    `branch.ReAct(instruction, tools=...)` lets a model work on a task in **rounds**. In each
    round the model writes its analysis and may ask for tool calls; `lion_nb` runs the calls
    (your Python functions), records the requests and results, and starts the next round, until
    the model says it is done or the round budget (`max_extensions`) is used up. A final turn
    then answers the original question.

    The **rounds view** shows this as it happens: round *N* — the analysis (streaming while the
    model writes it), the tool calls side by side with their results, the round's duration and
    token usage.

    To run deterministically and offline, this notebook uses the **scripted model**: a model
    whose replies are written in advance. Each reply below is exactly the JSON a real model is
    asked to produce in that round, so you can also read them as "what a good model would say".
    """),
    md("""
    ## Two tools

    Tools are plain Python functions, sync or async. The name, the type hints and the docstring
    become the schema the model is offered.
    """),
    code("""
    def get_weather(city: str) -> dict:
        \"\"\"Current weather for a city: temperature in Celsius and the sky.\"\"\"
        readings = {"Paris": {"temp_c": 18, "sky": "cloudy"}, "Rome": {"temp_c": 24, "sky": "sunny"}}
        return readings.get(city, {"error": f"no station in {city}"})


    async def to_fahrenheit(celsius: float) -> float:
        \"\"\"Convert a temperature from degrees Celsius to degrees Fahrenheit.\"\"\"
        return round(celsius * 9 / 5 + 32, 1)
    """),
    md("""
    ## The script: what the model says in each round

    An analysis round replies with `analysis`, `extension_needed` (is another round needed?)
    and `action_requests` (the tool calls to run now; independent calls go together and run
    concurrently). The final turn replies with `answer`. `delay` slows the scripted stream down
    so you can watch it.
    """),
    code("""
    def analysis(text, more, *calls):
        \"\"\"One analysis round's reply: reasoning, whether another round is needed, tool calls.\"\"\"
        requests = [{"function": name, "arguments": args} for name, args in calls]
        return {
            "json": {"analysis": text, "extension_needed": more, "action_requests": requests},
            "delay": 0.02,
        }


    SCRIPT = [
        analysis(
            "I need the current weather in both cities. The two lookups are independent.",
            True,
            ("get_weather", {"city": "Paris"}),
            ("get_weather", {"city": "Rome"}),
        ),
        analysis(
            "Paris: 18 C and cloudy. Rome: 24 C and sunny. The user wants Fahrenheit.",
            True,
            ("to_fahrenheit", {"celsius": 18}),
            ("to_fahrenheit", {"celsius": 24}),
        ),
        analysis("Paris: 64.4 F. Rome: 75.2 F. Nothing is missing.", False),
        {
            "json": {"answer": "Rome is warmer: 75.2 F and sunny, against 64.4 F and cloudy in Paris."},
            "delay": 0.02,
        },
    ]
    """),
    md("""
    ## Run it, live

    Create the branch with its tools, show the rounds view, then start the run. The view fills
    in round by round while the cell runs.
    """),
    code("""
    from lion_nb import Branch, iModel
    from lion_nb.widgets.rounds_view import ReActRoundsView

    branch = Branch(
        system="You are a careful weather assistant.",
        chat_model=iModel(provider="scripted", replies=list(SCRIPT)),
        tools=[get_weather, to_fahrenheit],
        name="weather",
    )
    rounds = ReActRoundsView(branch)
    rounds
    """),
    code("""
    answer = await branch.ReAct(
        "Which is warmer right now, Paris or Rome? Give both temperatures in Fahrenheit.",
        max_extensions=3,
    )
    print(answer)
    """),
    md("""
    ## What was recorded

    Each round is one `operate` call: an instruction, the model's reply, and then one
    `action_request` / `action_response` pair per tool call. The whole ReAct run is **one** run
    (`RunStart` … `RunEnd`), with `RoundStart` / `RoundEnd` signals marking the rounds.
    """),
    code("""
    for i, message in enumerate(branch.messages):
        print(f"{i:>2} {message.role:<16} {message.text[:70]!r}")
    """),
    code("""
    # the view's model of the run: rounds, each with its steps and (request, response) pairs
    for r in rounds.rounds:
        title = "answer" if r.final else f"round {r.number}"
        calls = [
            f"{pair.request.function}({pair.request.arguments}) -> {pair.response.output}"
            for step in r.steps
            for pair in step.actions
        ]
        calls = "; ".join(calls) or "(no tool calls)"
        print(f"{title:<8} {r.status:<5} {r.duration_ms:5.0f} ms  {calls}")
    """),
    md("""
    ### What the model was offered

    The scripted model keeps every request it received, so you can check what a real model
    would have seen: in round 1, the two tool schemas, and a response schema asking for
    `analysis`, `extension_needed` and `action_requests`.
    """),
    code("""
    first_request = branch.chat_model.provider.requests[0]
    for tool in first_request.tools:
        fn = tool["function"]
        print(fn["name"], "—", fn["description"], "—", list(fn["parameters"]["properties"]))
    print("reply fields:", list(first_request.response_schema["properties"]))
    """),
    md("""
    ## Round by round in code: `ReActStream`

    `ReActStream` is the same run as an async generator: it yields each round's result as soon
    as the round (tool calls included) is complete, then the final answer object. Stopping
    early (`break`) ends the run as stopped.
    """),
    code("""
    streamed = Branch(
        system="You are a careful weather assistant.",
        chat_model=iModel(provider="scripted", replies=list(SCRIPT)),
        tools=[get_weather, to_fahrenheit],
        name="weather (stream)",
    )
    async for step in streamed.ReActStream(
        "Which is warmer right now, Paris or Rome? Give both temperatures in Fahrenheit.",
        max_extensions=3,
    ):
        if hasattr(step, "analysis"):
            outputs = [r.output for r in getattr(step, "action_responses", [])]
            print(f"analysis: {step.analysis}\\n   tool outputs: {outputs}")
        else:
            print(f"answer:   {step.answer}")
    """),
    md("""
    ## With a real model

    Pass any model that can return JSON: `iModel(provider="openai", model="gpt-4.1-mini")`,
    `iModel(provider="ollama", model="llama3.2")`, or a CLI agent. Models with native tool
    calling (OpenAI-compatible APIs) may call the tools natively instead of through
    `action_requests`; `lion_nb` runs both kinds. The tiny embedded model can be made to call a
    tool with a forced `tool_choice`:
    """),
    code("""
    import os
    from pathlib import Path

    import lion_nb
    from lion_nb.models.imodel import local_model_available

    # The model's side of this cell, recorded once: it replays where the embedded model is not
    # installed (the tool still runs here, for real). See 07_cassettes.
    CASSETTE = Path("data/03_react_rounds.cassette.jsonl")
    MODE = os.environ.get("LION_NB_CASSETTE_MODE", "auto")

    if local_model_available() or CASSETTE.exists():
        local = Branch(
            chat_model=iModel(provider="local", temperature=0, seed=7, max_tokens=48),
            tools=[get_weather],
            name="forced tool call",
        )
        with lion_nb.cassette(CASSETTE, mode=MODE):
            result = await local.operate(
                instruction="What is the weather in Rome?",
                tools=[get_weather],
                tool_choice="get_weather",
            )
        for message in local.messages:
            print(f"{message.role:<16} {message.text[:80]!r}")
    else:
        print("The embedded model is not installed (make install-local); skipping this cell.")
    """),
]
