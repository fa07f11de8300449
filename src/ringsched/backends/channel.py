"""Who may speak for a worker: an HMAC challenge on the local launcher's channel.

The channel listens on 127.0.0.1, where any local process can connect; so a connection is a
worker's only if it proves it holds that worker's secret. Each worker gets a random key id
and a random 32-byte token from the launcher (through the zygote's stdin pipe, never argv or
the environment). Handshake, one JSON line each way:

    worker -> {"key": KEY, "pid": PID}
    launcher -> {"nonce": 32 random bytes, hex}
    worker -> {"mac": HMAC-SHA256(token, nonce | KEY), hex}
    launcher -> "ok" (go on) or "abort" (that worker was written off: exit without a checkpoint)

A wrong or late answer closes the connection; nothing it sent is read as an event.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import socket
from collections.abc import Callable

HANDSHAKE_TIMEOUT_S = 10.0


def new_secret() -> tuple[str, str]:
    """(key id, token) for one worker."""
    return secrets.token_hex(12), secrets.token_hex(32)


def mac(token: str, nonce: str, key: str) -> str:
    return hmac.new(bytes.fromhex(token), f"{nonce}|{key}".encode(), hashlib.sha256).hexdigest()


def _line(f) -> dict:
    raw = f.readline(4096)
    if not raw.endswith("\n"):
        raise ValueError("no complete line")
    v = json.loads(raw)
    if not isinstance(v, dict):
        raise ValueError("not an object")
    return v


def client(sock: socket.socket, f, key: str, token: str, pid: int) -> bool:
    """The worker's side; True when the launcher says go on."""
    sock.sendall((json.dumps({"key": key, "pid": pid}) + "\n").encode())
    nonce = str(_line(f)["nonce"])
    sock.sendall((json.dumps({"mac": mac(token, nonce, key)}) + "\n").encode())
    return f.readline(64).strip() == "ok"


def server(conn: socket.socket, f, token_of: Callable[[str], str | None]) -> str | None:
    """The launcher's side: the authenticated key, or None (the connection is to be closed)."""
    conn.settimeout(HANDSHAKE_TIMEOUT_S)
    try:
        key = str(_line(f).get("key", ""))
        token = token_of(key)
        nonce = secrets.token_hex(32)
        conn.sendall((json.dumps({"nonce": nonce}) + "\n").encode())
        answer = str(_line(f).get("mac", ""))
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    if token is None or not hmac.compare_digest(answer, mac(token, nonce, key)):
        return None
    conn.settimeout(None)
    return key
