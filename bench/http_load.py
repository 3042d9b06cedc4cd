"""A light HTTP/1.1 load client for bench/web_load.py (``--client raw``, the default).

Each client is one keep-alive connection on raw asyncio streams (uvloop when installed)
sending requests whose bytes were built once, and reading each answer by its
Content-Length (or chunks). No HTTP library runs per request, so at 500 requests per
second the client takes a small share of a core (it prints its own CPU per request) and
leaves the rest to the server it measures; ``--client httpx`` (the first driver) takes
several times more.

Closed loop (``rate`` 0): each client sends its next request when the last is answered.
Open loop (``rate`` R): client ``i`` of ``n`` is due to send every ``n / R`` seconds, offset
by ``i / R``; a request waits for its connection when the previous answer is late, and its
latency counts from when it was due, so a server that falls behind shows it (no
coordinated omission).
"""

from __future__ import annotations

import asyncio
import re
import resource
import time
from typing import Any

CONTENT_LENGTH = re.compile(rb"\r\ncontent-length:[ \t]*(\d+)", re.IGNORECASE)
CHUNKED = re.compile(rb"\r\ntransfer-encoding:[ \t]*chunked", re.IGNORECASE)
CLOSE = re.compile(rb"\r\nconnection:[ \t]*close", re.IGNORECASE)


def request_bytes(host: str, target: str, headers: dict[str, str]) -> bytes:
    """A GET request, keep-alive, with these headers."""
    lines = [f"GET {target} HTTP/1.1", f"Host: {host}",
             *(f"{k}: {v}" for k, v in headers.items()), "", ""]
    return "\r\n".join(lines).encode("latin-1")


async def read_response(reader: asyncio.StreamReader) -> tuple[int, bool]:
    """One response off the connection: (status, whether the server closes it)."""
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head[9:12])
    if (m := CONTENT_LENGTH.search(head)) is not None:
        await reader.readexactly(int(m.group(1)))
    elif CHUNKED.search(head):
        while size := int((await reader.readuntil(b"\r\n")).split(b";")[0], 16):
            await reader.readexactly(size + 2)
        await reader.readuntil(b"\r\n")  # no trailers are sent
    return status, CLOSE.search(head) is not None


async def drive(host: str, port: int, requests: list[bytes], clients: int, seconds: float,
                rate: float = 0.0, warmup: float = 1.0) -> dict[str, Any]:
    """Client ``i`` sends ``requests[i % len(requests)]``; the first ``warmup`` seconds are
    not counted. Latencies in ms of the answers with status 200; other statuses and
    connection errors are counted by name."""
    interval = clients / rate if rate else 0.0
    latencies: list[float] = []
    errors: dict[str, int] = {}
    counted, sent = [0], [0]
    start = time.perf_counter()
    warm_until = start + warmup
    stop_at = warm_until + seconds

    async def one(i: int) -> None:
        request = requests[i % len(requests)]
        reader = writer = None
        due = start + interval * i / clients
        while (now := time.perf_counter()) < stop_at:
            if interval:
                if due > now:
                    await asyncio.sleep(due - now)
                now, due = due, due + interval
            try:
                if writer is None:
                    reader, writer = await asyncio.open_connection(host, port)
                writer.write(request)
                status, closing = await read_response(reader)
                key = None if status == 200 else str(status)
            except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError,
                    ValueError) as e:
                status, closing, key = 0, True, type(e).__name__
            took = time.perf_counter() - now
            sent[0] += 1
            if closing and writer is not None:
                writer.close()
                reader = writer = None
            if now < warm_until:
                continue
            counted[0] += 1
            if key is None:
                latencies.append(took * 1000)
            else:
                errors[key] = errors.get(key, 0) + 1
        if writer is not None:
            writer.close()

    cpu = cpu_s()
    await asyncio.gather(*(one(i) for i in range(clients)))
    return {"latencies": latencies, "errors": errors, "measured": counted[0], "sent": sent[0],
            "client_cpu_s": cpu_s() - cpu}


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run(host: str, port: int, requests: list[bytes], clients: int, seconds: float,
        rate: float = 0.0) -> dict[str, Any]:
    """:func:`drive` on uvloop when it is installed (it is with uvicorn[standard])."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(drive(host, port, requests, clients, seconds, rate))
    return uvloop.run(drive(host, port, requests, clients, seconds, rate))
