#!/usr/bin/env bash
# record.sh: capture real TLS ClientHellos for tests/unit/test_sni.c.
#
# A tiny listener on 127.0.0.1 saves the first TLS records a client sends
# (until one whole ClientHello message has arrived) and closes; curl,
# openssl s_client and python's ssl module connect to it. Nothing leaves
# loopback. ech.bin is built from curl.bin by adding an extension 0xfe0d.
# Rerun from anywhere: bash tests/data/clienthello/record.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

listen() {	# listen OUTFILE: prints the port, saves one ClientHello
	python3 - "$1" <<'PY' &
import socket, sys
out = sys.argv[1]
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(1)
print(s.getsockname()[1], flush=True)
s.settimeout(20)
c, _ = s.accept()
c.settimeout(10)
data = b""
def complete(d):
    # Reassemble handshake bytes from records; done when the first
    # handshake message is whole.
    hs, i = b"", 0
    while i + 5 <= len(d):
        n = int.from_bytes(d[i + 3:i + 5], "big")
        if i + 5 + n > len(d):
            break
        hs += d[i + 5:i + 5 + n]
        i += 5 + n
    return len(hs) >= 4 and len(hs) >= 4 + int.from_bytes(hs[1:4], "big")
while not complete(data):
    b = c.recv(65536)
    if not b:
        break
    data += b
open(out, "wb").write(data)
c.close()
PY
}

capture() {	# capture NAME CMD...: CMD gets the port as $PORT
	local name=$1 fifo port pid
	shift
	fifo=$(mktemp -u)
	mkfifo "$fifo"
	listen "$name.bin" >"$fifo" &
	pid=$!
	read -r port <"$fifo"
	rm -f "$fifo"
	PORT=$port bash -c "$*" >/dev/null 2>&1 </dev/null || true
	wait "$pid" || true
	echo "$name.bin: $(stat -c %s "$name.bin") bytes"
}

capture curl 'curl -sk --max-time 5 --resolve allowed.test:$PORT:127.0.0.1 https://allowed.test:$PORT/'
capture openssl 'timeout 5 openssl s_client -connect 127.0.0.1:$PORT -servername allowed.test'
capture nosni 'timeout 5 openssl s_client -connect 127.0.0.1:$PORT -noservername'
capture python 'python3 -c "
import os, socket, ssl
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
s = socket.create_connection((\"127.0.0.1\", int(os.environ[\"PORT\"])), timeout=5)
ctx.wrap_socket(s, server_hostname=\"allowed.test\")
"'

# ech.bin: curl.bin with an extra extension 0xfe0d (a stand-in for an
# Encrypted Client Hello outer extension; the payload is random-looking
# bytes in ECHClientHello's outer layout) and the three lengths fixed.
python3 - <<'PY'
d = open("curl.bin", "rb").read()
assert d[0] == 0x16 and d[5] == 0x01
hs = d[5:5 + int.from_bytes(d[3:5], "big")]
body = hs[4:]
i = 2 + 32                      # legacy_version, random
i += 1 + body[i]                # legacy_session_id
i += 2 + int.from_bytes(body[i:i + 2], "big")   # cipher_suites
i += 1 + body[i]                # legacy_compression_methods
exts = body[i + 2:]
payload = (bytes([0]) + bytes.fromhex("0001 0001") + bytes([7]) +
           (32).to_bytes(2, "big") + bytes(range(32)) +
           (16).to_bytes(2, "big") + bytes(range(100, 116)))
exts += (0xfe0d).to_bytes(2, "big") + len(payload).to_bytes(2, "big") + payload
body = body[:i] + len(exts).to_bytes(2, "big") + exts
hs = bytes([1]) + len(body).to_bytes(3, "big") + body
open("ech.bin", "wb").write(d[:3] + len(hs).to_bytes(2, "big") + hs)
print("ech.bin: %d bytes" % (5 + len(hs)))
PY
