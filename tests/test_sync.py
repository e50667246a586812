"""``run_sync``: sync helpers outside a running loop see the caller's current context."""

import subprocess
import sys
import textwrap


def test_each_call_sees_the_callers_context_as_it_is_now():
    # a fresh interpreter: no loop runs there, so run_sync uses its cached private runner
    script = textwrap.dedent(
        """
        import contextvars
        from lion_nb.sync import run_sync

        var = contextvars.ContextVar("var", default="unset")

        async def read():
            return var.get()

        seen = [run_sync(read())]
        var.set("first")
        seen.append(run_sync(read()))
        token = var.set("second")
        seen.append(run_sync(read()))
        var.reset(token)
        seen.append(run_sync(read()))
        print(seen)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == "['unset', 'first', 'second', 'first']"


def test_a_sync_cassette_applies_in_a_plain_script(tmp_path):
    script = textwrap.dedent(
        f"""
        import lion_nb
        from lion_nb import Branch, iModel
        from lion_nb.sync import run_sync

        branch = Branch(chat_model=iModel(provider="scripted", replies=["live one", "live two"]))
        run_sync(branch.chat("warm up"))  # the first sync helper call creates the runner
        path = {str(tmp_path / "c.cassette.jsonl")!r}
        with lion_nb.cassette(path, mode="record"):
            run_sync(branch.chat("hello"))
        import pathlib
        print("hello" in pathlib.Path(path).read_text())
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == "True"
