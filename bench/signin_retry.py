#!/usr/bin/env python3
"""Sign-ins under clients that give up and clients that retry at once, against polite clients.

Two phases of SECONDS each, on one server:
  polite:  POLITE clients sign in one after another, each waiting for its answer and, on a 429 or
           503, for as long as Retry-After says;
  hostile: GONE clients each send a sign-in and give up after 0.2 s (their connection closed with
           the request still queued), again and again, while RETRY connections sign in in a tight
           loop, retrying a refused sign-in at once, as fast as the server answers.
Prints the successful sign-ins per second of the polite clients and of the retrying ones, their
ratio, and the answers by status.

Usage: signin_retry.py PORT SECONDS POLITE RETRY GONE USERS PASSWORD
"""
import http.client
import json
import random
import socket
import sys
import threading
import time

port, seconds = int(sys.argv[1]), float(sys.argv[2])
polite, retry, gone, users, password = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), sys.argv[7]


def body():
    return json.dumps({"email": f"user{random.randint(1, users)}@bench.example", "password": password})


def run(clients, deadline, counts, lock, wait_on_refusal, timeout=30.0):
    def client():
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        while time.monotonic() < deadline:
            try:
                connection.request("POST", "/users/signin", body(), {"Content-Type": "application/json"})
                response = connection.getresponse()
                response.read()
                status, retry_after = response.status, response.getheader("Retry-After")
            except (OSError, http.client.HTTPException):
                connection.close()
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
                status, retry_after = "gone" if timeout < 1 else "error", None
            with lock:
                counts[status] = counts.get(status, 0) + 1
            if wait_on_refusal and status in (429, 503, "error"):
                time.sleep(min(float(retry_after or 1), max(0.0, deadline - time.monotonic())))
        connection.close()

    return [threading.Thread(target=client) for _ in range(clients)]


def phase(groups):
    threads = [thread for group in groups for thread in group]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


lock = threading.Lock()
polite_counts = {}
phase([run(polite, time.monotonic() + seconds, polite_counts, lock, wait_on_refusal=True)])
time.sleep(1)  # what the polite phase left in the pool drains

retry_counts, gone_counts = {}, {}
deadline = time.monotonic() + seconds
phase([run(gone, deadline, gone_counts, lock, wait_on_refusal=False, timeout=0.2),
       run(retry, deadline, retry_counts, lock, wait_on_refusal=False)])

polite_rate = polite_counts.get(200, 0) / seconds
retry_rate = retry_counts.get(200, 0) / seconds
fmt = lambda counts: " ".join(f"{status}={count}" for status, count in sorted(counts.items(), key=lambda item: str(item[0])))
print(f"polite {polite_rate:.2f}/s retrying {retry_rate:.2f}/s ratio {retry_rate / polite_rate if polite_rate else 0:.2f}")
print(f"polite: {fmt(polite_counts)}; retrying: {fmt(retry_counts)}; giving up: {fmt(gone_counts)}")
