# fixture.sh: a sandbox folder laid out as `sandgate create` lays it out,
# without Docker (source it). For tests and benchmarks of diff, apply and
# export on the real binary.
#
#   sg_fixture_sandbox ID SRC [DISK]   $SANDGATE_STATE/sandboxes/ID: a
#       read-only snapshot/ and a work/ copy of SRC, manifest.json (SHA-256,
#       mode, size of each file), meta.json (source SRC, no container,
#       "disk": DISK bytes when given), lock, runs/
sg_fixture_sandbox() {
	local sbx=$SANDGATE_STATE/sandboxes/$1
	mkdir -p "$sbx/runs"
	cp -a "$2" "$sbx/snapshot"
	cp -a "$2" "$sbx/work"
	touch "$sbx/lock"
	python3 - "$2" "$sbx" "$1" "${3:-0}" <<-'PY'
	import hashlib, json, os, sys
	src, sbx, sid, disk = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
	files = []
	for d, _, names in os.walk(src):
	    for n in names:
	        p = os.path.join(d, n)
	        st = os.stat(p)
	        files.append({"path": os.path.relpath(p, src),
	            "sha256": hashlib.sha256(open(p, "rb").read()).hexdigest(),
	            "mode": "%04o" % (st.st_mode & 0o7777), "size": st.st_size})
	files.sort(key=lambda f: f["path"].encode())
	json.dump({"version": 1, "excludes": [], "exclude_secrets": False,
	    "cutoff_ns": 0, "files": files}, open(sbx + "/manifest.json", "w"))
	meta = {"id": sid, "source": src, "created": "2026-01-01T00:00:00Z",
	    "image": "test", "container": ""}
	if disk:
	    meta["disk"] = disk
	json.dump(meta, open(sbx + "/meta.json", "w"))
	PY
	chmod -R a-w "$sbx/snapshot"
}
