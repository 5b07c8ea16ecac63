#!/usr/bin/env python3
"""test_deploy_kubernetes.py: deploy/kubernetes, checked offline.

No cluster runs here, so this is what is checked of the manifests:
  - generated/ is what gen-configmaps.sh makes now, and the policy
    ConfigMap's digest annotation is the digest the real proxy computes
    (sandgate-proxy --check) for policy.d;
  - every manifest passes validate.py (the vendored schemas), and a
    misspelt field or a wrong type is refused, naming file and field;
  - check-invariants.py passes on the manifests and fails, with its own
    message, on copies that each break one invariant (copies that still
    pass the schema validation: the invariants are more than the schema);
  - the real proxy accepts the StatefulSet's arguments (sandgate-proxy
    --check), with the files laid out as its init container lays them
    (keys copied out of the Secret volumes, mode 0600), so a flag renamed
    in the proxy or misspelt in the manifest fails here.
Prints "N passed, N failed"; exits 1 on any failure.
"""
import contextlib
import importlib.util
import io
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile

import yaml

SRC = os.environ.get("SANDGATE_SRC") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.environ.get("SANDGATE_BIN") or os.path.join(SRC, "build", "bin")
DEPLOY = os.path.join(SRC, "deploy", "kubernetes")
RESULTS = {"passed": 0, "failed": 0}


def check(name, ok, detail=""):
    RESULTS["passed" if ok else "failed"] += 1
    print("%s: %s%s" % ("ok" if ok else "FAIL", name,
                        "" if ok or not detail else "\n" + detail))


def run(*args):
    p = subprocess.run(args, capture_output=True, text=True,
                       env=dict(os.environ, SANDGATE_BIN=BIN), check=False)
    return p.returncode, p.stdout + p.stderr


def test_generated():
    rc, out = run("bash", os.path.join(DEPLOY, "gen-configmaps.sh"),
                  "--check")
    check("generated/ is current (gen-configmaps.sh --check)", rc == 0, out)
    rc, out = run(os.path.join(BIN, "sandgate-proxy"), "--check",
                  "--policy-dir", os.path.join(SRC, "policy.d"))
    m = re.search(r"policy digest ([0-9a-f]{64})", out)
    with open(os.path.join(DEPLOY, "generated", "policy-configmap.yaml"),
              encoding="utf-8") as f:
        cm = yaml.safe_load(f)
    ann = cm["metadata"]["annotations"]["sandgate.dev/policy-digest"]
    check("the ConfigMap's digest is the proxy's", m is not None and
          m.group(1) == ann, "proxy: %s\nannotation: %s" % (out, ann))
    names = sorted(os.listdir(os.path.join(SRC, "policy.d")))
    check("the ConfigMap holds every policy file", sorted(cm["data"]) ==
          names, "%s != %s" % (sorted(cm["data"]), names))


