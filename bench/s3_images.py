#!/usr/bin/env python3
"""The client side of bench/s3-images.sh: COUNT uploads of one image through Exosphere's API, then
their downloads, one after the other on one keep-alive connection (http.client), each checked;
prints the two durations in seconds and the ids' file.

    s3_images.py PORT TOKEN IMAGE COUNT IDS_FILE
"""
import http.client
import json
import sys
import time

port, token, path, count, ids_path = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
with open(path, "rb") as file:
    body = file.read()
connection = http.client.HTTPConnection("127.0.0.1", int(port), timeout=60)
headers = {"Authorization": f"Bearer {token}", "Content-Type": "image/png"}
ids = []
start = time.monotonic()
for _ in range(count):
    connection.request("POST", "/users/me/images", body=body, headers=headers)
    answer = connection.getresponse()
    data = answer.read()
    if answer.status != 201:
        sys.exit(f"upload answered {answer.status}: {data[:200]!r}")
    ids.append(json.loads(data)["id"])
uploads = time.monotonic() - start
start = time.monotonic()
for image in ids:
    connection.request("GET", f"/users/me/images/{image}", headers={"Authorization": f"Bearer {token}"})
    answer = connection.getresponse()
    data = answer.read()
    if answer.status != 200 or data != body:
        sys.exit(f"download of {image} answered {answer.status} with {len(data)} bytes")
downloads = time.monotonic() - start
with open(ids_path, "w") as file:
    file.write("\n".join(ids) + "\n")
print(f"{uploads:.6f} {downloads:.6f}")
