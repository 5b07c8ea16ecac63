#!/usr/bin/env python3
"""git's own smart HTTP (git http-backend, as CGI) over HTTPS, for
tests/integration/test_terminate.sh: serves the repositories of ROOT.

    serve.py ROOT CERT KEY [PORT]   (PORT defaults to 443)
"""
import http.server
import os
import ssl
import subprocess
import sys
import urllib.parse


class Git(http.server.BaseHTTPRequestHandler):
    root = "."
    protocol_version = "HTTP/1.1"

    def run_backend(self):
        url = urllib.parse.urlsplit(self.path)
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        env = {
            "PATH": "/usr/bin:/bin",
            "GIT_PROJECT_ROOT": self.root,
            "GIT_HTTP_EXPORT_ALL": "1",
            "REMOTE_USER": "sandbox",
            "REQUEST_METHOD": self.command,
            "PATH_INFO": urllib.parse.unquote(url.path),
            "QUERY_STRING": url.query,
            "CONTENT_TYPE": self.headers.get("Content-Type") or "",
            "CONTENT_LENGTH": str(len(body)),
            "GIT_CONFIG_COUNT": "1",
            "GIT_CONFIG_KEY_0": "safe.directory",
            "GIT_CONFIG_VALUE_0": "*",
        }
        r = subprocess.run(["git", "http-backend"], input=body, env=env,
                           capture_output=True)
        head, _, out = r.stdout.partition(b"\r\n\r\n")
        if not _:
            head, _, out = r.stdout.partition(b"\n\n")
        status, fields = 200, []
        for line in head.decode("latin-1").splitlines():
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.strip().split()[0])
            elif name:
                fields.append((name, value.strip()))
        self.send_response(status)
        for name, value in fields:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    do_GET = do_POST = run_backend

    def log_message(self, fmt, *args):
        sys.stderr.write("git: " + (fmt % args) + "\n")


def main():
    root, cert, key = sys.argv[1:4]
    port = int(sys.argv[4]) if len(sys.argv) > 4 else 443
    Git.root = root
    srv = http.server.ThreadingHTTPServer(("0.0.0.0", port), Git)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    sys.stderr.write("git: serving %s on :%d\n" % (root, port))
    srv.serve_forever()


if __name__ == "__main__":
    main()
