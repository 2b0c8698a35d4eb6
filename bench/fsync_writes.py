#!/usr/bin/env python3
"""The disk's own durable write rate for whole files, done the way the filesystem image storage
does it: THREADS threads, each in a loop writing SIZE bytes to a new temporary file, fsync, rename
into one of 256 prefix directories, fsync of that directory. Runs SECONDS, then removes what it
wrote. Prints: files/s MB/s (MB = 10^6 bytes) p99-ms (one file's write + fsync + rename + fsync).

Usage: fsync_writes.py DIR SECONDS THREADS [SIZE=1048576]
"""
import os
import sys
import threading
import time

root, seconds, threads = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
size = int(sys.argv[4]) if len(sys.argv) > 4 else 1 << 20
payload = os.urandom(size)
os.makedirs(os.path.join(root, "tmp"), exist_ok=True)
for prefix in range(256):
    os.makedirs(os.path.join(root, "%02x" % prefix), exist_ok=True)
latencies, written = [], []
lock = threading.Lock()
start = time.monotonic()
deadline = start + seconds


def writer(number):
    n, mine, names = 0, [], []
    while time.monotonic() < deadline:
        t0 = time.monotonic()
        name = "%d-%d" % (number, n)
        temporary = os.path.join(root, "tmp", name + ".part")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o640)
        view = memoryview(payload)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
        os.close(fd)
        directory = os.path.join(root, "%02x" % (n % 256))
        os.rename(temporary, os.path.join(directory, name))
        dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        os.fsync(dfd)
        os.close(dfd)
        mine.append(time.monotonic() - t0)
        names.append(os.path.join(directory, name))
        n += 1
    with lock:
        latencies.extend(mine)
        written.extend(names)


workers = [threading.Thread(target=writer, args=(i,)) for i in range(threads)]
for w in workers:
    w.start()
for w in workers:
    w.join()
elapsed = time.monotonic() - start
for name in written:
    os.remove(name)
latencies.sort()
p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000 if latencies else 0
print("%.1f %.1f %.2f" % (len(written) / elapsed, len(written) * size / elapsed / 1e6, p99))
