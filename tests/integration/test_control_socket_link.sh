#!/usr/bin/env bash
# test_control_socket_link.sh: the controller speaks to the proxy's
# control socket only, never through a link. The socket's folder
# (<state>/proxy/run) is the proxy's uid's, so a compromised proxy could
# make control.sock a link to another unix socket on the host, which the
# controller, as root, connected to and sent its requests (atk44a F5:
# `proxy reload` and `grants` reached a listener elsewhere). A link, or a
# file that is no socket, is refused with 125 naming it, and the other
# socket gets no connection; a real socket there is spoken to as before.
# No Docker: a local listener plays the proxy.
set -u
SRC=${SANDGATE_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRC/tests/lib/common.sh"

sg_setup
chmod 0700 "$SANDGATE_STATE"
RUN=$SANDGATE_STATE/proxy/run
mkdir -p "$RUN" "$SG_TMP/other"
chown 65532:65532 "$RUN"
chmod 0750 "$RUN"

# a listener that answers every request {} and logs what it got
listen() {	# SOCKET LOG
	python3 - "$1" "$2" <<'PY' &
import os, socket, sys
path, log = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX)
s.bind(path)
s.listen(8)
s.settimeout(60)
while True:
    try:
        c, _ = s.accept()
    except socket.timeout:
        break
    data = c.recv(65536)
    with open(log, "a") as f:
        f.write(data.split(b"\r\n", 1)[0].decode(errors="replace") + "\n")
    c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
              b"Content-Length: 13\r\nConnection: close\r\n\r\n"
              b'{"grants":[]}')
    c.close()
PY
	SG_LISTENERS+=("$!")
	for _ in $(seq 50); do [ -S "$1" ] && return 0; sleep 0.1; done
	return 1
}
SG_LISTENERS=()
sg_on_exit 'kill "${SG_LISTENERS[@]}"'

listen "$SG_TMP/other/service.sock" "$SG_TMP/other.log"
ln -s "$SG_TMP/other/service.sock" "$RUN/control.sock"
chown -h 65532:65532 "$RUN/control.sock"
sg_run g "$SG" grants
assert_eq "grants through a link: refused" 125 "$g_rc"
assert_contains "naming the link" "$g_err" "control socket $RUN/control.sock is a link"
sg_run r "$SG" proxy reload
assert_eq "proxy reload through a link: refused" 125 "$r_rc"
sleep 0.3
assert_eq "the other socket got no request" "" "$(cat "$SG_TMP/other.log" 2>/dev/null)"

rm "$RUN/control.sock"
: >"$RUN/control.sock"
sg_run g "$SG" grants
assert_eq "a file that is no socket: refused" 125 "$g_rc"
assert_contains "and said so" "$g_err" "is not a socket"
rm "$RUN/control.sock"

# the real thing: a socket there is spoken to
listen "$RUN/control.sock" "$SG_TMP/proxy.log"
sg_run g "$SG" grants
assert_eq "grants through the socket" 0 "$g_rc"
sleep 0.3
assert_contains "the socket got the request" "$(cat "$SG_TMP/proxy.log" 2>/dev/null)" "GET /grants"
sg_summary
