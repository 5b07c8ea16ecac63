#!/usr/bin/env python3
"""Three proxy replicas behind one name, on Docker (docs/scale-out.md,
"What runs on Docker here").

Nothing leaves the machine: two --internal networks made here, "sbx" (the
sandboxes and the replicas' proxy port) and "up" (the replicas' way out,
the upstreams, a resolver of our own and the control API); every name is
under .test. On them:

  - three replicas of the proxy image (images/proxy/build.sh, the image
    `sandgate proxy start` runs, under a tag of this test's own), hardened
    as proxyctl_spec makes the proxy container (uid 65532, every
    capability dropped, no-new-privileges, sandgate's seccomp profile,
    read-only root), each with --instance rN, a log folder and checkpoint
    key of its own, --token-key (the public half of the controller's
    token key) and --token-any-source, --control-listen with a token
    file; all three answer to one name, a network alias on "sbx";
  - three sandboxes (uid 1000, every capability dropped, no-new-
    privileges, the seccomp profile, read-only root) on "sbx" only, each
    with a token from `sandgate proxy token` in its proxy URL, running
    curl and python's ssl module.

It asserts: each sandbox's token works on every replica, addressed
directly and through the name, and a client without one is blocked; a
forged, an expired, a malformed and another sandbox's token are refused
with their reason codes and logged by the replica that refused them; the
blocks made through each replica are in that replica's /blocks, and all
in one `sandgate pending --json` over the three control URLs (with a
replica dead: the others' blocks, the dead one named, exit 125); a
replica killed (docker kill) in the middle of a flood
of TLS tunnels and requests from the three sandboxes cuts exactly its own
tunnels, whose clients get an error and no further byte, while the
tunnels through the other two keep moving bytes and new requests through
the name succeed on them; no upstream ever sees a connection from anywhere
but a replica, and a sandbox cannot reach an upstream or a control port;
`sandgate audit verify` fails the killed replica's log with the
documented "stopped without closing" until the replica is started again
on its folder, and then passes each replica's log on its own (the
restarted one with the note saying its writer stopped without closing);
`sandgate audit --instance` reads the three logs together.

Run (root, Docker): python3 tests/integration/test_proxy_tier.py
Env: SANDGATE_BIN, SANDGATE_SRC; SANDGATE_KEEP=1 keeps the temporary
folder. The roles the containers run are in this file too (--role).
Exit 77 when Docker is not there.
"""

import base64
import ipaddress
import json
import os
import random
import re
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import http.client
import http.server

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import proxylib  # noqa: E402

IMAGE = "sandgate-test/proxy-tier:latest"
BASE_IMAGE = "sandgate/base:latest"
ALIAS = "proxy.tier.test"
REPLICAS = ("r1", "r2", "r3")
SANDBOXES = ("sbx-tier-a", "sbx-tier-b", "sbx-tier-c")
PROXY_PORT, CONTROL_PORT = 3128, 9901
CHECKPOINT_SECS = 2
FLOOD_SECS = 14
KILL_AFTER = 5
TUNNELS_PER_REPLICA = 2
CHUNK = 256

POLICY = """description: upstreams of the three-replica test, on an internal \
Docker network
owner: sandgate-tests@example.invalid
allow:
  - host: web.tier.test
    ports: [80]
    allow_private: true
    tls: optional
    rationale: plain-HTTP upstream of the replica test (internal network)
  - host: stream.tier.test
    ports: [443]
    allow_private: true
    tls: required
    rationale: TLS upstream the sandboxes' tunnels reach through CONNECT
"""


# ------------------------------------------------- roles (in containers)

OUT_LOCK = threading.Lock()


def say(doc):
    """One JSON line on stdout, whole, whatever thread writes it."""
    with OUT_LOCK:
        sys.stdout.write(json.dumps(doc) + "\n")
        sys.stdout.flush()

def role_dns(port, *records):
    """Answer name=ip records, NXDOMAIN for everything else."""
    recs = dict(r.split("=", 1) for r in records)
    proxylib.DnsServer(recs, bind=("0.0.0.0", int(port))).start()
    print("serving dns", flush=True)
    while True:
        time.sleep(3600)


