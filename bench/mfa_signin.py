#!/usr/bin/env python3
"""Sign-ins per second with and without the second factor (issue 39), stdlib only.

    bench/mfa_signin.py PORT SECONDS ROUNDS THREADS USERS PASSWORD

Users plain1..USERS@bench.example have no second factor; mfa1..USERS@bench.example have TOTP on,
with the secret of mfaN the first 20 bytes of SHA-256("totpN") (bench/mfa-signin.sh puts them in
mfa_factors). All share PASSWORD. Alternating rounds of SECONDS each, A then B, ROUNDS of each,
after a 2-second warm-up of each; THREADS client threads, each on one keep-alive connection:

  A: POST /users/signin {email, password} -> 200 (a session), users round robin;
  B: POST /users/signin -> 401 mfa_required with an mfaToken, then POST /users/signin/mfa
     {mfaToken, code} with the current step's TOTP code -> 200 (a session).

A code is accepted once per 30-second step per user, so B's users are taken round robin and a
user is only given to a flow while the step it last used is behind the current one (with USERS
well over the flows of 30 seconds, no flow ever waits; how many did is printed). A round counts
the flows that completed (200 at the end) over the time from its start until its last thread is
done. Prints each round, the medians, the ratio B/A, the flows' p50 / p99 (all rounds of a kind
together) and those of B's steps alone; exits 1 when any flow failed.
"""
import hashlib
import hmac
import http.client
import json
import statistics
import struct
import sys
import threading
import time
from collections import Counter


def secret_of(number):
    return hashlib.sha256(f"totp{number}".encode()).digest()[:20]


def totp(secret, step):
    """RFC 6238 with SHA-1, 30-second steps, 6 digits."""
    mac = hmac.new(secret, struct.pack(">Q", step), hashlib.sha1).digest()
    offset = mac[19] & 15
    return "%06d" % ((int.from_bytes(mac[offset:offset + 4], "big") & 0x7FFFFFFF) % 1000000)


