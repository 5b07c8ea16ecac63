#!/usr/bin/env bash
# start.sh: the demo registry, pypi.sandgate.test: a PyPI-style simple index
# over HTTPS in a container on NETWORK (an --internal network, so nothing it
# does can leave the machine), serving a wheel built on the spot and signed
# by a CA made here.
#
#   images/demo-registry/start.sh NETWORK WORKDIR
#
# Writes WORKDIR/ca.crt (trust it in sandboxes with --ca-cert) and
# WORKDIR/hosts (pypi.sandgate.test -> the registry's address, for the
# proxy's --hosts). Needs the image sandgate/base (python3). Idempotent.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
net=${1:?usage: start.sh NETWORK WORKDIR} work=${2:?usage: start.sh NETWORK WORKDIR}
name=sandgate-demo-registry host=pypi.sandgate.test
mkdir -p "$work/pki" "$work/www"
if [ ! -s "$work/pki/server.crt" ]; then
	openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=sandgate demo CA" \
		-keyout "$work/pki/ca.key" -out "$work/ca.crt" 2>/dev/null
	openssl req -newkey rsa:2048 -nodes -subj "/CN=$host" \
		-keyout "$work/pki/server.key" -out "$work/pki/server.csr" 2>/dev/null
	printf 'subjectAltName=DNS:%s\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' "$host" \
		> "$work/pki/ext.cnf"
	openssl x509 -req -in "$work/pki/server.csr" -CA "$work/ca.crt" -CAkey "$work/pki/ca.key" \
		-CAcreateserial -days 30 -extfile "$work/pki/ext.cnf" -out "$work/pki/server.crt" 2>/dev/null
	chmod 0644 "$work/pki/server.key"
fi
python3 "$here/make_wheel.py" "$work/www" >/dev/null
cp "$here/serve.py" "$work/serve.py"
if ! docker network inspect "$net" >/dev/null 2>&1; then
	docker network create --internal "$net" >/dev/null
fi
# (Re)start unless it already runs on this network with this folder.
if [ "$(docker inspect -f "{{.State.Running}} {{with index .NetworkSettings.Networks \"$net\"}}on{{end}} {{range .Mounts}}{{.Source}}{{end}}" "$name" 2>/dev/null)" != "true on $work" ]; then
	docker rm -f "$name" >/dev/null 2>&1 || true
	docker run -d --name "$name" --network "$net" --user 1000:1000 --read-only \
		--cap-drop ALL --security-opt no-new-privileges --memory 256m --pids-limit 64 \
		-v "$work:/srv:ro" sandgate/base:latest \
		python3 /srv/serve.py /srv/www /srv/pki/server.crt /srv/pki/server.key 443 >/dev/null
fi
ip=$(docker inspect -f "{{(index .NetworkSettings.Networks \"$net\").IPAddress}}" "$name")
printf '%s %s\n' "$ip" "$host" > "$work/hosts"
for i in $(seq 1 50); do
	docker logs "$name" 2>&1 | grep -q 'serving' && break
	sleep 0.2
done
echo "registry $host at $ip on $net"