class PeerHandler(http.server.BaseHTTPRequestHandler):
    """GET: 200 with the address the request came from."""
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def do_GET(self):
        peer = self.client_address[0]
        say({"ev": "http", "peer": peer, "path": self.path,
             "t": time.time()})
        out = json.dumps({"peer": peer}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


def echo_conn(ctx, conn, peer, n):
    """One TLS connection: echo what comes, then log what it carried."""
    got, why = 0, "eof"
    say({"ev": "tls_open", "id": n, "peer": peer, "t": time.time()})
    try:
        s = ctx.wrap_socket(conn, server_side=True)
        while True:
            data = s.recv(65536)
            if not data:
                break
            got += len(data)
            s.sendall(data)
    except (OSError, ssl.SSLError) as e:
        why = type(e).__name__
    say({"ev": "tls_close", "id": n, "peer": peer, "got": got,
         "why": why, "t": time.time()})
    conn.close()


def role_upstream(http_port, tls_port, cert, key):
    """web.tier.test (HTTP) and stream.tier.test (TLS echo); every
    connection is a JSON line on stdout."""
    srv = http.server.ThreadingHTTPServer(("0.0.0.0", int(http_port)),
                                          PeerHandler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", int(tls_port)))
    ls.listen(128)
    print("serving upstream", flush=True)
    n = 0
    while True:
        conn, addr = ls.accept()
        n += 1
        threading.Thread(target=echo_conn, args=(ctx, conn, addr[0], n),
                         daemon=True).start()


def curl(proxy, token, url, timeout=5):
    """curl through proxy (HOST), with the token in the proxy URL when
    given: (curl's exit code, HTTP status, body, the proxy's address)."""
    cred = "sandgate:%s@" % token if token else ""
    r = subprocess.run(["curl", "-sS", "--max-time", str(timeout),
                        "--connect-timeout", "2", "-x",
                        "http://%s%s:%d" % (cred, proxy, PROXY_PORT),
                        "-w", "\n%{http_code} %{remote_ip}", url],
                       capture_output=True, text=True, errors="replace")
    body, _, tail = r.stdout.rpartition("\n")
    code, _, remote = tail.partition(" ")
    return r.returncode, int(code or 0), body, remote


def tcp_try(ip, port):
    """Connect straight to ip:port: "connected" or the error's name."""
    try:
        with socket.create_connection((ip, int(port)), timeout=3):
            return "connected"
    except OSError as e:
        return type(e).__name__


def role_probe(spec):
    """Requests of a JSON list: {"curl": [proxy, token, url]} or
    {"tcp": [ip, port]}; their outcomes, as one JSON list."""
    out = []
    for item in json.loads(spec):
        if "tcp" in item:
            out.append({"tcp": tcp_try(*item["tcp"])})
            continue
        rc, code, body, remote = curl(*item["curl"])
        out.append({"rc": rc, "code": code, "body": body, "remote": remote})
    print(json.dumps(out), flush=True)


def tunnel(ip, token, ca, until, rec):
    """CONNECT stream.tier.test:443 through ip with the token, TLS, then
    CHUNK bytes out and their echo back every 50 ms until `until`; rec
    gets the bytes echoed per second and how it ended."""
    rec.update({"replica": ip, "bytes": 0, "last": None, "error": None,
                "buckets": {}})
    auth = base64.b64encode(("sandgate:" + token).encode()).decode()
    try:
        raw = socket.create_connection((ip, PROXY_PORT), timeout=5)
        raw.sendall(("CONNECT stream.tier.test:443 HTTP/1.1\r\nHost: "
                     "stream.tier.test:443\r\nProxy-Authorization: Basic %s"
                     "\r\n\r\n" % auth).encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = raw.recv(1)
            if not chunk:
                raise ConnectionError("closed before the CONNECT answer")
            head += chunk
        if not head.startswith(b"HTTP/1.1 200"):
            raise ConnectionError(head.split(b"\r\n")[0].decode())
        ctx = ssl.create_default_context(cafile=ca)
        s = ctx.wrap_socket(raw, server_hostname="stream.tier.test")
        s.settimeout(5)
        rec["opened"] = time.time()
        while time.time() < until:
            s.sendall(b"x" * CHUNK)
            got = 0
            while got < CHUNK:
                data = s.recv(CHUNK - got)
                if not data:
                    raise ConnectionError("EOF")
                got += len(data)
            now = time.time()
            rec["bytes"] += got
            rec["last"] = now
            b = str(int(now))
            rec["buckets"][b] = rec["buckets"].get(b, 0) + got
            time.sleep(0.05)
        s.close()
    except (OSError, ssl.SSLError) as e:
        rec["error"] = "%s: %s" % (type(e).__name__, e)
        rec["error_t"] = time.time()


def role_flood(ca, secs, token, ips, per_replica):
    """TLS tunnels to each replica (per_replica each) and requests through
    the name, for secs seconds; one JSON report."""
    until = time.time() + float(secs)
    tunnels, threads = [], []
    for ip in ips.split(","):
        for _ in range(int(per_replica)):
            rec = {}
            tunnels.append(rec)
            t = threading.Thread(target=tunnel,
                                 args=(ip, token, ca, until, rec))
            t.start()
            threads.append(t)
    reqs = []
    while time.time() < until:
        t0 = time.time()
        rc, code, body, remote = curl(ALIAS, token, "http://web.tier.test/",
                                      timeout=4)
        reqs.append({"t0": t0, "t1": time.time(), "rc": rc, "code": code,
                     "remote": remote, "body": body[:200]})
        time.sleep(0.1)
    for t in threads:
        t.join()
    print(json.dumps({"tunnels": tunnels, "requests": reqs}), flush=True)


ROLES = {"dns": role_dns, "upstream": role_upstream, "probe": role_probe,
         "flood": role_flood}


# ------------------------------------------------------- the host's side

class Checks:
    """ok/FAIL lines and the summary, as tests/lib/common.sh prints."""

    def __init__(self):
        self.passed = self.failed = 0

    def check(self, name, cond, detail=""):
        if cond:
            self.passed += 1
            print("ok - %s" % name, flush=True)
        else:
            self.failed += 1
            print("FAIL - %s%s" % (name, ": %s" % detail if detail else ""),
                  flush=True)
        return cond


def docker(*args, check=True, timeout=120):
    r = subprocess.run(["docker"] + [str(a) for a in args],
                       capture_output=True, text=True, timeout=timeout,
                       env=proxylib.clean_env())
    if check and r.returncode != 0:
        raise RuntimeError("docker %s: %s" % (" ".join(map(str, args[:3])),
                                              r.stderr.strip()))
    return r


class Tier:
    """Everything the test makes: folders, networks, containers."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="sg-tier-")
        os.chmod(self.dir, 0o755)
        self.tag = "sgtier-%d-%04x" % (os.getpid(), random.getrandbits(16))
        self.nets = {}
        self.containers = []
        self.state = os.path.join(self.dir, "state")
        self.bin = proxylib.BIN

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    def sandgate(self, *args, env=None):
        e = {"SANDGATE_STATE": self.state,
             "SANDGATE_LOG_DIR": self.path("logs-none")}
        e.update(env or {})
        return subprocess.run([os.path.join(self.bin, "sandgate")] +
                              list(args), capture_output=True, text=True,
                              env=proxylib.clean_env(e), timeout=60)

    def cleanup(self):
        for name in self.containers:
            docker("rm", "-f", "-v", name, check=False)
        for net in self.nets.values():
            docker("network", "rm", net["name"], check=False)
        if os.environ.get("SANDGATE_KEEP"):
            print("kept %s" % self.dir, file=sys.stderr)
        else:
            shutil.rmtree(self.dir, ignore_errors=True)

    # --- networks: internal, on a /24 no route or network holds
    def network(self, key):
        name = "%s-%s" % (self.tag, key)
        routes = []
        for line in subprocess.run(["ip", "-4", "route"], text=True,
                                   capture_output=True).stdout.splitlines():
            dest = line.split()[0] if line.split() else "default"
            if dest != "default":
                routes.append(ipaddress.ip_network(dest, strict=False))
        for _ in range(20):
            sub = "10.%d.%d" % (random.randint(200, 250),
                                random.randint(0, 255))
            if any(ipaddress.ip_network(sub + ".0/24").overlaps(n)
                   for n in routes):
                continue
            r = docker("network", "create", "--internal", "--subnet",
                       sub + ".0/24", "--label", "sandgate.test=" + self.tag,
                       name, check=False)
            if r.returncode == 0:
                self.nets[key] = {"name": name, "prefix": sub}
                return
        raise RuntimeError("no free /24 for network %s" % name)

    def ip(self, net, host):
        return "%s.%d" % (self.nets[net]["prefix"], host)

    def create(self, name, args, image, cmd):
        full = "%s-%s" % (self.tag, name)
        docker("create", "--name", full, "--label",
               "sandgate.test=" + self.tag, *args, image, *cmd)
        self.containers.append(full)
        return full

    def wait_log(self, name, text, secs=20):
        deadline = time.monotonic() + secs
        while time.monotonic() < deadline:
            if text in docker("logs", name, check=False).stdout:
                return True
            time.sleep(0.2)
        raise RuntimeError("%s never said %r: %s" % (
            name, text, docker("logs", name, check=False).stderr[-2000:]))


HARDENED = ["--cap-drop", "ALL", "--security-opt", "no-new-privileges",
            "--read-only"]


def seccomp_opt():
    return ["--security-opt", "seccomp=" + os.path.join(
        proxylib.SRC, "deploy", "kubernetes", "seccomp", "sandgate.json")]


def mounts_for_roles(t):
    return ["-v", HERE + ":/t:ro", "-v", t.path("pki") + ":/pki:ro",
            "-e", "PYTHONDONTWRITEBYTECODE=1"]


def start_infra(t):
    """Networks, the resolver and the upstreams."""
    t.network("sbx")
    t.network("up")
    pki = t.path("pki")
    os.makedirs(pki)
    proxylib.make_test_pki(pki, ("stream.tier.test",))
    for f in os.listdir(pki):
        os.chmod(os.path.join(pki, f), 0o644)
    os.chmod(pki, 0o755)
    up_ip, dns_ip = t.ip("up", 80), t.ip("up", 53)
    infra = HARDENED + ["--user", "1000:1000", "--memory", "256m",
                        "--pids-limit", "256", "--network",
                        t.nets["up"]["name"]] + mounts_for_roles(t)
    up = t.create("upstream", infra + ["--ip", up_ip], BASE_IMAGE,
                  ["python3", "-u", "/t/test_proxy_tier.py", "--role",
                   "upstream", "80", "443", "/pki/leaf.pem",
                   "/pki/leaf.key"])
    recs = ["%s=%s" % (n, up_ip) for n in
            ("web.tier.test", "stream.tier.test", "blocked.tier.test")]
    dns = t.create("dns", infra + ["--ip", dns_ip], BASE_IMAGE,
                   ["python3", "-u", "/t/test_proxy_tier.py", "--role",
                    "dns", "53"] + recs)
    for c in (up, dns):
        docker("start", c)
    t.wait_log(up, "serving upstream")
    t.wait_log(dns, "serving dns")
    t.upstream, t.up_ip, t.dns_ip = up, up_ip, dns_ip


def own(path, mode, uid=65532):
    os.chown(path, uid, uid)
    os.chmod(path, mode)


def prepare_replicas(t):
    """The image, the policy, the controller's token key, and per replica
    a log folder and a checkpoint key."""
    r = subprocess.run(["bash", os.path.join(proxylib.SRC, "images", "proxy",
                                             "build.sh"),
                        os.path.join(t.bin, "sandgate-proxy"), "--tag",
                        IMAGE], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("images/proxy/build.sh: " + r.stderr)
    pol = t.path("policy.d")
    os.makedirs(pol)
    with open(os.path.join(pol, "tier.yaml"), "w") as f:
        f.write(POLICY)
    os.chmod(pol, 0o755)
    os.chmod(os.path.join(pol, "tier.yaml"), 0o644)
    # The controller's key: the first `proxy token` makes it, as proxy
    # start does.
    r = t.sandgate("proxy", "token", "sbx-init")
    if r.returncode != 0:
        raise RuntimeError("sandgate proxy token: " + r.stderr)
    if not re.fullmatch(r"sgt1\.[A-Za-z0-9_-]+\n", r.stdout):
        raise RuntimeError("sandgate proxy token, making its key, printed "
                           "more than the token: " + repr(r.stdout[:200]))
    t.token_pub = t.path("token.pub")
    shutil.copyfile(os.path.join(t.state, "keys", "token.key.pub"),
                    t.token_pub)
    os.chmod(t.token_pub, 0o644)
    t.ctl_token = t.path("control.token")
    with open(t.ctl_token, "w") as f:
        f.write(base64.b64encode(os.urandom(48)).decode() + "\n")
    own(t.ctl_token, 0o600)
    for rn in REPLICAS:
        logs, keys = t.path("logs", rn), t.path("keys", rn)
        os.makedirs(logs)
        os.makedirs(keys)
        own(logs, 0o750)
        own(keys, 0o700)
        r = t.sandgate("audit", "key", "create",
                       os.path.join(keys, "checkpoint.key"), "--owner",
                       "65532")
        if r.returncode != 0:
            raise RuntimeError("audit key create: " + r.stderr)


def start_replicas(t):
    t.replica = {}
    for i, rn in enumerate(REPLICAS):
        sbx_ip, up_ip = t.ip("sbx", 11 + i), t.ip("up", 11 + i)
        # A sanitizer build's leak check cannot stop the world under the
        # seccomp profile (no ptrace): it would crash at every exit. The
        # loopback suites check the proxy's leaks.
        asan = ["-e", "ASAN_OPTIONS=detect_leaks=0"] \
            if proxylib.sanitized() else []
        args = HARDENED + seccomp_opt() + asan + [
            "--user", "65532:65532", "--memory", "1g", "--pids-limit", "64",
            "--network", t.nets["sbx"]["name"], "--ip", sbx_ip,
            "--network-alias", ALIAS,
            "--tmpfs", "/run/sandgate:rw,nosuid,nodev,noexec,uid=65532,"
            "gid=65532,mode=0700",
            "-v", t.path("policy.d") + ":/etc/sandgate/policy.d:ro",
            "-v", t.path("logs", rn) + ":/var/log/sandgate:rw",
            "-v", t.path("keys", rn) + ":/etc/sandgate/keys:rw",
            "-v", t.token_pub + ":/etc/sandgate/token.pub:ro",
            "-v", t.ctl_token + ":/etc/sandgate/control.token:ro"]
        cmd = ["--listen", "%s:%d" % (sbx_ip, PROXY_PORT),
               "--policy-dir", "/etc/sandgate/policy.d",
               "--log-dir", "/var/log/sandgate",
               "--control-socket", "/run/sandgate/control.sock",
               "--control-listen", "%s:%d" % (up_ip, CONTROL_PORT),
               "--control-token-file", "/etc/sandgate/control.token",
               "--checkpoint-key", "/etc/sandgate/keys/checkpoint.key",
               "--checkpoint-interval", str(CHECKPOINT_SECS),
               "--token-key", "/etc/sandgate/token.pub",
               "--token-any-source", "--instance", rn,
               "--resolver", "%s:53" % t.dns_ip]
        name = t.create(rn, args, IMAGE, cmd)
        docker("network", "connect", "--ip", up_ip, t.nets["up"]["name"],
               name)
        t.replica[rn] = {"name": name, "sbx": sbx_ip, "up": up_ip}
    for rn in REPLICAS:
        docker("start", t.replica[rn]["name"])
    for rn in REPLICAS:
        wait_ready(t, rn)


def control(t, rn, method, path, body=None, token=True):
    """The replica's control API over TCP: (status, body text)."""
    with open(t.ctl_token) as f:
        tok = f.read().strip()
    c = http.client.HTTPConnection(t.replica[rn]["up"], CONTROL_PORT,
                                   timeout=5)
    headers = {"Authorization": "Bearer " + tok} if token else {}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    try:
        c.request(method, path, body=data, headers=headers)
        r = c.getresponse()
        return r.status, r.read().decode("utf-8", "replace")
    finally:
        c.close()


def wait_ready(t, rn, secs=20):
    deadline = time.monotonic() + secs
    last = None
    while time.monotonic() < deadline:
        try:
            st, body = control(t, rn, "GET", "/readyz", token=False)
            if st == 200:
                return
            last = body
        except OSError as e:
            last = str(e)
        time.sleep(0.2)
    logs = docker("logs", t.replica[rn]["name"], check=False)
    raise RuntimeError("replica %s not ready: %s\n%s" % (rn, last,
                                                         logs.stderr[-3000:]))


def start_sandboxes(t):
    t.sandbox = {}
    for i, sb in enumerate(SANDBOXES):
        ip = t.ip("sbx", 101 + i)
        args = HARDENED + seccomp_opt() + [
            "--user", "1000:1000", "--memory", "256m", "--pids-limit",
            "128", "--tmpfs", "/tmp:rw,noexec,nosuid,nodev,size=16m",
            "--network", t.nets["sbx"]["name"], "--ip", ip] + \
            mounts_for_roles(t)
        name = t.create(sb, args, BASE_IMAGE, ["sleep", "infinity"])
        docker("start", name)
        r = t.sandgate("proxy", "token", "--sets", "tier", "--ttl", "900",
                       sb)
        if r.returncode != 0:
            raise RuntimeError("sandgate proxy token: " + r.stderr)
        t.sandbox[sb] = {"name": name, "ip": ip, "token": r.stdout.strip()}


def in_sandbox(t, sb, role, *args, timeout=120):
    r = docker("exec", t.sandbox[sb]["name"], "python3", "-u",
               "/t/test_proxy_tier.py", "--role", role, *args,
               timeout=timeout)
    return json.loads(r.stdout.strip().splitlines()[-1])


def probe(t, sb, items):
    return in_sandbox(t, sb, "probe", json.dumps(items))


def log_events(t, rn):
    path = t.path("logs", rn, "security-events.%s.jsonl" % rn)
    out = []
    try:
        with open(path) as f:
            for line in f:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
    except FileNotFoundError:
        pass
    return out


def wait_logged(t, rn, pred, secs=5):
    deadline = time.monotonic() + secs
    while True:
        if any(pred(e) for e in log_events(t, rn)):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)


def peer_replica(t, body):
    """Which replica's "up" address an upstream answer says it came from."""
    try:
        peer = json.loads(body)["peer"]
    except (ValueError, KeyError, TypeError):
        return None
    for rn, r in t.replica.items():
        if r["up"] == peer:
            return rn
    return "not a replica: " + str(peer)


WEB = "http://web.tier.test/"
BLOCKED = "http://blocked.tier.test/"


def blocked_url(rn):
    return "http://blocked-%s.tier.test/" % rn


def check_tokens_everywhere(t, c):
    """Each sandbox's token on each replica and through the name; no
    token: blocked; a blocked destination per replica (for /blocks); no
    way to an upstream or a control port but through a replica."""
    for sb in SANDBOXES:
        tok = t.sandbox[sb]["token"]
        items = []
        for rn in REPLICAS:
            ip = t.replica[rn]["sbx"]
            items += [{"curl": [ip, tok, WEB]}, {"curl": [ip, None, WEB]},
                      {"curl": [ip, tok, blocked_url(rn)]}]
        items += [{"curl": [ALIAS, tok, WEB]} for _ in range(3)]
        direct = [[t.up_ip, 443], [t.up_ip, 80], [t.dns_ip, 53]]
        for rn in REPLICAS:
            direct += [[t.replica[rn]["up"], CONTROL_PORT],
                       [t.replica[rn]["sbx"], CONTROL_PORT]]
        items += [{"tcp": d} for d in direct]
        out = probe(t, sb, items)
        for i, rn in enumerate(REPLICAS):
            ok, none, blk = out[3 * i:3 * i + 3]
            c.check("%s's token works on %s addressed directly" % (sb, rn),
                    ok["code"] == 200 and peer_replica(t, ok["body"]) == rn,
                    ok)
            c.check("%s without a token is blocked on %s" % (sb, rn),
                    none["code"] == 403 and "not allowlisted" in
                    none["body"], none)
            c.check("%s is refused a destination not allowlisted on %s" %
                    (sb, rn), blk["code"] == 403, blk)
        names = out[9:12]
        c.check("%s's token works through the name %s" % (sb, ALIAS),
                all(r["code"] == 200 and peer_replica(t, r["body"]) in
                    REPLICAS for r in names), names)
        for d, r in zip(direct, out[12:]):
            c.check("%s cannot connect to %s:%d" % (sb, d[0], d[1]),
                    r["tcp"] != "connected", r)


def refused_tokens(t):
    """(label, password, reason) of the tokens every replica refuses."""
    a = t.sandbox[SANDBOXES[0]]["token"]
    i = len(a) - 20
    tampered = a[:i] + ("A" if a[i] != "A" else "B") + a[i + 1:]
    other = t.sandgate("proxy", "token", "--sets", "tier", SANDBOXES[0],
                       env={"SANDGATE_STATE": t.path("state-other")})
    if other.returncode != 0:
        raise RuntimeError("proxy token (other key): " + other.stderr)
    left = t.expired_at - time.time()
    if left > 0:
        time.sleep(left + 0.1)
    # The first token of a state folder makes its key and says so first.
    return [("forged (a key no replica trusts)", other.stdout.split()[-1],
             "token_forged"),
            ("forged (signature altered)", tampered, "token_forged"),
            ("expired", t.expired, "token_expired"),
            ("malformed", "sgt1.AAAA", "token_malformed"),
            ("another sandbox's", t.sandbox[SANDBOXES[1]]["token"],
             "token_other_sandbox")]


def check_refusals(t, c):
    """Forged, expired, malformed and cross-sandbox tokens, from the first
    sandbox, whose address every replica is told (POST /register) so that
    a token of another sandbox is one."""
    sb = SANDBOXES[0]
    for rn in REPLICAS:
        st, body = control(t, rn, "POST", "/register", {
            "address": t.sandbox[sb]["ip"], "sandbox": sb, "sets": "tier"})
        c.check("%s registers %s's address" % (rn, sb), st == 200, body)
    cases = refused_tokens(t)
    items = []
    for rn in REPLICAS:
        ip = t.replica[rn]["sbx"]
        items += [{"curl": [ip, pw, WEB]} for _, pw, _ in cases]
        items.append({"curl": [ip, t.sandbox[sb]["token"], WEB]})
    out = probe(t, sb, items)
    n = len(cases) + 1
    for i, rn in enumerate(REPLICAS):
        got = out[n * i:n * (i + 1)]
        for (label, _, reason), r in zip(cases, got):
            c.check("%s refuses %s token with %s" % (rn, label, reason),
                    r["code"] == 403 and "(%s: " % reason in r["body"], r)
            c.check("%s logs the %s refusal as egress.blocked" %
                    (rn, reason), wait_logged(
                        t, rn, lambda e, why=reason: e.get("event") ==
                        "egress.blocked" and e.get("reason") == why), "")
        c.check("%s's own token still works on %s once registered" %
                (sb, rn), got[-1]["code"] == 200, got[-1])
        # By address: the sandbox's blocks stay (by sandbox they go too).
        st, body = control(t, rn, "POST", "/unregister",
                           {"address": t.sandbox[sb]["ip"]})
        c.check("%s forgets %s's address" % (rn, sb), st == 200, body)


def check_blocks(t, c):
    """Each replica's /blocks holds the blocks made through it, and only
    those; `sandgate pending --json` over the three control URLs lists
    them all."""
    for rn in REPLICAS:
        for sb in SANDBOXES:
            st, body = control(t, rn, "GET",
                               "/blocks?sandbox=%s&after=0" % sb)
            try:
                hosts = {b["host"] for b in json.loads(body)["blocks"]
                         if b["host"].startswith("blocked-")}
            except (ValueError, KeyError, TypeError):
                hosts = None
            c.check("%s's /blocks lists %s's block through it, none of "
                    "the others'" % (rn, sb), st == 200 and
                    hosts == {"blocked-%s.tier.test" % rn}, body[:400])
    r, docs = pending(t)
    reps = docs[-1].get("replicas") if docs else None
    c.check("sandgate pending --json over the three control URLs exits 0, "
            "each replica answering", r.returncode == 0 and
            isinstance(reps, list) and len(reps) == len(REPLICAS) and
            all(x.get("status") == "ok" for x in reps), (r.returncode,
                                                       reps, r.stderr))
    for sb in SANDBOXES:
        c.check("pending lists %s's blocks made through r1, r2 and r3" % sb,
                pending_hosts(docs, sb) == {"blocked-%s.tier.test" % rn
                                            for rn in REPLICAS},
                pending_hosts(docs, sb))


def pending(t):
    """`sandgate pending --json` with SANDGATE_PROXY_CONTROL naming the
    three replicas: the run and its JSON lines."""
    urls = ",".join("http://%s:%d" % (t.replica[rn]["up"], CONTROL_PORT)
                    for rn in REPLICAS)
    r = t.sandgate("pending", "--json", env={
        "SANDGATE_PROXY_CONTROL": urls,
        "SANDGATE_PROXY_CONTROL_TOKEN_FILE": t.ctl_token})
    docs = []
    for line in r.stdout.splitlines():
        try:
            docs.append(json.loads(line))
        except ValueError:
            pass
    return r, docs


def pending_hosts(docs, sb):
    """The blocked-* destinations pending lists for sandbox sb."""
    return {d.get("host") for d in docs
            if d.get("sandbox") == sb and d.get("reason") ==
            "not_allowlisted" and str(d.get("host")).startswith("blocked-")}


def check_pending_after_kill(t, c):
    """With r2 dead, pending shows r1's and r3's blocks, names r2 as not
    answering and exits 125."""
    r, docs = pending(t)
    reps = docs[-1].get("replicas") if docs else None
    dead = "http://%s:%d" % (t.replica["r2"]["up"], CONTROL_PORT)
    c.check("pending with r2 killed exits 125 and says r2 did not answer",
            r.returncode == 125 and isinstance(reps, list) and
            [x.get("name") for x in reps if x.get("status") != "ok"] ==
            [dead] and dead in r.stderr, (r.returncode, reps, r.stderr))
    c.check("pending with r2 killed still lists r1's and r3's blocks",
            all(pending_hosts(docs, sb) == {"blocked-r1.tier.test",
                                            "blocked-r3.tier.test"}
                for sb in SANDBOXES), r.stdout[:600])


def flood_and_kill(t):
    """The three sandboxes' floods; r2 killed KILL_AFTER s in. The
    reports and the kill's start and end times."""
    ips = ",".join(t.replica[rn]["sbx"] for rn in REPLICAS)
    procs = {}
    for sb in SANDBOXES:
        procs[sb] = subprocess.Popen(
            ["docker", "exec", t.sandbox[sb]["name"], "python3", "-u",
             "/t/test_proxy_tier.py", "--role", "flood", "/pki/ca.pem",
             str(FLOOD_SECS), t.sandbox[sb]["token"], ips,
             str(TUNNELS_PER_REPLICA)], stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, env=proxylib.clean_env())
    time.sleep(KILL_AFTER)
    k0 = time.time()
    docker("kill", t.replica["r2"]["name"])
    k1 = time.time()
    reports = {}
    for sb, p in procs.items():
        out, err = p.communicate(timeout=FLOOD_SECS + 60)
        if p.returncode != 0:
            raise RuntimeError("flood in %s: %s" % (sb, err[-2000:]))
        reports[sb] = json.loads(out.strip().splitlines()[-1])
    return reports, k0, k1


def check_tunnels(t, c, reports, k0, k1):
    dead = t.replica["r2"]["sbx"]
    cut, kept = [], []
    for sb, rep in reports.items():
        for tun in rep["tunnels"]:
            (cut if tun["replica"] == dead else kept).append(tun)
    n = len(SANDBOXES) * TUNNELS_PER_REPLICA
    c.check("%d tunnels through r2 and %d through r1 and r3 opened" %
            (n, 2 * n), len(cut) == n and len(kept) == 2 * n and
            all("opened" in x and x["bytes"] > 0 for x in cut + kept),
            [x.get("error") for x in cut + kept if "opened" not in x])
    c.check("every tunnel through the killed r2 ended in an error on its "
            "client", all(x["error"] and x["error_t"] >= k0 for x in cut),
            [(x.get("error"), x.get("error_t"), k0) for x in cut])
    c.check("no byte moved through a tunnel of r2 after the kill",
            all(x["last"] is not None and x["last"] <= k1 + 0.3
                for x in cut), [(x["last"], k1) for x in cut])
    c.check("the clients of r2's tunnels learnt within 8 s",
            all(x.get("error_t", 1e18) <= k1 + 8 for x in cut),
            [x.get("error_t", 0) - k1 for x in cut])
    after = [sum(v for k, v in x["buckets"].items() if int(k) >= k1 + 1)
             for x in kept]
    c.check("the tunnels through r1 and r3 carried on: no error, bytes "
            "every one of them after the kill (%d bytes in all)" %
            sum(after), all(x["error"] is None for x in kept) and
            all(a > 0 for a in after) and
            all(x["last"] >= k1 + FLOOD_SECS - KILL_AFTER - 3
                for x in kept), [(x["error"], x["last"] - k1)
                                 for x in kept])
    print("# tunnels: %d through r2 cut %.2f-%.2f s after docker kill "
          "began (it returned after %.2f s); %d through r1 and r3 carried "
          "%d bytes after it" % (
              len(cut), min(x["error_t"] for x in cut) - k0,
              max(x["error_t"] for x in cut) - k0, k1 - k0, len(kept),
              sum(after)), flush=True)


def check_requests(t, c, reports, k0, k1):
    survivors = {t.replica[rn]["sbx"] for rn in ("r1", "r3")}
    before, during, after = [], [], []
    for rep in reports.values():
        for r in rep["requests"]:
            (before if r["t1"] < k0 else after if r["t0"] >= k1 + 2
             else during).append(r)
    c.check("the %d requests through the name before the kill succeeded"
            % len(before), before and all(r["code"] == 200 for r in before),
            [r for r in before if r["code"] != 200][:3])
    c.check("the %d requests through the name from 2 s after the kill "
            "succeeded, on r1 and r3 alone" % len(after),
            len(after) >= 3 * len(SANDBOXES) and
            all(r["code"] == 200 and r["remote"] in survivors and
                peer_replica(t, r["body"]) in ("r1", "r3") for r in after),
            [r for r in after if r["code"] != 200 or
             r["remote"] not in survivors][:3])
    print("# requests through %s: %d before the kill, %d in its first 2 s "
          "(%d failed), %d after" % (
              ALIAS, len(before), len(during),
              sum(r["code"] != 200 for r in during), len(after)),
          flush=True)


def check_upstream(t, c, k0, k1):
    """What the upstreams saw: connections from replicas only; r2's
    tunnels ending at the kill, nothing from r2 after it."""
    lines = []
    for line in docker("logs", t.upstream).stdout.splitlines():
        try:
            lines.append(json.loads(line))
        except ValueError:
            pass
    ups = {r["up"]: rn for rn, r in t.replica.items()}
    c.check("every connection an upstream saw (%d) came from a replica" %
            len(lines), lines and all(x.get("peer") in ups for x in lines
                                      if "peer" in x),
            {x.get("peer") for x in lines} - set(ups))
    r2 = [x for x in lines if ups.get(x.get("peer")) == "r2"]
    opened = [x for x in r2 if x.get("ev") == "tls_open"]
    ended = [x for x in r2 if x.get("ev") == "tls_close" and
             k0 - 0.5 <= x["t"] <= k1 + 8]
    n = len(SANDBOXES) * TUNNELS_PER_REPLICA
    # A request r2 was answering when the signal came may end after k0;
    # nothing may come from r2 once the upstream saw its tunnels end.
    died = max([x["t"] for x in ended] or [k0])
    c.check("the upstream saw r2's %d tunnels open before the kill and "
            "end at it, and nothing from r2 after that" % n,
            len(opened) == n and len(ended) == n and
            all(x["t"] < k0 for x in opened) and
            all(x["t"] <= died for x in r2), r2)


def verify(t, rn, key=True):
    args = ["audit", "verify", "--log-dir", t.path("logs", rn),
            "--instance", rn]
    if key:
        args += ["--key", t.path("keys", rn, "checkpoint.key.pub"),
                 "--anchor", t.path("keys", rn, "checkpoint.key.anchor")]
    return t.sandgate(*args)


def check_verify_after_kill(t, c, k1):
    """Past two checkpoint intervals, the killed writer's log is what
    docs/audit.md says of a writer that stopped without closing: not
    trusted. The live replicas' logs pass."""
    wait = k1 + 2 * CHECKPOINT_SECS + 1.5 - time.time()
    if wait > 0:
        time.sleep(wait)
    r = verify(t, "r2")
    c.check("audit verify --key fails the killed r2's log: its writer "
            "stopped without closing it", r.returncode == 1 and
            "not trusted" in r.stdout and "stopped without closing" in
            r.stdout, r.stdout + r.stderr)
    for rn in ("r1", "r3"):
        r = verify(t, rn)
        c.check("audit verify --key passes the running %s's log" % rn,
                r.returncode == 0 and "chain intact" in r.stdout,
                r.stdout + r.stderr)


def restart_and_stop(t, c):
    """r2 started again on its own folder and key: tokens work on it at
    once; then every replica stopped with docker stop (a close)."""
    docker("start", t.replica["r2"]["name"])
    wait_ready(t, "r2")
    sb = SANDBOXES[1]
    out = probe(t, sb, [{"curl": [t.replica["r2"]["sbx"],
                                  t.sandbox[sb]["token"], WEB]}])
    c.check("the restarted r2 takes %s's token at once" % sb,
            out[0]["code"] == 200, out)
    docker("stop", "-t", "35", *[t.replica[rn]["name"] for rn in REPLICAS],
           timeout=90)
    for rn in REPLICAS:
        st = docker("inspect", "-f", "{{.State.ExitCode}}",
                    t.replica[rn]["name"]).stdout.strip()
        c.check("%s exited 0 at docker stop" % rn, st == "0", st)


def check_logs(t, c):
    for rn in REPLICAS:
        r = verify(t, rn)
        text = r.stdout + r.stderr
        stopped = "stopped without closing" in text
        c.check("audit verify --key passes %s's log on its own, closed" % rn,
                r.returncode == 0 and "chain intact" in text and
                "(close," in text, text)
        c.check("%s's verify %s that its writer stopped without closing" %
                (rn, "says" if rn == "r2" else "does not say"),
                stopped == (rn == "r2"), text)
        starts = [e for e in log_events(t, rn)
                  if e.get("event") == "proxy.started"]
        c.check("%s's log has %d proxy.started naming it" %
                (rn, 2 if rn == "r2" else 1),
                len(starts) == (2 if rn == "r2" else 1) and
                all(e.get("instance") == rn for e in starts), starts)
    both = t.path("logs", "all")
    os.makedirs(both)
    for rn in REPLICAS:
        name = "security-events.%s.jsonl" % rn
        shutil.copy2(t.path("logs", rn, name), os.path.join(both, name))
    inst = []
    for rn in REPLICAS:
        inst += ["--instance", rn]
    r = t.sandgate("audit", "--log-dir", both, *inst, "--json")
    evs = []
    for line in r.stdout.splitlines():
        try:
            evs.append(json.loads(line))
        except ValueError:
            pass
    started = sorted(e.get("instance") for e in evs
                     if e.get("event") == "proxy.started")
    reasons = {e.get("reason") for e in evs if e.get("event") ==
               "egress.blocked"}
    want = sum(1 for rn in REPLICAS for e in log_events(t, rn)
               if e.get("event") != "log.checkpoint")
    c.check("sandgate audit --instance r1 --instance r2 --instance r3 "
            "reads the three logs together (%d events)" % len(evs),
            r.returncode == 0 and len(evs) == want and
            started == ["r1", "r2", "r2", "r3"] and
            {"token_forged", "token_expired", "token_malformed",
             "token_other_sandbox", "not_allowlisted"} <= reasons,
            (r.returncode, len(evs), want, started, reasons,
             r.stderr[:300]))
    r = t.sandgate("audit", "verify", "--log-dir", both, *inst)
    c.check("sandgate audit verify --instance x3 checks each chain",
            r.returncode == 0 and all("security-events.%s.jsonl:" % rn in
                                      r.stdout for rn in REPLICAS),
            r.stdout + r.stderr)


def scenario(t, c):
    start_infra(t)
    prepare_replicas(t)
    r = t.sandgate("proxy", "token", "--sets", "tier", "--ttl", "1",
                   SANDBOXES[0])
    t.expired, t.expired_at = r.stdout.strip(), time.time() + 2
    start_replicas(t)
    start_sandboxes(t)
    check_tokens_everywhere(t, c)
    check_refusals(t, c)
    check_blocks(t, c)
    reports, k0, k1 = flood_and_kill(t)
    check_tunnels(t, c, reports, k0, k1)
    check_requests(t, c, reports, k0, k1)
    check_upstream(t, c, k0, k1)
    check_verify_after_kill(t, c, k1)
    check_pending_after_kill(t, c)
    restart_and_stop(t, c)
    check_logs(t, c)


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--role":
        ROLES[sys.argv[2]](*sys.argv[3:])
        return 0
    if os.geteuid() != 0 or docker("info", check=False).returncode != 0:
        print("skip: needs root and a reachable Docker")
        return 77
    if docker("image", "inspect", BASE_IMAGE, check=False).returncode != 0:
        r = subprocess.run([os.path.join(proxylib.BIN, "sandgate"), "image",
                            "build"], capture_output=True, text=True)
        if r.returncode != 0:
            print("FAIL - base image builds: " + r.stderr)
            return 1
    t0 = time.monotonic()
    t, c = Tier(), Checks()
    try:
        scenario(t, c)
    except Exception as e:  # a step that could not run is a failure
        c.check("the scenario runs to its end", False, "%s: %s" %
                (type(e).__name__, e))
    finally:
        t.cleanup()
    left = docker("ps", "-aq", "--filter", "label=sandgate.test=" + t.tag,
                  check=False).stdout.split()
    nets = docker("network", "ls", "-q", "--filter",
                  "label=sandgate.test=" + t.tag, check=False).stdout.split()
    c.check("no container or network of the test is left", not left and
            not nets, (left, nets))
    print("# %.0f s" % (time.monotonic() - t0))
    print("%d passed, %d failed" % (c.passed, c.failed))
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main())
