#!/usr/bin/env python3
"""A PyPI-style simple index (PEP 503) over HTTPS, for sandgate's demo and
tests. Serves every *.whl of DIR:

    /simple/                    the project list
    /simple/<project>/          links to its files, with #sha256= digests
    /packages/<file>            the files

    serve.py DIR CERT KEY [PORT]   (PORT defaults to 443)

When DIR/../token exists, every request must carry it as its whole
Authorization value (a private registry): 401 otherwise.
"""
import hashlib
import html
import http.server
import os
import re
import ssl
import sys


def project_of(filename):
    return re.sub(r"[-_.]+", "-", filename.split("-")[0]).lower()


class Index(http.server.BaseHTTPRequestHandler):
    root = "."
    token = None

    def send_text(self, code, body, ctype="text/html; charset=utf-8"):
        data = body.encode() if isinstance(body, str) else body
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def wheels(self):
        return sorted(f for f in os.listdir(self.root) if f.endswith(".whl"))

    def do_GET(self):
        if self.token is not None and \
                self.headers.get("Authorization") != self.token:
            return self.send_text(401, "a token is required\n", "text/plain")
        path = self.path.split("?")[0]
        if path in ("/simple", "/simple/"):
            names = sorted({project_of(f) for f in self.wheels()})
            links = "".join(f'<a href="/simple/{n}/">{n}</a>\n' for n in names)
            return self.send_text(200, f"<!DOCTYPE html><html><body>\n{links}</body></html>\n")
        m = re.fullmatch(r"/simple/([a-z0-9-]+)/?", path)
        if m:
            files = [f for f in self.wheels() if project_of(f) == m.group(1)]
            if not files:
                return self.send_text(404, "not found\n", "text/plain")
            links = ""
            for f in files:
                with open(os.path.join(self.root, f), "rb") as fh:
                    digest = hashlib.sha256(fh.read()).hexdigest()
                links += f'<a href="/packages/{html.escape(f)}#sha256={digest}">{html.escape(f)}</a>\n'
            return self.send_text(200, f"<!DOCTYPE html><html><body>\n{links}</body></html>\n")
        m = re.fullmatch(r"/packages/([A-Za-z0-9_.-]+\.whl)", path)
        if m and m.group(1) in self.wheels():
            with open(os.path.join(self.root, m.group(1)), "rb") as fh:
                return self.send_text(200, fh.read(), "application/octet-stream")
        return self.send_text(404, "not found\n", "text/plain")

    def log_message(self, fmt, *args):
        sys.stderr.write("registry: " + (fmt % args) + "\n")


def main():
    root, cert, key = sys.argv[1:4]
    port = int(sys.argv[4]) if len(sys.argv) > 4 else 443
    Index.root = root
    tok = os.path.join(os.path.dirname(os.path.abspath(root)), "token")
    if os.path.exists(tok):
        with open(tok) as f:
            Index.token = f.read().strip()
    srv = http.server.ThreadingHTTPServer(("0.0.0.0", port), Index)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    sys.stderr.write(f"registry: serving {root} on :{port}\n")
    srv.serve_forever()


if __name__ == "__main__":
    main()
