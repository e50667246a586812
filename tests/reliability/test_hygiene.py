"""Using lion_nb leaves the root logger alone, writes only into its data directory and
opens no network connection unless a provider call is made."""

import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import asyncio, logging, socket
    attempts = []
    real_connect = socket.socket.connect
    def spy(self, address):
        attempts.append(address)
        return real_connect(self, address)
    socket.socket.connect = spy
    root = logging.getLogger()
    before = (list(root.handlers), root.level, list(root.filters))

    from pydantic import BaseModel
    from lion_nb import Branch, Session, iModel

    class Out(BaseModel):
        x: int

    async def main():
        api = iModel(provider="scripted", replies=["hi", '{"x": 1}', "plain"])
        cli = iModel(provider="scripted", cli=True, replies=["streamed text"])
        session = Session()
        b = session.new_branch(system="s", chat_model=api)
        await b.chat("a")
        await b.communicate("b", response_format=Out)
        await b.chat_and_record("c")
        c = session.new_branch(chat_model=cli)
        async for _ in c.run("go", stream_persist=True):
            pass
        b.to_dict()
        b._repr_html_()
        repr(b)

    asyncio.run(main())
    assert (list(root.handlers), root.level, list(root.filters)) == before, "root logger changed"
    assert attempts == [], attempts
    print("clean")
""")


def _files(root):
    return sorted(
        os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs
    )


def test_no_files_outside_data_dir_no_network_no_root_logger(tmp_path):
    home, cwd = tmp_path / "home", tmp_path / "cwd"
    home.mkdir()
    cwd.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LION_NB", "XDG_"))}
    env["HOME"] = str(home)
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith("clean")
    assert _files(cwd) == []
    written = _files(home)
    assert written, "stream_persist wrote no snapshot"
    assert all(f.startswith(os.path.join(".local", "share", "lion_nb")) for f in written), written
