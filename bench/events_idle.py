"""Opens many idle GET /users/me/events streams and measures what they cost the server.

Usage: events_idle.py PORT PID TOKENS_FILE STREAMS IDLE_SECONDS CHANGES

Opens STREAMS streams (one per token of TOKENS_FILE, round robin), 200 at a time; reads each head
and its first bytes; then, with every stream open and quiet for IDLE_SECONDS, samples the server's
resident memory and CPU time (/proc/PID); then makes CHANGES profile changes (PATCH /users/me, one
at a time, each by the user of a random open stream) and times how long until that stream has the
event. Prints one JSON object.
"""
import asyncio
import json
import random
import sys
import time


def proc(pid):
    with open(f"/proc/{pid}/status") as status:
        rss = next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])  # utime + stime
    return rss, ticks


class Stream:
    def __init__(self, token):
        self.token = token
        self.reader = None
        self.writer = None
        self.buffer = b""
        self.waiting = None  # (event name, future)

    async def open(self, port):
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", port)
        self.writer.write(
            f"GET /users/me/events HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n"
            f"Authorization: Bearer {self.token}\r\n\r\n".encode())
        await self.writer.drain()
        head = await self.reader.readuntil(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 200"):
            raise RuntimeError(head.decode(errors="replace"))
        await self.reader.readuntil(b"retry: ")  # the greeting, in the first chunk

    async def read_forever(self):
        while True:
            data = await self.reader.read(65536)
            if not data:
                return
            self.buffer += data
            if self.waiting and b"event: profile" in self.buffer:
                self.buffer = b""
                future, self.waiting = self.waiting, None
                future.set_result(time.monotonic())


async def patch(port, token, n):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    body = json.dumps({"data": {"n": n}}).encode()
    writer.write(
        f"PATCH /users/me HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)
    await writer.drain()
    status = (await reader.readline()).split()[1]
    writer.close()
    if status != b"200":
        raise RuntimeError(f"PATCH answered {status}")


async def main():
    port, pid, tokens_file, count, idle, changes = (
        int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6]))
    tokens = [line.strip() for line in open(tokens_file) if line.strip()]
    rss_before, ticks_before = proc(pid)
    streams = [Stream(tokens[i % len(tokens)]) for i in range(count)]
    started = time.monotonic()
    for first in range(0, count, 200):
        await asyncio.gather(*(stream.open(port) for stream in streams[first:first + 200]))
    opened = time.monotonic() - started
    readers = [asyncio.ensure_future(stream.read_forever()) for stream in streams]
    rss_open, ticks_open = proc(pid)
    await asyncio.sleep(idle)  # the measurement: every stream open and quiet
    rss_idle, ticks_idle = proc(pid)
    hz = 100
    latencies = []
    for n in range(changes):
        stream = random.choice(streams)
        future = asyncio.get_running_loop().create_future()
        stream.buffer = b""
        stream.waiting = future
        sent = time.monotonic()
        await patch(port, stream.token, n)
        received = await asyncio.wait_for(future, 10)
        latencies.append((received - sent) * 1000)
    latencies.sort()
    for reader in readers:
        reader.cancel()
    for stream in streams:
        stream.writer.close()
    print(json.dumps({
        "streams": count,
        "open_seconds": round(opened, 2),
        "rss_kib_before": rss_before,
        "rss_kib_open": rss_open,
        "rss_kib_after_idle": rss_idle,
        "kib_per_stream": round((rss_idle - rss_before) / count, 2),
        "idle_seconds": idle,
        "idle_cpu_percent": round((ticks_idle - ticks_open) / hz / idle * 100, 2),
        "change_to_event_ms": {"p50": round(latencies[len(latencies) // 2], 1),
                               "p99": round(latencies[int(len(latencies) * 0.99) - 1], 1),
                               "max": round(latencies[-1], 1)} if latencies else None,
    }))


asyncio.run(main())