def module(name):
    spec = importlib.util.spec_from_file_location(
        name.replace("-", "_"), os.path.join(DEPLOY, name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


VALIDATE = module("validate")
INVARIANTS = module("check-invariants")
KINDS = VALIDATE.load_schemas()


def manifests(folder):
    files = [os.path.join(folder, f) for f in sorted(os.listdir(folder))
             if f.endswith(".yaml")]
    return files + [os.path.join(folder, "generated", f) for f in
                    sorted(os.listdir(os.path.join(folder, "generated")))]


def validate(folder, script=False):
    """validate.py on folder's manifests: as a program, or in this process
    (the schemas loaded once: the broken copies are many)."""
    if script:
        return run(sys.executable, os.path.join(DEPLOY, "validate.py"),
                   *manifests(folder))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        errors = sum(VALIDATE.check_file(f, KINDS) for f in
                     manifests(folder))
    return (1 if errors else 0), out.getvalue()


def invariants(folder, script=False):
    if script:
        return run(sys.executable, os.path.join(DEPLOY,
                                                "check-invariants.py"), folder)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = INVARIANTS.main(["check-invariants.py", folder])
    return rc, out.getvalue()


def broken_copy(tmp, fname, kind, name, change):
    """A copy of deploy/kubernetes with change(doc) applied to one doc."""
    dst = os.path.join(tmp, "copy")
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(DEPLOY, dst)
    path = os.path.join(dst, fname)
    with open(path, encoding="utf-8") as f:
        docs = [d for d in yaml.safe_load_all(f) if d is not None]
    hit = [d for d in docs if d["kind"] == kind and
           d["metadata"]["name"] == name and
           (kind != "NetworkPolicy" or name != "default-deny" or
            d["metadata"]["namespace"] == "sandgate-sandboxes")]
    assert len(hit) == 1, (fname, kind, name)
    if change(hit[0]) == "drop":
        docs.remove(hit[0])
    with open(path, "w", encoding="utf-8") as f:
        yaml.safe_dump_all(docs, f, sort_keys=False)
    return dst


def tpl_pod(d):
    return d["spec"]["podTemplate"]["spec"]


def tpl_ctr(d):
    return tpl_pod(d)["containers"][0]


def sts_ctr(d):
    return d["spec"]["template"]["spec"]["containers"][0]


def sandbox_egress(d):
    return d["spec"]["egress"]


TPL = ("40-sandbox-template.yaml", "SandboxTemplate", "sandgate-sandbox")
NP = ("30-networkpolicies.yaml", "NetworkPolicy", "sandbox-egress-proxy-only")
DENY = ("30-networkpolicies.yaml", "NetworkPolicy", "default-deny")
STS = ("20-proxy.yaml", "StatefulSet", "sandgate-proxy")
RC = ("10-runtimeclass.yaml", "RuntimeClass", "gvisor")
DNS_RULE = {"to": [{"namespaceSelector": {"matchLabels": {
    "kubernetes.io/metadata.name": "kube-system"}}, "podSelector": {
        "matchLabels": {"k8s-app": "kube-dns"}}}],
    "ports": [{"protocol": "UDP", "port": 53}]}
META_RULE = {"to": [{"ipBlock": {"cidr": "169.254.169.254/32"}}],
             "ports": [{"protocol": "TCP", "port": 80}]}

# (what breaks, where, the change, what the script must say)
BREAKS = [
    ("service-account token mounted", TPL, lambda d: tpl_pod(d).update(
        automountServiceAccountToken=True), "mounts a service-account token"),
    ("capabilities not dropped", TPL, lambda d: tpl_ctr(d)[
        "securityContext"]["capabilities"].update(drop=["NET_RAW"]),
     "does not drop ALL capabilities"),
    ("a capability added", TPL, lambda d: tpl_ctr(d)["securityContext"][
        "capabilities"].update(add=["NET_ADMIN"]), "adds capabilities"),
    ("writable root (sandbox)", TPL, lambda d: tpl_ctr(d)[
        "securityContext"].update(readOnlyRootFilesystem=False),
     "writable root filesystem"),
    ("writable root (proxy)", STS, lambda d: sts_ctr(d)[
        "securityContext"].pop("readOnlyRootFilesystem"),
     "writable root filesystem"),
    ("runAsNonRoot false", TPL, lambda d: tpl_ctr(d)[
        "securityContext"].update(runAsNonRoot=False), "may run as root"),
    ("privilege escalation", TPL, lambda d: tpl_ctr(d)[
        "securityContext"].pop("allowPrivilegeEscalation"),
     "allows privilege escalation"),
    ("host network", TPL, lambda d: tpl_pod(d).update(hostNetwork=True),
     "uses hostNetwork"),
    ("no gVisor RuntimeClass", TPL, lambda d: tpl_pod(d).pop(
        "runtimeClassName"), "handler runsc"),
    ("RuntimeClass handler runc", RC, lambda d: d.update(handler="runc"),
     "handler runsc"),
    ("seccomp RuntimeDefault", TPL, lambda d: [x.update(seccompProfile={
        "type": "RuntimeDefault"}) for x in (tpl_pod(d)["securityContext"],
                                            tpl_ctr(d)["securityContext"])],
     "seccomp profile is not Localhost"),
    ("DNS for sandboxes", TPL, lambda d: tpl_pod(d).update(
        dnsPolicy="ClusterFirst"), "has DNS"),
    ("HTTP_PROXY without the token", TPL, lambda d: tpl_ctr(d)["env"][1].update(
        value="http://sandgate-proxy.sandgate-system.svc:3128"),
     "HTTP_PROXY is not"),
    ("sandbox egress to DNS", NP, lambda d: sandbox_egress(d).append(
        DNS_RULE), "reaches more than the proxy pods"),
    ("sandbox egress to the metadata address", NP, lambda d: sandbox_egress(
        d).append(META_RULE), "reaches more than the proxy pods"),
    ("sandbox egress to another proxy port", NP, lambda d: sandbox_egress(d)[
        0]["ports"].append({"protocol": "TCP", "port": 9901}),
     "allows ports other than TCP 3128"),
    ("sandbox egress to a node port range", NP, lambda d: sandbox_egress(d)[
        0]["ports"][0].update(endPort=32767),
     "allows ports other than TCP 3128"),
    ("no default deny", DENY, lambda d: "drop", "no default-deny"),
    ("template's managed policy left to agent-sandbox", TPL, lambda d: d[
        "spec"].pop("networkPolicy"), "agent-sandbox's default"),
    ("template's managed policy opens 443", TPL, lambda d: d["spec"][
        "networkPolicy"]["egress"].append({"to": [{"ipBlock": {
            "cidr": "0.0.0.0/0"}}], "ports": [{"protocol": "TCP",
                                               "port": 443}]}),
     "reaches more than the proxy pods"),
]


def test_invariants(tmp):
    rc, out = invariants(DEPLOY, script=True)
    check("check-invariants.py passes on deploy/kubernetes", rc == 0, out)
    for i, (what, (fname, kind, name), change, says) in enumerate(BREAKS):
        dst = broken_copy(tmp, fname, kind, name, change)
        vrc, vout = validate(dst)
        rc, out = invariants(dst, script=i == 0)
        check("broken copy, %s: schema-valid, refused by the invariants "
              "(\"%s\")" % (what, says), vrc == 0 and rc == 1 and says in out,
              "validate rc %d: %s\ninvariants rc %d: %s" % (vrc, vout, rc,
                                                           out))


def test_schema(tmp):
    rc, out = validate(DEPLOY, script=True)
    check("validate.py passes on deploy/kubernetes", rc == 0, out)
    dst = broken_copy(tmp, *TPL, lambda d: tpl_ctr(d)["securityContext"].update(
        readOnlyRootFileSystem=True))
    rc, out = validate(dst, script=True)
    check("validate.py refuses a misspelt field, naming file and field",
          rc == 1 and "40-sandbox-template.yaml" in out and
          "readOnlyRootFileSystem" in out, out)
    dst = broken_copy(tmp, *STS, lambda d: d["spec"].update(replicas="three"))
    rc, out = validate(dst)
    check("validate.py refuses a wrong type", rc == 1 and
          "spec/replicas" in out, out)
    dst = broken_copy(tmp, "40-sandbox-template.yaml", "SandboxWarmPool",
                      "sandgate-sandbox", lambda d: d["spec"].pop(
                          "sandboxTemplateRef"))
    rc, out = validate(dst)
    check("validate.py refuses a WarmPool without its template (CRD "
          "schema)", rc == 1 and "sandboxTemplateRef" in out, out)


def proxy_files(tmp):
    """The files the init container makes, under tmp: {in-pod: here}."""
    data, run_dir = os.path.join(tmp, "data"), os.path.join(tmp, "run")
    for d in (data, os.path.join(data, "keys"), os.path.join(data, "log"),
              run_dir):
        os.makedirs(d, mode=0o700, exist_ok=True)
    key = os.path.join(data, "keys", "checkpoint.pem")
    subprocess.run(["openssl", "genpkey", "-algorithm", "ed25519", "-out",
                    key], check=True, capture_output=True)
    subprocess.run(["openssl", "pkey", "-in", key, "-pubout", "-out",
                    os.path.join(run_dir, "token.pub")], check=True,
                   capture_output=True)
    token = os.path.join(run_dir, "control-token")
    with open(os.open(token, os.O_WRONLY | os.O_CREAT, 0o600), "w",
              encoding="ascii") as f:
        f.write(secrets.token_urlsafe(48) + "\n")
    os.chmod(key, 0o600)
    return {"/etc/sandgate/policy.d": os.path.join(SRC, "policy.d"),
            "/var/lib/sandgate": data, "/run/sandgate": run_dir,
            "$(POD_NAME)": "sandgate-proxy-0", "0.0.0.0:": "127.0.0.1:"}


def test_proxy_args(tmp):
    with open(os.path.join(DEPLOY, "20-proxy.yaml"), encoding="utf-8") as f:
        sts = [d for d in yaml.safe_load_all(f) if d and
               d["kind"] == "StatefulSet"][0]
    args = sts["spec"]["template"]["spec"]["containers"][0]["args"]
    here = proxy_files(os.path.join(tmp, "proxy"))
    mapped = []
    for a in args:
        for pod, local in here.items():
            a = a.replace(pod, local)
        mapped.append(a)
    rc, out = run(os.path.join(BIN, "sandgate-proxy"), *mapped, "--check")
    check("sandgate-proxy --check accepts the StatefulSet's arguments",
          rc == 0 and "configuration OK" in out, "rc %d: %s\nargs: %s" % (
              rc, out, " ".join(mapped)))


def main():
    if not os.access(os.path.join(BIN, "sandgate-proxy"), os.X_OK):
        print("no %s/sandgate-proxy: build first" % BIN)
        return 1
    tmp = tempfile.mkdtemp(prefix="sgtest-k8s-")
    try:
        test_generated()
        test_schema(tmp)
        test_invariants(tmp)
        test_proxy_args(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d passed, %d failed" % (RESULTS["passed"], RESULTS["failed"]))
    return 1 if RESULTS["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
