import json
import subprocess
import sys

FORBIDDEN = [
    "lion_nb.operations.chat",
    "lion_nb.operations.communicate",
    "lion_nb.operations.run",
    "lion_nb.operations.operate",
    "lion_nb.operations.react",
    "lion_nb.models.openai",
    "lion_nb.models.scripted",
    "lion_nb.models.local",
    "lion_nb.models.claude_code",
    "lion_nb.models.anthropic",
    "lion_nb.models.cost",
    "genai_prices",
    "anthropic",
    "openai",
    "google.genai",
    "httpx",
    "ipywidgets",
    "rich",
    "IPython",
    "llama_cpp",
    "markdown_it",
    "nh3",
]


def test_import_and_construction_load_nothing_heavy():
    code = (
        "import sys, json, lion_nb\n"
        "b = lion_nb.Branch(system='s')\n"
        "s = lion_nb.Session(); s.include_branches(b)\n"
        f"print(json.dumps([m for m in {FORBIDDEN!r} if m in sys.modules]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []


def test_import_opens_no_socket_and_touches_no_root_logger():
    code = (
        "import logging, socket\n"
        "def refuse(*a, **k): raise SystemExit('socket opened at import')\n"
        "socket.socket.connect = refuse\n"
        "before = (logging.getLogger().handlers[:], logging.getLogger().level)\n"
        "import lion_nb; lion_nb.Branch()\n"
        "assert (logging.getLogger().handlers, logging.getLogger().level) == before\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
