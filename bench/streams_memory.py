"""The parts of bench/streams-memory.sh that speak HTTP (stdlib only).

  streams_memory.py fields PORT TOKENS_FILE KIB
      gives every user of TOKENS_FILE about KIB KiB of custom fields (string fields of 4,090
      bytes, under the 4,096-byte limit, and a boolean `flag`), by PATCH /users/me.
  streams_memory.py hold PORT TOKENS_FILE PER_USER STATUS_FILE
      opens PER_USER GET /users/me/events streams for every user of TOKENS_FILE, each on a socket
      with a 4 KiB receive buffer, reads each answer's head and nothing more, then one stream too
      many for the first user (it should be refused: 429); writes a JSON line to STATUS_FILE and
      waits for SIGTERM; then reads what each stream has left (a second of quiet at most) and
      writes a second JSON line: how many the server had ended (the last chunk, or the connection
      closed), how many said `event: resync`, and how much was left to read (KiB, mean and max).
  streams_memory.py patch PORT TOKENS_FILE COUNT CONNECTIONS
      COUNT PATCH /users/me toggling `flag`, round robin over the users, on CONNECTIONS keep-alive
      connections at once; prints one JSON object (statuses, seconds).
  streams_memory.py probe PORT TOKEN RATE STOP_FILE|SECONDS
      GET /users/me with TOKEN on one keep-alive connection, RATE a second (paced, never more than
      one outstanding), until STOP_FILE exists (or for SECONDS); prints one JSON object (p50, p99,
      max in ms, count, statuses).
  streams_memory.py rss PID STOP_FILE
      samples /proc/PID/status VmRSS every 10 ms until STOP_FILE exists; prints the peak in KiB.
"""
import json
import os
import selectors
import signal
import socket
import sys
import threading
import time


def tokens_of(path):
    return [line.strip() for line in open(path) if line.strip()]


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))


