#!/usr/bin/env python3
"""Memory under slow readers: 100 clients ask for a 10 MiB image from the database storage and read
nothing (a 4 KiB receive buffer each); prints the server's resident memory before and at its peak.

Usage: python3 bench/slow_readers.py BINARY PORT     (BINARY: a release build, e.g. dist/exosphere;
it runs its own managed PostgreSQL under /tmp/slowpg-PORT, removed afterwards)
"""
import http.client, json, shutil, socket, struct, subprocess, sys, time, zlib
binary = sys.argv[1]; port = int(sys.argv[2]); data = f'/tmp/slowpg-{port}'
shutil.rmtree(data, ignore_errors=True)
log = open(f'/tmp/slow-{port}.log','w')
p = subprocess.Popen([binary, 'serve', '--host', '127.0.0.1', '--port', str(port), '--data-dir', data, '--image-storage', 'database',
    '--access-log', 'off', '--db-pool-size', '4'], stdout=subprocess.DEVNULL, stderr=log)
for _ in range(600):
    try:
        c = http.client.HTTPConnection('127.0.0.1', port, timeout=5); c.request('GET','/readyz'); r=c.getresponse(); r.read()
        if r.status == 200: break
    except OSError: pass
    time.sleep(0.1)
def req(method, path, body=None, headers={}):
    c = http.client.HTTPConnection('127.0.0.1', port, timeout=60); c.request(method, path, body, headers); r = c.getresponse(); return r.status, r.read()
s, b = req('POST', '/users', json.dumps({'email':'slow@example.com','password':'slow readers 1'}), {'Content-Type':'application/json'})
token = json.loads(b)['accessToken']
def chunk(t, d): return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t+d) & 0xffffffff)
png = b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', 1, 1, 8, 6, 0, 0, 0)) + chunk(b'tEXt', bytes((i*31+7) & 255 for i in range(10*1024*1024 - 100))) + chunk(b'IDAT', zlib.compress(b'\x00\x00\x00\x00\x00')) + chunk(b'IEND', b'')
s, b = req('POST', '/users/me/images', png, {'Content-Type':'image/png', 'Authorization':'Bearer '+token})
iid = json.loads(b)['id']
def rss():
    for line in open(f'/proc/{p.pid}/status'):
        if line.startswith('VmRSS:'): return int(line.split()[1]) // 1024
time.sleep(0.5); before = rss()
socks = []
for _ in range(100):
    so = socket.socket(); so.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096); so.connect(('127.0.0.1', port))
    so.sendall(f'GET /users/me/images/{iid} HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer {token}\r\n\r\n'.encode()); socks.append(so)
peak = before
for _ in range(30):
    time.sleep(0.1); peak = max(peak, rss())
print(f'{binary}: RSS before {before} MiB, peak with 100 slow readers {peak} MiB (+{peak-before})')
for so in socks: so.close()
p.terminate(); p.wait(); shutil.rmtree(data, ignore_errors=True)
