"""What a real run's processes are doing, read from /proc (no psutil): which processes are
its workers (their stdout is a log under STATE/logs/JOB/attemptN-rankR.log), which is its
zygote, and which TCP sockets they listen on."""

from __future__ import annotations

import ipaddress
import os
import re
from pathlib import Path

WORKER_LOG = re.compile(r"/logs/(?P<job>[^/]+)/attempt(?P<attempt>\d+)-rank(?P<rank>\d+)\.log$")
TCP_LISTEN = "0A"


def pids() -> list[int]:
    return [int(d) for d in os.listdir("/proc") if d.isdigit()]


def _readlink(path: str) -> str | None:
    try:
        return os.readlink(path)
    except OSError:
        return None


def ppid(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()
    return int(fields[1]) if fields[0] != "Z" else None


def workers(state: Path) -> dict[int, tuple[str, int]]:
    """Live worker processes of the run in ``state``: pid -> (job, attempt)."""
    prefix = str(state.resolve() / "logs") + "/"
    out = {}
    for pid in pids():
        target = _readlink(f"/proc/{pid}/fd/1")
        if target and target.startswith(prefix) and ppid(pid) is not None:
            m = WORKER_LOG.search(target)
            if m:
                out[pid] = (m["job"], int(m["attempt"]))
    return out


def zygotes(scheduler_pid: int) -> list[int]:
    found = []
    for pid in pids():
        if ppid(pid) == scheduler_pid:
            try:
                if b"ringsched.backends.zygote" in Path(f"/proc/{pid}/cmdline").read_bytes():
                    found.append(pid)
            except OSError:
                pass
    return found


def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return inodes
    for fd in fds:
        t = _readlink(f"/proc/{pid}/fd/{fd}")
        if t and t.startswith("socket:["):
            inodes.add(t[8:-1])
    return inodes


def _address(hex_addr: str) -> str:
    raw = bytes.fromhex(hex_addr)
    if len(raw) == 4:
        return str(ipaddress.IPv4Address(raw[::-1]))
    words = [raw[i:i + 4][::-1] for i in range(0, 16, 4)]  # four little-endian 32-bit words
    return str(ipaddress.IPv6Address(b"".join(words)))


def listening(of_pids: list[int]) -> list[tuple[int, str, int]]:
    """(pid, address, port) of every TCP socket in LISTEN state held by ``of_pids``."""
    owner = {}
    for pid in of_pids:
        for ino in _socket_inodes(pid):
            owner[ino] = pid
    out = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            if f[3] == TCP_LISTEN and f[9] in owner:
                addr, port = f[1].split(":")
                out.append((owner[f[9]], _address(addr), int(port, 16)))
    return out


def is_loopback(address: str) -> bool:
    ip = ipaddress.ip_address(address)
    mapped = getattr(ip, "ipv4_mapped", None)
    return (mapped or ip).is_loopback
