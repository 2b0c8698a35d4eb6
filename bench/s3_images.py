#!/usr/bin/env python3
"""The client side of bench/s3-images.sh: COUNT uploads of one image through Exosphere's API, then
their downloads, one after the other on one keep-alive connection (http.client), each checked;
then the same downloads by their signed URLs, which the server (--s3-redirect on) answers with a
302 to a presigned GET that this client follows on a keep-alive connection to the store. Prints
the three durations in seconds and writes the ids' file.

    s3_images.py PORT TOKEN IMAGE COUNT IDS_FILE
"""
import http.client
import json
import sys
import time
import urllib.parse

port, token, path, count, ids_path = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
with open(path, "rb") as file:
    body = file.read()
connection = http.client.HTTPConnection("127.0.0.1", int(port), timeout=60)
headers = {"Authorization": f"Bearer {token}", "Content-Type": "image/png"}
ids = []
signed = []
start = time.monotonic()
for _ in range(count):
    connection.request("POST", "/users/me/images", body=body, headers=headers)
    answer = connection.getresponse()
    data = answer.read()
    if answer.status != 201:
        sys.exit(f"upload answered {answer.status}: {data[:200]!r}")
    created = json.loads(data)
    ids.append(created["id"])
    signed.append(created["signedUrl"])
uploads = time.monotonic() - start
start = time.monotonic()
for image in ids:
    connection.request("GET", f"/users/me/images/{image}", headers={"Authorization": f"Bearer {token}"})
    answer = connection.getresponse()
    data = answer.read()
    if answer.status != 200 or data != body:
        sys.exit(f"download of {image} answered {answer.status} with {len(data)} bytes")
downloads = time.monotonic() - start
store = None
start = time.monotonic()
for url in signed:
    connection.request("GET", url)
    answer = connection.getresponse()
    answer.read()
    if answer.status != 302:
        sys.exit(f"signed URL answered {answer.status}, not a redirect to the store")
    location = urllib.parse.urlsplit(answer.getheader("Location"))
    if store is None:
        store = http.client.HTTPConnection(location.hostname, location.port, timeout=60)
    store.request("GET", location.path + "?" + location.query)
    answer = store.getresponse()
    data = answer.read()
    if answer.status != 200 or data != body:
        sys.exit(f"the presigned GET answered {answer.status} with {len(data)} bytes")
redirected = time.monotonic() - start
with open(ids_path, "w") as file:
    file.write("\n".join(ids) + "\n")
print(f"{uploads:.6f} {downloads:.6f} {redirected:.6f}")