class Connection:
    """One keep-alive HTTP/1.1 connection, blocking."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buffer = b""

    def request(self, method, path, token, body=None):
        head = f"{method} {path} HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer {token}\r\n"
        if body is not None:
            head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        self.sock.sendall(head.encode() + b"\r\n" + (body or b""))
        while b"\r\n\r\n" not in self.buffer:
            self.fill()
        head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        lines = head.split(b"\r\n")
        status = int(lines[0].split()[1])
        length = 0
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
            elif name.strip().lower() == b"transfer-encoding":
                raise RuntimeError("chunked answers are not expected here")
        while len(self.buffer) < length:
            self.fill()
        body, self.buffer = self.buffer[:length], self.buffer[length:]
        return status, body

    def fill(self):
        data = self.sock.recv(1 << 20)
        if not data:
            raise RuntimeError("connection closed")
        self.buffer += data


def fields(port, tokens_file, kib):
    count = max(1, round(kib * 1024 / 4099))  # a field is about 4,099 bytes of JSON
    for n, token in enumerate(tokens_of(tokens_file)):
        data = {f"blob{i:02d}": (chr(97 + (n + i) % 26) * 4090) for i in range(count)}
        data["flag"] = False
        status, body = Connection(port).request("PATCH", "/users/me", token, json.dumps({"data": data}).encode())
        if status != 200:
            raise SystemExit(f"PATCH with {count} fields answered {status}: {body[:300]!r}")
    print(len(json.dumps(json.loads(body)["data"])))  # the last user's custom fields, in bytes


def open_stream(port, token):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connecting: the window
    sock.connect(("127.0.0.1", port))
    sock.sendall(f"GET /users/me/events HTTP/1.1\r\nHost: bench\r\nAccept: text/event-stream\r\n"
                 f"Authorization: Bearer {token}\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        data = sock.recv(1)  # the head, byte by byte: nothing of the stream is read
        if not data:
            break
        head += data
    status = int(head.split()[1]) if head.startswith(b"HTTP/1.1 ") else 0
    return sock, status


def hold(port, tokens_file, per_user, status_file):
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    tokens = tokens_of(tokens_file)
    streams, statuses = [], {}
    for token in tokens:
        for _ in range(per_user):
            sock, status = open_stream(port, token)
            statuses[status] = statuses.get(status, 0) + 1
            streams.append(sock) if status == 200 else sock.close()
    extra, extra_status = open_stream(port, tokens[0])
    extra.close()
    with open(status_file, "a") as out:
        out.write(json.dumps({"open": len(streams), "statuses": statuses, "one_too_many": extra_status}) + "\n")
    while not stop.wait(0.2):
        pass
    # Read what every stream has left, all at once, until each has ended (its last chunk, or the
    # connection closed) or a second passes with nothing from any.
    selector = selectors.DefaultSelector()
    tails, sizes = {}, {}
    for sock in streams:
        sock.setblocking(False)
        selector.register(sock, selectors.EVENT_READ)
        tails[sock] = b""
        sizes[sock] = 0
    ended = resynced = 0
    while tails:
        ready = selector.select(timeout=1)
        if not ready:
            break
        for key, _ in ready:
            sock = key.fileobj
            try:
                data = sock.recv(65536)
            except BlockingIOError:
                continue
            except ConnectionResetError:
                data = b""
            sizes[sock] += len(data)
            tail = tails[sock] + data
            if b"event: resync" in tail:
                resynced += 1
                tail = tail[tail.index(b"event: resync") + 13:]
            tails[sock] = tail[-64:]
            if data and b"\r\n0\r\n\r\n" not in tail:
                continue
            ended += 1
            selector.unregister(sock)
            del tails[sock]
    for sock in streams:
        sock.close()
    with open(status_file, "a") as out:
        out.write(json.dumps({"ended_by_server": ended, "resync_seen": resynced,
                              "left_kib_max": round(max(sizes.values(), default=0) / 1024),
                              "left_kib_mean": round(sum(sizes.values()) / max(1, len(sizes)) / 1024)}) + "\n")


def patch(port, tokens_file, count, connections):
    tokens = tokens_of(tokens_file)
    flags = [False] * len(tokens)
    lock = threading.Lock()
    state = {"next": 0, "statuses": {}}

    def worker():
        conn = Connection(port)
        while True:
            with lock:
                n = state["next"]
                if n >= count:
                    return
                state["next"] = n + 1
                user = n % len(tokens)
                flags[user] = not flags[user]
                body = json.dumps({"data": {"flag": flags[user]}}).encode()
            status, _ = conn.request("PATCH", "/users/me", tokens[user], body)
            with lock:
                state["statuses"][status] = state["statuses"].get(status, 0) + 1

    started = time.monotonic()
    threads = [threading.Thread(target=worker) for _ in range(connections)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print(json.dumps({"patches": count, "seconds": round(time.monotonic() - started, 2),
                      "statuses": state["statuses"]}))


def probe(port, token, rate, until):
    conn = Connection(port)
    conn.request("GET", "/users/me", token)  # connected and warm before the first timing
    latencies, statuses = [], {}
    interval = 1 / rate
    started = time.monotonic()
    deadline = started + float(until) if until.replace(".", "").isdigit() else None
    next_at = started
    while (time.monotonic() < deadline) if deadline else not os.path.exists(until):
        now = time.monotonic()
        if now < next_at:
            time.sleep(next_at - now)
        next_at += interval
        sent = time.monotonic()
        status, _ = conn.request("GET", "/users/me", token)
        latencies.append((time.monotonic() - sent) * 1000)
        statuses[status] = statuses.get(status, 0) + 1
    latencies.sort()
    pick = lambda q: round(latencies[min(len(latencies) - 1, int(len(latencies) * q))], 2)
    print(json.dumps({"count": len(latencies), "p50": pick(0.5), "p99": pick(0.99), "max": round(latencies[-1], 2),
                      "statuses": statuses}))


def rss(pid, stop_file):
    peak = 0
    while not os.path.exists(stop_file):
        peak = max(peak, rss_kib(pid))
        time.sleep(0.01)
    print(max(peak, rss_kib(pid)))


if __name__ == "__main__":
    command, args = sys.argv[1], sys.argv[2:]
    if command == "fields":
        fields(int(args[0]), args[1], float(args[2]))
    elif command == "hold":
        hold(int(args[0]), args[1], int(args[2]), args[3])
    elif command == "patch":
        patch(int(args[0]), args[1], int(args[2]), int(args[3]))
    elif command == "probe":
        probe(int(args[0]), args[1], float(args[2]), args[3])
    elif command == "rss":
        rss(int(args[0]), args[1])
    else:
        raise SystemExit(__doc__)
