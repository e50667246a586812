"""04 — Structured output and parse: the parse view, a validation failure, handle_validation
modes and ParseAttempt rounds."""

from _src import code, md

CELLS = [
    md("""
    # Structured output and `parse`

    Often you want data, not prose: a pydantic model you can compute with. `lion_nb` gives you
    two ways in:

    * `branch.communicate(..., response_format=Model)` asks the model for JSON matching the
      model's schema, records the exchange, and returns a validated instance;
    * `branch.parse(text, Model)` turns any text into an instance — locally first (find the
      JSON, match keys loosely, validate), then, if that fails, with a few **repair turns**
      that ask a model to restate the text as valid JSON. `parse` records nothing.

    The **parse view** shows a result as a tree, the validation errors per field, and the
    parse attempts that led to it. It also fills in *live* while a structured reply streams.

    This notebook runs on the offline scripted model (replies written in advance), with an
    optional cell for the embedded model at the end.
    """),
    code("""
    from pydantic import BaseModel, Field


    class Ingredient(BaseModel):
        name: str
        grams: int = Field(ge=0)


    class Recipe(BaseModel):
        title: str
        minutes: int = Field(gt=0, description="Total time, in minutes")
        vegetarian: bool
        ingredients: list[Ingredient]
    """),
    md("""
    ## 1. A structured reply, live

    The scripted model will answer with the JSON of a `Recipe`, streamed word by word. A parse
    view made from the *type* `Recipe` and the branch follows the branch's next reply and
    validates each JSON value as soon as it is complete (not the whole text again per chunk,
    which would be quadratic for long replies).
    """),
    code("""
    from lion_nb import Branch, iModel
    from lion_nb.widgets.parse_view import ParseView

    soup = Recipe(
        title="Tomato soup",
        minutes=35,
        vegetarian=True,
        ingredients=[Ingredient(name="tomatoes", grams=800), Ingredient(name="onion", grams=150)],
    )
    model = iModel(provider="scripted", replies=[{"json": soup.model_dump(), "delay": 0.03}])
    branch = Branch(system="You write recipes.", chat_model=model, name="recipes")

    live = ParseView(Recipe, branch=branch)
    live
    """),
    code("""
    recipe = await branch.communicate("A simple vegetarian soup, please.", response_format=Recipe)
    print(type(recipe).__name__, "—", recipe.title, f"({recipe.minutes} min)")
    print("total grams:", sum(i.grams for i in recipe.ingredients))
    """),
    md("""
    The model was asked for JSON matching the schema. The scripted model keeps its requests, so
    you can see the schema it was sent:
    """),
    code("""
    import json

    schema = model.provider.requests[-1].response_schema
    for name, prop in schema["properties"].items():
        print(f"{name:<12} {json.dumps(prop)}")
    print("required:", schema["required"])
    """),
    md("""
    A parse view can also show a finished result — here the `recipe` we got back:
    """),
    code("""
    ParseView(recipe)
    """),
    md("""
    ## 2. When validation fails: repair turns and `ParseAttempt`

    Here is a reply a model might really give: chatty, with the JSON embedded in a sentence, a
    number written in words and an impossible quantity.
    """),
    code("""
    messy_data = {
        "title": "Pancakes",
        "minutes": "about twenty",
        "vegetarian": "yes",
        "ingredients": [{"name": "flour", "grams": 200}, {"name": "milk", "grams": -1}],
    }
    messy = "Sure! Here is the recipe: " + json.dumps(messy_data)
    print(messy)
    """),
    md("""
    `parse` finds the JSON in the text, but validation fails: `minutes` is not an integer, and
    `grams` must be at least 0. (`"yes"` is fine: pydantic reads it as `True`.) So `parse` asks
    the **parse model** to restate the text as JSON matching the schema — up to `max_retries`
    times. Each attempt is announced by a `ParseAttempt` signal (attempt 0 is the local one),
    and the parse view lists them.

    `parse` records nothing and needs no conversation, so any branch can parse; here a new one
    whose **parse model** is a scripted "fixer" that repairs the text in two steps: its first
    answer still has the negative quantity, its second is valid.
    """),
    code("""
    fixed_once = {**messy_data, "minutes": 20, "vegetarian": True}
    fixed_twice = {
        **fixed_once,
        "ingredients": [{"name": "flour", "grams": 200}, {"name": "milk", "grams": 300}],
    }
    fixer = iModel(
        provider="scripted",
        replies=[{"json": fixed_once, "delay": 0.02}, {"json": fixed_twice, "delay": 0.02}],
    )
    parser = Branch(parse_model=fixer, name="parser")

    attempts = ParseView(Recipe, branch=parser, title="parse() with repair turns")
    attempts
    """),
    code("""
    pancakes = await parser.parse(messy, Recipe, max_retries=2)
    print(pancakes)
    for a in attempts.attempts:
        problems = ", ".join(".".join(map(str, e["loc"])) for e in a["errors"]) or "none"
        print(f"attempt {a['attempt']}: {'valid' if a['ok'] else 'invalid'} (errors at: {problems})")
    print("messages on the branch:", len(parser.messages), "(parse records nothing)")
    """),
    md("""
    ## 3. `handle_validation`: what `parse` returns when nothing validates

    With no repair turns left (`max_retries=0` here, so nothing is sent to a model), the
    outcome depends on `handle_validation`:

    | mode | returns |
    | --- | --- |
    | `"return_value"` (the default for `parse`) | the original text, unchanged |
    | `"return_none"` | `None` |
    | `"raise"` | raises `ParseError`, which carries the raw text and the target type |
    """),
    code("""
    from lion_nb.errors import ParseError

    checker = Branch(name="checker")
    for mode in ("return_value", "return_none"):
        value = await checker.parse(messy, Recipe, max_retries=0, handle_validation=mode)
        print(f"{mode:<13} -> {value!r:.70}")

    try:
        await checker.parse(messy, Recipe, max_retries=0, handle_validation="raise")
    except ParseError as exc:
        error = exc
        print(f"{'raise':<13} -> ParseError for {exc.target.__name__}, raw text: {len(exc.raw)} chars")
    """),
    md("""
    The error wraps pydantic's `ValidationError`. Given the data and the error, the parse view
    marks the failing fields:
    """),
    code("""
    ParseView(messy_data, errors=error, title="Recipe (invalid)")
    """),
    md("""
    ## 4. `communicate` raises, but keeps the exchange

    `communicate(..., response_format=...)` uses the `"raise"` mode: a reply that cannot be
    parsed (after `num_parse_retries` repair turns) raises `ParseError`. The exchange is
    recorded before parsing, so the reply is not lost: it is the branch's last message.
    `operate` accepts `handle_validation=` like `parse` (its default is `"return_value"`).
    """),
    code("""
    chatty = Branch(chat_model=iModel(provider="scripted", replies=[messy]), name="chatty")
    try:
        await chatty.communicate("Pancakes, please.", response_format=Recipe, num_parse_retries=0)
    except ParseError as exc:
        print("ParseError:", str(exc).splitlines()[0])
    print("recorded reply:", chatty.messages[-1].text[:60], "...")
    """),
    md("""
    ## 5. With the embedded model: grammar-constrained JSON

    With the local model, `response_format` becomes a llama.cpp grammar: the model *cannot*
    produce anything but JSON of that shape. (A 135M-parameter model fills it with what it can;
    the structure is guaranteed, the content is up to the model.)
    """),
    code("""
    import os
    from pathlib import Path

    import lion_nb
    from lion_nb.models.imodel import local_model_available

    # The model's answer, recorded once: it replays where the embedded model is not installed.
    CASSETTE = Path("data/04_structured_output.cassette.jsonl")
    MODE = os.environ.get("LION_NB_CASSETTE_MODE", "auto")


    class Capital(BaseModel):
        country: str = Field(max_length=40)
        capital: str = Field(max_length=40)


    if local_model_available() or CASSETTE.exists():
        local = Branch(chat_model=iModel(provider="local", temperature=0, seed=7, max_tokens=40))
        with lion_nb.cassette(CASSETTE, mode=MODE):
            answer = await local.communicate("What is the capital of France?", response_format=Capital)
        print(repr(answer))
    else:
        print("The embedded model is not installed (make install-local); skipping this cell.")
    """),
]
