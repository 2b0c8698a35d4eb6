"""A real SMTP server (aiosmtpd) for the Mail tests; run with Debian's /usr/bin/python3.

Listens on 127.0.0.1 (or --host), prints "port N" once ready, and runs until killed or until
its stdin closes (so it cannot outlive the test process that started it).

Each accepted message is saved as DIR/<n>.eml (the bytes after dot-unstuffing) and DIR/<n>.json
(the envelope, the session, and the message as Python's `email` package parses it), both
written atomically, before the 250 reply.

With --summarize FILE it only prints that JSON summary of a message file and exits.
"""

import argparse
import asyncio
import email
import email.policy
import json
import logging
import os
import signal
import ssl
import sys
import warnings

from aiosmtpd.smtp import SMTP, AuthResult, LoginPassword


def text(value) -> str:
    """`value` as a string; the parser keeps raw UTF-8 header bytes (SMTPUTF8) as surrogates."""
    return str(value).encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def summarize(data: bytes) -> dict:
    """What a mail reader sees: decoded headers and parts, and every defect the parser found."""
    message = email.message_from_bytes(data, policy=email.policy.default)

    def mailbox(name):
        header = message[name]
        if header is None:
            return None
        address = header.addresses[0]
        return {"name": text(address.display_name), "address": text(address.addr_spec)}

    defects = [type(d).__name__ for d in message.defects]
    for _, value in message.items():
        defects += [type(d).__name__ for d in getattr(value, "defects", ())]
    parts = []
    for part in message.walk():
        if part.is_multipart():
            continue
        parts.append({
            "type": part.get_content_type(),
            "charset": part.get_content_charset(),
            "encoding": part["Content-Transfer-Encoding"],
            "content": part.get_content(),
            "defects": [type(d).__name__ for d in part.defects],
        })
    return {
        "subject": text(message["subject"]),
        "from": mailbox("from"),
        "to": mailbox("to"),
        "date": message["date"].datetime.isoformat() if message["date"] else None,
        "message_id": message["message-id"],
        "content_type": message.get_content_type(),
        "defects": defects,
        "parts": parts,
        "longest_line": max(len(line) for line in data.split(b"\r\n")),
        "bare_line_ends": data.count(b"\n") - data.count(b"\r\n"),
        "eight_bit": any(byte > 127 for byte in data),
    }


def write_atomically(path: str, data: bytes) -> None:
    temporary = path + ".tmp"
    with open(temporary, "wb") as file:
        file.write(data)
        file.flush()
        os.fsync(file.fileno())
    os.rename(temporary, path)


class Handler:
    def __init__(self, maildir, reject, tempfail, implicit_tls):
        self.maildir = maildir
        self.reject = reject
        self.tempfail = tempfail
        self.implicit_tls = implicit_tls
        self.count = 0

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        if self.reject and self.reject in address:
            return "550 5.1.1 mailbox unavailable"
        if self.tempfail and self.tempfail in address:
            return "451 4.3.0 try again later"
        envelope.rcpt_tos.append(address)
        envelope.rcpt_options.extend(rcpt_options)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        self.count += 1
        content = envelope.original_content
        record = {
            "mail_from": envelope.mail_from,
            "mail_options": envelope.mail_options,
            "rcpt_tos": envelope.rcpt_tos,
            "login": session.auth_data.login.decode() if isinstance(session.auth_data, LoginPassword) else None,
            "auth_mechanism": getattr(session, "auth_mechanism", None),
            "tls": self.implicit_tls or session.ssl is not None,
            "summary": summarize(content),
        }
        base = os.path.join(self.maildir, str(self.count))
        write_atomically(base + ".eml", content)
        write_atomically(base + ".json", json.dumps(record, indent=1).encode())
        return f"250 2.0.0 OK queued as {self.count}"


def authenticator(credentials):
    user, password = credentials.split(":", 1)

    def check(server, session, envelope, mechanism, auth_data):
        session.auth_mechanism = mechanism
        valid = (isinstance(auth_data, LoginPassword)
                 and auth_data.login == user.encode() and auth_data.password == password.encode())
        # handled=False: aiosmtpd sends no reply at all to a failure its caller "handled" (the default).
        return AuthResult(success=valid, handled=False, auth_data=auth_data)

    return check


def tls_context(cert, key):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    return context


async def serve(args):
    handler = Handler(args.maildir, args.reject, args.tempfail, args.implicit_tls is not None)
    starttls = tls_context(*args.starttls) if args.starttls else None
    implicit = tls_context(*args.implicit_tls) if args.implicit_tls else None
    options = {
        "hostname": "localhost",  # not socket.getfqdn(), which may wait for DNS
        "enable_SMTPUTF8": args.smtputf8,
        "tls_context": starttls,
        "require_starttls": starttls is not None,
        # aiosmtpd knows only STARTTLS as TLS: with implicit TLS it would hide AUTH.
        "auth_require_tls": starttls is not None,
    }
    if args.auth:
        options["authenticator"] = authenticator(args.auth)
        options["auth_required"] = True
        if args.auth_mechanisms:
            offered = set(args.auth_mechanisms.split(","))
            options["auth_exclude_mechanism"] = [m for m in ("PLAIN", "LOGIN") if m not in offered]
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: SMTP(handler, **options), host=args.host, port=args.port, ssl=implicit)
    print(f"port {server.sockets[0].getsockname()[1]}", flush=True)
    # Returns when the test process closes our stdin (or exits).
    await loop.run_in_executor(None, sys.stdin.buffer.read)
    server.close()


def main():
    # A child inherits the signal mask of the thread that started it, and libdispatch's worker
    # threads (where Swift tests run) block SIGTERM: without this, "kill" would not stop us.
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--maildir")
    parser.add_argument("--starttls", nargs=2, metavar=("CERT", "KEY"))
    parser.add_argument("--implicit-tls", nargs=2, metavar=("CERT", "KEY"))
    parser.add_argument("--auth", metavar="USER:PASS")
    parser.add_argument("--auth-mechanisms", metavar="PLAIN,LOGIN", help="offer only these")
    parser.add_argument("--smtputf8", action="store_true", help="offer SMTPUTF8")
    parser.add_argument("--reject", metavar="SUBSTRING", help="RCPT TO containing it gets 550")
    parser.add_argument("--tempfail", metavar="SUBSTRING", help="RCPT TO containing it gets 451")
    parser.add_argument("--summarize", metavar="FILE", help="print the JSON summary of a message file")
    args = parser.parse_args()
    if args.summarize:
        with open(args.summarize, "rb") as file:
            print(json.dumps(summarize(file.read()), indent=1))
        return
    if not args.maildir:
        parser.error("--maildir is required")
    # "Requiring AUTH while not requiring TLS": deliberate for the loopback tests.
    warnings.filterwarnings("ignore", message="Requiring AUTH")
    logging.getLogger("mail.log").setLevel(logging.ERROR)
    asyncio.run(serve(args))


if __name__ == "__main__":
    main()
