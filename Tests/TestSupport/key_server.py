"""A sign-in provider's key set server (JWKS) for the tests; run with Debian's /usr/bin/python3.

Listens on 127.0.0.1, over TLS with --cert and --key, prints "port N" once ready, and runs until
killed or until its stdin closes (so it cannot outlive the test process that started it).

Every GET answers from the control directory DIR as it is at that moment: the body of
DIR/keys.json, the status in DIR/status (200 when absent), the Cache-Control field in
DIR/cache-control (none when absent). Each request appends its path to DIR/requests.log before
the answer is sent, so a test counts fetches by lines.
"""

import argparse
import http.server
import os
import ssl
import sys
import threading


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", required=True)
    parser.add_argument("--cert")
    parser.add_argument("--key")
    arguments = parser.parse_args()
    directory = arguments.dir

    def read(name: str):
        try:
            with open(os.path.join(directory, name), "rb") as file:
                return file.read()
        except FileNotFoundError:
            return None

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:  # noqa: N802 (the library's name)
            with open(os.path.join(directory, "requests.log"), "a") as log:
                log.write(self.path + "\n")
            status = int((read("status") or b"200").decode().strip())
            body = read("keys.json") or b""
            cache_control = read("cache-control")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            if cache_control is not None:
                self.send_header("Cache-Control", cache_control.decode().strip())
            # Chunked when the body's length is even: both framings a provider may use are read.
            if len(body) % 2 == 0:
                self.send_header("Transfer-Encoding", "chunked")
                self.send_header("Connection", "close")
                self.end_headers()
                middle = len(body) // 2
                for part in (body[:middle], body[middle:]):
                    if part:
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
                self.wfile.write(b"0\r\n\r\n")
            else:
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(body)

        def log_message(self, format: str, *args) -> None:  # noqa: A002
            sys.stderr.write(format % args + "\n")

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    if arguments.cert:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(arguments.cert, arguments.key)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print("port %d" % server.server_address[1], flush=True)
    # Ends when the test process closes our stdin (or exits).
    sys.stdin.read()
    server.shutdown()


if __name__ == "__main__":
    main()
