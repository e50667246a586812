"""Real loopback servers the tests (and benchmarks) talk to. See ``chat_server``."""

from tests.servers.chat_server import (
    ChatServer,
    ErrorReply,
    RawReply,
    RecordedRequest,
    Reply,
    Stall,
    start_chat_server,
)

__all__ = [
    "ChatServer",
    "ErrorReply",
    "RawReply",
    "RecordedRequest",
    "Reply",
    "Stall",
    "start_chat_server",
]
