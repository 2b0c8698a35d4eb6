#!/usr/bin/env python3
"""A storm of sign-ins as real clients make it: many clients at once, each waiting as long as
a 503 or 429 answer's Retry-After says before trying again (a closed loop that retried at once
would only measure how fast the server can say no). Prints the outcome counts.

Usage: signin_storm.py PORT SECONDS CLIENTS USERS PASSWORD
"""
import http.client
import json
import random
import sys
import threading
import time

port, seconds, clients, users, password = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
deadline = time.monotonic() + seconds
counts = {}
lock = threading.Lock()


def client():
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    while time.monotonic() < deadline:
        body = json.dumps({"email": f"user{random.randint(1, users)}@bench.example", "password": password})
        try:
            connection.request("POST", "/users/signin", body, {"Content-Type": "application/json"})
            response = connection.getresponse()
            response.read()
            status, retry = response.status, response.getheader("Retry-After")
        except (OSError, http.client.HTTPException):
            connection.close()
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            status, retry = "error", "1"
        with lock:
            counts[status] = counts.get(status, 0) + 1
        if status in (429, 503, "error"):
            time.sleep(min(float(retry or 1), max(0.0, deadline - time.monotonic())))


threads = [threading.Thread(target=client) for _ in range(clients)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(" ".join(f"{status}={count}" for status, count in sorted(counts.items(), key=lambda item: str(item[0]))))
