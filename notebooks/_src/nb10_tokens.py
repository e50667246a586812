"""10 — Tokens: next-token prediction on the embedded model, temperature, a fork from an
unlikely token, and sampling ×5 (issue 25). Ships a cassette, so it runs without the model."""

from _src import code, md

CELLS = [
    md("""
    # What the model could have said: tokens and their probabilities

    A language model writes one **token** at a time (a word, a piece of a word, a space and a
    word...). At each step it gives a probability to every token of its vocabulary, and one of
    them is picked: the most likely one (temperature 0), or one drawn at random from the
    distribution (temperature > 0). This notebook looks at those distributions on the
    **embedded SmolLM2 model**, token by token, on the conversation you are having:

    1. what it predicts next after a given start;
    2. a reply with every token tinted by its probability;
    3. how **temperature** reshapes the distribution;
    4. a **fork from an unlikely token**: take another token there and let the model go on;
    5. **sampling ×5**: five replies to one question, and where they agree.

    Ask for the probabilities with `logprobs=K` (K alternatives per position, 0–20) on the model
    or per call. The calls were recorded on the embedded model into
    `data/10_tokens.cassette.jsonl`, which ships with the notebook: without the model (Binder,
    say) the same cells replay from it.
    """),
    code("""
    import math
    import os
    from pathlib import Path

    import lion_nb
    from lion_nb import Branch, iModel
    from lion_nb.models.base import ModelRequest

    # The cassette of this notebook. (The test suite replays it strictly: mode "replay".)
    CASSETTE = Path(os.environ.get("LION_NB_CASSETTE", "data/10_tokens.cassette.jsonl"))
    MODE = os.environ.get("LION_NB_CASSETTE_MODE", "auto")
    lion_nb.use_cassette(CASSETTE, mode=MODE, speed=None)

    SYSTEM = "You are a helpful assistant."
    # temperature 0: always the most likely token; logprobs=8: each token's 8 most likely rivals
    model = iModel(provider="local", temperature=0, seed=0, max_tokens=48, logprobs=8)
    """),
    md("""
    ## 1. Next-token prediction

    Give the model the start of its answer and ask for one token: its `tokens[0].top` is the
    distribution over what comes next (the 8 most likely tokens, with their log-probabilities;
    `math.exp` turns one into a probability). A leading space is part of a token: `' Paris'`.
    """),
    code("""
    def bar(p, width=40):
        return "█" * max(1, round(p * width)) if p >= 0.005 else "·"


    async def next_tokens(question, start):
        request = ModelRequest(
            messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}],
            prefix=start,  # the model's reply begins with this text; it continues it
            options={"max_tokens": 1},
        )
        response = await model.complete(request)
        return response.tokens[0].top


    for question, start in [
        ("What is the capital of France?", "The capital of France is"),
        ("Describe the weather.", "Today the sky is"),
    ]:
        print(f"after {start!r}:")
        for text, logprob in await next_tokens(question, start):
            p = math.exp(logprob)
            print(f"  {text!r:14} {p:6.1%}  {bar(p)}")
    """),
    md("""
    The first distribution is sharp: the model is sure. The second is flat: many continuations
    are plausible, and which one is written depends on how the token is picked.

    ## 2. A reply, token by token

    `AssistantResponse.tokens` lists the reply's tokens (`.text`, `.logprob`, `.top`); their
    texts join to exactly the reply. `lion_nb.tokens(message)` draws them tinted by probability
    (a legend names the five bins; hover a token for its alternatives). In the chat view, the
    *Tokens* control on a reply shows the same, live while it streams.
    """),
    code("""
    branch = Branch(system=SYSTEM, chat_model=model)
    answer = await branch.communicate("Describe the weather today in one sentence.")
    reply = branch.messages[-1]
    print(answer)
    spelled = "".join(t.text for t in reply.tokens) == answer
    print(f"{len(reply.tokens)} tokens; they spell the reply: {spelled}")
    unsure = sorted(range(len(reply.tokens)), key=lambda i: reply.tokens[i].logprob)[:3]
    for i in sorted(unsure):
        token = reply.tokens[i]
        rivals = [a for a, _ in token.top[1:4]]
        print(f"  token {i} {token.text!r}: p = {math.exp(token.logprob):.1%}; rivals {rivals}")
    lion_nb.tokens(reply)
    """),
    md("""
    ## 3. Temperature reshapes the distribution

    Sampling at temperature *T* draws token *i* with probability proportional to
    p<sub>i</sub><sup>1/T</sup>: below 1 the likely tokens get likelier (0.2 is nearly always
    the top one), above 1 the distribution flattens and unlikely tokens get their chance. Here is
    the distribution after *"Today the sky is"* reshaped for 0.2, 0.8 and 1.5 (over the 8 tokens
    listed, renormalised), then one reply to the same prompt at each temperature.
    """),
    code("""
    TEMPERATURES = (0.2, 0.8, 1.5)
    top = await next_tokens("Describe the weather.", "Today the sky is")


    def reshaped(top, t):
        weights = [math.exp(lp / t) for _, lp in top]
        return [w / sum(weights) for w in weights]


    columns = {t: reshaped(top, t) for t in TEMPERATURES}
    print(f"{'token':14}" + "".join(f"{'T = ' + str(t):>10}" for t in TEMPERATURES))
    for row, (text, _) in enumerate(top):
        print(f"{text!r:14}" + "".join(f"{columns[t][row]:>10.1%}" for t in TEMPERATURES))
    """),
    code("""
    by_temperature = {}
    for t in TEMPERATURES:
        b = Branch(system=SYSTEM, chat_model=model)
        await b.communicate("Describe the weather today in one sentence.", temperature=t, seed=0)
        by_temperature[t] = b
        tokens = b.messages[-1].tokens
        surprise = sum(-tok.logprob for tok in tokens) / len(tokens)
        print(f"T = {t}: mean surprise {surprise:.2f} nats/token | {b.messages[-1].text}")
    """),
    md("""
    The higher the temperature, the more surprising (less likely) the tokens the sampler takes,
    on average: *surprise* is −ln p, 0 for a certain token.

    ## 4. A fork from an unlikely token

    `await branch.fork_at_token(message_id, index, text)` makes a fork whose reply keeps the
    first `index` tokens, puts `text` at position `index`, and lets the model continue from
    there. The original is untouched; the fork records where it came from
    (`metadata["forked_from"]`). Below: the least likely token the sampler took at T = 1.5,
    replaced by the model's own favourite at that position. (In the chat view, choosing an
    alternative in the token view does this, and `‹ 1/2 ›` switches between the two.)
    """),
    code("""
    hot = by_temperature[1.5]
    original = hot.messages[-1]
    i = min(range(len(original.tokens)), key=lambda k: original.tokens[k].logprob)
    taken = original.tokens[i]
    favourite = next(text for text, _ in taken.top if text != taken.text)
    p = math.exp(taken.logprob)
    print(f"token {i}: the sampler took {taken.text!r} (p = {p:.1%}); the favourite was {favourite!r}")

    fork = await hot.fork_at_token(original.id, i, favourite)
    print("original:", original.text)
    print("fork:    ", fork.messages[-1].text)
    origin = fork.metadata["forked_from"]
    print(f"forked at token {origin['token_index']} of message {origin['message_id'][:8]}")
    print(f"original untouched: {hot.messages[-1] is original}")
    """),
    md("""
    ## 5. Sampling ×5: where do replies agree?

    `Conversation.asample(n, temperature=..., top_p=...)` (and `view.asample(...)` in the chat
    view, its *Sample ×5* control) answers the same turn `n` times at once, each on its own fork
    with its own seed, labelled with its settings. The result says per position how many of the
    replies still agree: they share a beginning, then diverge.
    """),
    code("""
    from lion_nb.session.conversation import Conversation

    quiz = Branch(system=SYSTEM, chat_model=model)
    await quiz.communicate("What is the capital of France? Answer in one sentence.")
    conversation = Conversation(quiz)
    samples = await conversation.asample(5, temperature=0.8)
    for fork in samples.branches:
        print(f"{fork.name}: {fork.messages[-1].text}")
    first = samples.agreement[0]
    run = next((k for k, a in enumerate(samples.agreement) if a < first), len(samples.agreement))
    agree = round(first * 5)
    print(f"all 5 share {samples.shared} tokens; {agree} of 5 agree on the first {run}, then diverge")
    print("agreement per position:", " ".join(f"{a:.1f}" for a in samples.agreement[:12]), "...")
    samples
    """),
    md("""
    Each sample is one more alternative of the reply: in a chat view showing this conversation,
    `‹ n/6 ›` steps through them and *Compare* sets two side by side.

    ## 6. The token view in the chat view

    The chat view shows the same on the conversation you are having: the *Tokens* control on a
    reply (opened here with `show_tokens()`) tints its tokens, plots their surprise in a strip
    above them, and shows a token's alternatives when you hover or focus it (the arrow keys move
    from token to token). Choosing an alternative forks the conversation there, as in section 4;
    *Sample ×5* does what section 5 did. `lion_nb.view(branch, tokens=True)` opens the token view
    of every new reply, live while it streams.
    """),
    code("""
    chat = lion_nb.view(branch, height=360)
    chat.show_tokens()  # the last reply's token view, open
    chat
    """),
]