def current_step():
    return int(time.time() // 30)


class Client:
    """One keep-alive connection, opened again after any failure."""

    def __init__(self, port):
        self.port = port
        self.connection = None

    def post(self, path, body):
        """(status, parsed JSON body or None)."""
        for attempt in range(2):
            if self.connection is None:
                self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
            try:
                self.connection.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
                response = self.connection.getresponse()
                data = response.read()
                if response.getheader("Connection", "").lower() == "close":
                    self.connection.close()
                    self.connection = None
                try:
                    return response.status, json.loads(data) if data else None
                except ValueError:
                    return response.status, None
            except (OSError, http.client.HTTPException):
                self.connection.close()
                self.connection = None
                if attempt == 1:
                    return -1, None
        return -1, None


class Users:
    """Round robin over USERS users; for B, never a user whose last step is the current one."""

    def __init__(self, count):
        self.next = 0
        self.count = count
        self.last_step = [0] * (count + 1)
        self.lock = threading.Lock()
        self.waits = 0

    def take(self, mfa):
        while True:
            with self.lock:
                number = self.next % self.count + 1
                step = current_step()
                if not mfa or self.last_step[number] < step:
                    self.next += 1
                    if mfa:
                        self.last_step[number] = step
                    return number
                self.waits += 1
            time.sleep(0.05)

    def used(self, number, step):
        """The step whose code was sent (later than the one it was taken in across a boundary)."""
        with self.lock:
            self.last_step[number] = max(self.last_step[number], step)


def flow_a(client, users, password, record):
    number = users.take(False)
    start = time.monotonic()
    status, _ = client.post("/users/signin", {"email": f"plain{number}@bench.example", "password": password})
    end = time.monotonic()
    record(status == 200, f"signin {status}", end - start, None, None)


def flow_b(client, users, password, record):
    number = users.take(True)
    start = time.monotonic()
    status, problem = client.post("/users/signin", {"email": f"mfa{number}@bench.example", "password": password})
    middle = time.monotonic()
    if status != 401 or not problem or problem.get("code") != "mfa_required" or "mfaToken" not in problem:
        record(False, f"signin {status} {problem.get('code') if problem else ''}".strip(), middle - start, None, None)
        return
    # The code of the step now: at or after the step the user was taken in, so always newer than
    # the one it last used.
    step = current_step()
    users.used(number, step)
    code = totp(secret_of(number), step)
    status, answer = client.post("/users/signin/mfa", {"mfaToken": problem["mfaToken"], "code": code})
    end = time.monotonic()
    ok = status == 200 and bool(answer) and "accessToken" in answer
    outcome = "ok" if ok else f"mfa {status} {answer.get('code') if answer else ''}".strip()
    record(ok, outcome, end - start, middle - start, end - middle)


def run_round(port, seconds, threads, flow, users, password, clients):
    lock = threading.Lock()
    result = {"done": 0, "outcomes": Counter(), "flow": [], "first": [], "second": []}

    def record(ok, outcome, flow_seconds, first, second):
        with lock:
            result["outcomes"][outcome if not ok else "ok"] += 1
            if ok:
                result["done"] += 1
                result["flow"].append(flow_seconds)
                if first is not None:
                    result["first"].append(first)
                    result["second"].append(second)

    start = time.monotonic()
    end = start + seconds

    def worker(client):
        while time.monotonic() < end:
            flow(client, users, password, record)

    workers = [threading.Thread(target=worker, args=(clients[i],)) for i in range(threads)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()
    result["seconds"] = time.monotonic() - start
    result["rate"] = result["done"] / result["seconds"]
    return result


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else float("nan")


def ms(values):
    return f"p50 {percentile(values, 0.5) * 1000:.0f} ms, p99 {percentile(values, 0.99) * 1000:.0f} ms"


def main():
    port, seconds, rounds, threads = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    count, password = int(sys.argv[5]), sys.argv[6]
    plain, mfa = Users(count), Users(count)
    clients = [Client(port) for _ in range(threads)]
    kinds = {"A": (flow_a, plain), "B": (flow_b, mfa)}
    for name, (flow, users) in kinds.items():  # warm-up: connections, caches, the hashing pool
        run_round(port, 2, threads, flow, users, password, clients)
    results = {"A": [], "B": []}
    for number in range(1, rounds + 1):
        for name, (flow, users) in kinds.items():
            result = run_round(port, seconds, threads, flow, users, password, clients)
            results[name].append(result)
            extra = f", step 2 alone {ms(result['second'])}" if result["second"] else ""
            print(f"round {number} {name}: {result['done']} sign-ins in {result['seconds']:.2f} s = {result['rate']:.2f}/s, "
                  f"flow {ms(result['flow'])}{extra}, outcomes {dict(result['outcomes'])}", flush=True)

    def pooled(name, key):
        return [value for result in results[name] for value in result[key]]

    median = {name: statistics.median(result["rate"] for result in results[name]) for name in results}
    pairs = ", ".join(f"{b['rate'] / a['rate']:.2f}" for a, b in zip(results["A"], results["B"]))
    print()
    print(f"{threads} client threads, {seconds:g} s rounds, {rounds} of each, medians; latencies over all rounds of a kind")
    print(f"A, no second factor:   {median['A']:.2f} sign-ins/s, flow {ms(pooled('A', 'flow'))}")
    print(f"B, TOTP (two requests): {median['B']:.2f} sign-ins/s, flow {ms(pooled('B', 'flow'))}")
    print(f"  B's first step (401 mfa_required) {ms(pooled('B', 'first'))}; second step (POST /users/signin/mfa) alone {ms(pooled('B', 'second'))}")
    print(f"B/A: {median['B'] / median['A']:.2f} (round by round: {pairs})")
    print(f"B flows that waited for a user free in the current step: {mfa.waits}")
    failed = sum(result["outcomes"][outcome] for name in results for result in results[name]
                 for outcome in result["outcomes"] if outcome != "ok")
    if failed:
        print(f"FAIL: {failed} flows did not end in a session")
        sys.exit(1)


if __name__ == "__main__":
    main()
