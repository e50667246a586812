"""10 — Tokens, a lesson: what the model reads, next-token prediction, sampling explained,
temperature side by side, a fork from an unlikely token, sampling ×5 and the tree of what could
have been. Presentable in Voilà in about 20 minutes; ships a cassette, so it runs without the
model."""

from _src import code, md

CELLS = [
    md("""
    # What the model reads, and what it could have said

    A language model reads **tokens** (words, pieces of words, markers) and writes one token at a
    time. At each step it gives every token of its vocabulary a probability, and a **sampler**
    picks one. This lesson follows that on the **embedded SmolLM2 model**, on a conversation you
    can change:

    1. what the model actually reads: the prompt, token by token;
    2. what it predicts next: its distribution over the next token;
    3. how sampling turns a distribution into a token (temperature, top-k, top-p, min-p);
    4. temperature, side by side;
    5. a fork from an unlikely token;
    6. sampling ×5, and the tree of what could have been.

    The model's calls were recorded into `data/10_tokens.cassette.jsonl`, which ships with the
    notebook: without the model (Binder, say) the same cells replay from it.
    """),
    code("""
    import os
    from pathlib import Path

    import lion_nb
    from lion_nb import Branch, iModel
    from lion_nb.tokens import sample_distribution

    # The cassette of this notebook. (The test suite replays it strictly: mode "replay".)
    CASSETTE = Path(os.environ.get("LION_NB_CASSETTE", "data/10_tokens.cassette.jsonl"))
    MODE = os.environ.get("LION_NB_CASSETTE_MODE", "auto")
    lion_nb.use_cassette(CASSETTE, mode=MODE, speed=None)

    SYSTEM = "You are a helpful assistant."
    # temperature 0: always the most likely token; logprobs=8: each token's 8 most likely rivals
    model = iModel(provider="local", temperature=0, seed=0, max_tokens=48, logprobs=8)


    def bar(p, width=30):
        return "█" * max(1, round(p * width)) if p >= 0.005 else "·"
    """),
    md("""
    ## 1. What the model reads

    A conversation is not sent as you see it. The model's **chat template** wraps each message
    in markers (`<|im_start|>user` … `<|im_end|>`), and the **tokenizer** cuts the result into
    tokens. `await model.tokenize(messages)` gives exactly that; `lion_nb.prompt_view` draws it:
    each token a chip tinted by the message it belongs to, the special markers outlined, and the
    count against the model's window.
    """),
    code("""
    conversation = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "What is the capital of France?"},
    ]
    tokens = await model.tokenize(conversation)
    special = [t.text for t in tokens if t.special]
    print(f"{len(tokens)} tokens, {len(special)} of them special markers: {special[:4]}")
    print("the user's question as tokens:", [t.text for t in tokens if t.message == 1])
    await lion_nb.prompt_view(model, conversation)
    """),
    md("""
    ## 2. Next-token prediction

    Given what it read (and, here, the start of its answer), the model's output is one
    distribution over its whole vocabulary. `await model.next_tokens(messages, k=8,
    prefix=...)` gives its 8 most likely next tokens with their probabilities — the model's
    own numbers, before any sampling setting. A leading space is part of a token: `' Paris'`.
    """),
    code("""
    predicted = {}
    for question, start in [
        ("What is the capital of France?", "The capital of France is"),
        ("Describe the weather.", "Today the sky is"),
    ]:
        predicted[start] = await model.next_tokens(question, k=8, prefix=start)
        print(f"after {start!r}:")
        for text, p in predicted[start]:
            print(f"  {text!r:14} {p:6.1%}  {bar(p)}")
    """),
    md("""
    The first distribution is sharp: the model is sure. The second is flat: many continuations
    are plausible, and which one is written depends on how the token is picked.

    ## 3. Sampling, explained

    A sampler reshapes the distribution before it draws. llama.cpp (and so the embedded model)
    applies, in order: **top-k** keeps the k most likely tokens; **top-p** keeps the smallest
    set of most likely tokens whose probabilities reach p; **min-p** drops tokens less likely
    than min-p × the most likely one; **temperature** T then divides the log-probabilities by T
    (below 1 the likely get likelier; above 1 the distribution flattens; 0 leaves only the most
    likely). `sample_distribution` computes exactly that over the 8 tokens we have. Hugging Face
    transformers applies temperature *first*: the order changes what survives.
    """),
    code("""
    top = predicted["Today the sky is"]  # the flat distribution of section 2
    settings = {"temperature": 1.5, "top_k": 40, "top_p": 0.8, "min_p": 0.05}
    cuts_first = sample_distribution(top, **settings)
    temperature_first = sample_distribution(top, **settings, temperature_first=True)
    print(f"{'token':14}{'model':>8}{'llama.cpp':>11}{'T first':>9}")
    for (text, p), (_, a), (_, b) in zip(top, cuts_first, temperature_first, strict=True):
        print(f"{text!r:14}{p:>8.1%}{a:>11.1%}{b:>9.1%}")
    kept = [sum(1 for _, q in d if q > 0) for d in (cuts_first, temperature_first)]
    print(f"survivors: {kept[0]} with llama.cpp's order, {kept[1]} with temperature first")
    """),
    md("""
    In the chat view, the same lives on every token of a reply: open the *Tokens* view of a
    reply, hover a token, and choose **How sampling chose this** — four sliders redraw the bars
    in the page at once, in both orders (section 6 opens one).

    ## 4. Temperature, side by side

    One question, three temperatures, same seed. *Surprise* is −ln p of each token the sampler
    took (0 for a certain one): the hotter, the more surprising the tokens taken, on average.
    """),
    code("""
    TEMPERATURES = (0.2, 0.8, 1.5)
    by_temperature = {}
    for t in TEMPERATURES:
        b = Branch(system=SYSTEM, chat_model=model)
        await b.communicate("Describe the weather today in one sentence.", temperature=t, seed=0)
        by_temperature[t] = b
        taken = b.messages[-1].tokens
        surprise = sum(-token.logprob for token in taken) / len(taken)
        print(f"T = {t}: mean surprise {surprise:.2f} nats/token | {b.messages[-1].text}")
    """),
    md("""
    ## 5. A fork from an unlikely token

    `await branch.fork_at_token(message_id, index, text)` makes a fork whose reply keeps the
    first `index` tokens, puts `text` at position `index`, and lets the model go on from there.
    Below: the least likely token the sampler took at T = 1.5, replaced by the model's own
    favourite at that position. The original is untouched. (In the chat view, choosing an
    alternative in a token's pop-up does this.)
    """),
    code("""
    hot = by_temperature[1.5]
    original = hot.messages[-1]
    i = min(range(len(original.tokens)), key=lambda k: original.tokens[k].logprob)
    taken = original.tokens[i]
    favourite = next(text for text, _ in taken.top if text != taken.text)
    print(f"token {i}: the sampler took {taken.text!r}; the favourite was {favourite!r}")

    fork = await hot.fork_at_token(original.id, i, favourite)
    print("original:", original.text)
    print("fork:    ", fork.messages[-1].text)
    print(f"original untouched: {hot.messages[-1] is original}")
    """),
    md("""
    ## 6. Sampling ×5 and the tree of what could have been

    *Sample ×5* answers the same turn five times at once, each on its own fork with its own
    seed, at the temperature shown beside the button (0.8 here: the model's own is 0, which
    would give five identical replies). The replies share a start, then diverge: the **tree of
    what could have been** merges them — the shared start once, a branch where they part, how
    many samples took each branch — growing live as they stream. Select a node (arrow keys,
    Enter) and the chat view shows that reply. The *Tokens* control on a reply tints its tokens;
    hover one for its alternatives and *How sampling chose this*.
    """),
    code("""
    quiz = Branch(system=SYSTEM, chat_model=model)
    await quiz.communicate("What is the capital of France? Answer in one sentence.")
    chat = lion_nb.view(quiz, height=420)
    samples = await chat.asample(5, temperature=0.8)
    tree = chat.reply_tree
    print(f"{samples.total} samples; all share {samples.shared} tokens")
    print(f"the tree: {tree.heading()}")
    chat.show_tokens()  # the shown reply's tokens, tinted; hover one
    chat
    """),
]
