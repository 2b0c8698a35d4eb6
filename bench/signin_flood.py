#!/usr/bin/env python3
"""User sign-in latency beside a flood from one client address (issues 28 and 40).

    bench/signin_flood.py PORT SECONDS FLOODERS USER_EMAIL USER_PASSWORD [admin|guest|control]

Two phases of SECONDS each: a user signing in again and again (one connection at a time, from
192.0.2.44) alone, then the same beside FLOODERS threads posting as fast as they can from
198.51.100.66 (the server trusts X-Forwarded-For from 127.0.0.1): wrong admin sign-ins (`admin`,
the default), new guests (`guest`, POST /users/guest), or, as the floor a flood of this load
generator costs on the same cores, requests the server answers 404 at once (`control`). Prints the user's p50, p99 and max
latency and status counts per phase, and the flood's status counts.
"""
import http.client
import json
import sys
import threading
import time
from collections import Counter


def post(port, path, body, address):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.request("POST", path, body=json.dumps(body),
                           headers={"Content-Type": "application/json", "X-Forwarded-For": address})
        response = connection.getresponse()
        response.read()
        return response.status
    except OSError:
        return -1
    finally:
        connection.close()


def measure(port, seconds, email, password):
    latencies, statuses = [], Counter()
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        start = time.monotonic()
        status = post(port, "/users/signin", {"email": email, "password": password}, "192.0.2.44")
        latencies.append(time.monotonic() - start)
        statuses[status] += 1
        if status == 503:
            time.sleep(0.05)
    return latencies, statuses


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else float("nan")


def report(name, latencies, statuses):
    print(f"{name}: {len(latencies)} user sign-ins, p50 {percentile(latencies, 0.5) * 1000:.0f} ms, "
          f"p99 {percentile(latencies, 0.99) * 1000:.0f} ms, max {max(latencies) * 1000:.0f} ms, statuses {dict(statuses)}")


def main():
    port, seconds, flooders = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
    email, password = sys.argv[4], sys.argv[5]
    kind = sys.argv[6] if len(sys.argv) > 6 else "admin"
    flood_path, flood_body = {
        "admin": ("/admin/signin", lambda index: {"email": "root@bench.example", "password": f"a wrong guess {index}"}),
        "guest": ("/users/guest", lambda index: {"firstname": f"Flood {index}"}),
        "control": ("/no-such-route", lambda index: {}),
    }[kind]
    report("alone", *measure(port, seconds, email, password))
    stop = threading.Event()
    flood = Counter()
    lock = threading.Lock()

    def flooder(index):
        while not stop.is_set():
            status = post(port, flood_path, flood_body(index), "198.51.100.66")
            with lock:
                flood[status] += 1

    threads = [threading.Thread(target=flooder, args=(i,)) for i in range(flooders)]
    for thread in threads:
        thread.start()
    time.sleep(1)  # the flood fills what it can first
    latencies, statuses = measure(port, seconds, email, password)
    stop.set()
    for thread in threads:
        thread.join()
    report(f"beside {flooders} flooders", latencies, statuses)
    print(f"the flood's {flood_path} answers: {dict(flood)}")


if __name__ == "__main__":
    main()
