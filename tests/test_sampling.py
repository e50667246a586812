"""``lion_nb.tokens.sample_distribution`` against a straightforward reimplementation written
here from the documented semantics (llama.cpp's order, and temperature first as in Hugging
Face transformers), on random distributions, plus cases checked by hand."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lion_nb.errors import ConfigurationError
from lion_nb.sampling import TokenProbability
from lion_nb.tokens import sample_distribution


def reference(
    top: list[tuple[str, float]],
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    min_p: float | None = None,
    temperature_first: bool = False,
) -> list[float]:
    """The samplers one by one over a dict of survivors, most likely first."""
    ranked = sorted(range(len(top)), key=lambda i: (-top[i][1], i))
    # survivors: index -> probability (normalised)
    total = sum(math.exp(lp) for _, lp in top)
    keep = {i: math.exp(top[i][1]) / total for i in ranked}

    def normalise(d: dict[int, float]) -> dict[int, float]:
        s = sum(d.values())
        return {i: p / s for i, p in d.items()}

    def temper(d: dict[int, float]) -> dict[int, float]:
        if temperature == 0:
            best = min(d, key=lambda i: ranked.index(i))
            return {best: 1.0}
        return normalise({i: math.exp(top[i][1] / temperature) for i in d})

    if temperature_first:
        keep = temper(keep)
    if top_k:
        keep = normalise({i: keep[i] for i in [i for i in ranked if i in keep][:top_k]})
    if top_p is not None and top_p < 1:
        kept: dict[int, float] = {}
        for i in [i for i in ranked if i in keep]:
            kept[i] = keep[i]
            if sum(kept.values()) >= top_p - 1e-9:
                break
        keep = normalise(kept)
    if min_p:
        largest = max(keep.values())
        keep = normalise({i: p for i, p in keep.items() if p >= min_p * largest - 1e-12})
    if not temperature_first:
        keep = temper(keep)
    return [keep.get(i, 0.0) for i in range(len(top))]


def as_top(probs: list[float]) -> list[tuple[str, float]]:
    total = sum(probs)
    pairs = [(f"t{i}", math.log(p / total)) for i, p in enumerate(probs)]
    return sorted(pairs, key=lambda pair: -pair[1])


distributions = st.lists(st.floats(0.001, 1.0), min_size=1, max_size=20).map(as_top)
settings_ = st.fixed_dictionaries(
    {
        "temperature": st.one_of(st.just(0.0), st.floats(0.05, 3.0)),
        "top_k": st.one_of(st.none(), st.integers(0, 25)),
        "top_p": st.one_of(st.none(), st.floats(0.0, 1.0)),
        "min_p": st.one_of(st.none(), st.floats(0.0, 1.0)),
        "temperature_first": st.booleans(),
    }
)


@settings(max_examples=400, deadline=None)
@given(distributions, settings_)
def test_agrees_with_the_reference_in_both_orders(top: list[tuple[str, float]], kw: dict) -> None:
    got = sample_distribution(top, **kw)
    want = reference(top, **kw)
    assert [t for t, _ in got] == [t for t, _ in top]
    assert [p for _, p in got] == pytest.approx(want, abs=1e-9)
    assert math.fsum(p for _, p in got) == pytest.approx(1.0)


# hand-checked: probabilities 0.5, 0.3, 0.15, 0.05
TOP = [("a", math.log(0.5)), ("b", math.log(0.3)), ("c", math.log(0.15)), ("d", math.log(0.05))]


def probs(**kw: object) -> list[float]:
    return [round(p, 6) for _, p in sample_distribution(TOP, **kw)]  # type: ignore[arg-type]


def test_no_setting_leaves_the_distribution_as_it_is() -> None:
    assert probs() == [0.5, 0.3, 0.15, 0.05]
    assert probs(top_p=1.0, min_p=0.0, top_k=0) == [0.5, 0.3, 0.15, 0.05]
    assert probs(top_k=10) == [0.5, 0.3, 0.15, 0.05]  # k larger than the list


def test_each_cut_renormalises_what_is_left() -> None:
    assert probs(top_k=2) == [0.625, 0.375, 0.0, 0.0]
    assert probs(top_p=0.8) == [0.625, 0.375, 0.0, 0.0]  # 0.5 + 0.3 reaches 0.8 exactly
    assert probs(top_p=0.81) == [0.526316, 0.315789, 0.157895, 0.0]
    assert probs(top_p=0.0) == [1.0, 0.0, 0.0, 0.0]  # at least the most likely stays
    assert probs(min_p=0.3) == [0.526316, 0.315789, 0.157895, 0.0]  # 0.15 = 0.3 x 0.5 stays
    assert probs(min_p=0.31) == [0.625, 0.375, 0.0, 0.0]


def test_temperature_reshapes_the_survivors() -> None:
    assert probs(temperature=0) == [1.0, 0.0, 0.0, 0.0]
    sharp = probs(temperature=0.5)  # p^2 renormalised
    assert sharp == [round(x / 0.3650, 6) for x in (0.25, 0.09, 0.0225, 0.0025)]
    assert probs(top_k=2, temperature=0.5) == [round(0.25 / 0.34, 6), round(0.09 / 0.34, 6), 0, 0]


def test_the_order_changes_what_survives() -> None:
    # temperature 2 flattens: sqrt(p) = .707, .548, .387, .224 (sum 1.866): the first two
    # hold 0.672 < 0.8, so top-p keeps three when the temperature comes first
    llama = probs(temperature=2.0, top_p=0.8)
    hf = probs(temperature=2.0, top_p=0.8, temperature_first=True)
    assert [p > 0 for p in llama] == [True, True, False, False]
    assert [p > 0 for p in hf] == [True, True, True, False]


def test_ties_keep_the_given_order() -> None:
    tied = [("x", math.log(0.4)), ("y", math.log(0.4)), ("z", math.log(0.2))]
    assert [p for _, p in sample_distribution(tied, top_k=1)] == [1.0, 0.0, 0.0]
    assert [p for _, p in sample_distribution(tied, temperature=0)] == [1.0, 0.0, 0.0]
    assert [round(p, 6) for _, p in sample_distribution(tied, min_p=1.0)] == [0.5, 0.5, 0.0]


def test_next_tokens_values_are_read_by_probability() -> None:
    given = [TokenProbability("a", 0.6), TokenProbability("b", 0.2)]  # the rest was not stored
    got = sample_distribution(given)
    assert got == [("a", pytest.approx(0.75)), ("b", pytest.approx(0.25))]
    assert isinstance(got[0], TokenProbability) and got[0].text == "a"
    assert sample_distribution([]) == []


@pytest.mark.parametrize(
    "kw",
    [
        {"temperature": -1},
        {"top_k": -1},
        {"top_k": 1.5},
        {"top_p": 1.5},
        {"min_p": -0.1},
        {"temperature": math.inf},
    ],
)
def test_settings_out_of_range_are_refused(kw: dict) -> None:
    with pytest.raises(ConfigurationError, match="sampling settings out of range"):
        sample_distribution(TOP, **kw)


def test_a_probability_given_as_a_logprob_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="log-probabilit"):
        sample_distribution([("a", 0.7), ("b", 0.3)])
