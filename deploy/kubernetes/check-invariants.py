#!/usr/bin/env python3
"""check-invariants.py: what sandgate's manifests must keep, checked.

    check-invariants.py [DIR]      (default: this folder)

Reads every *.yaml of DIR and DIR/generated and asserts:
  - every pod (StatefulSet, DaemonSet, SandboxTemplate): no service-account
    token, every container and init container drops ALL capabilities and
    adds none, no privilege escalation, not privileged, a read-only root,
    no host network, PID or IPC namespace;
  - pods in sandgate's namespaces and sandboxes: runAsNonRoot;
  - sandboxes (SandboxTemplate): the gVisor RuntimeClass (a RuntimeClass
    of these manifests whose handler is runsc), the Localhost seccomp
    profile sandgate/seccomp.json, HTTP(S)_PROXY at the proxy Service with
    the token in the URL, no DNS (dnsPolicy None);
  - sandbox egress: the sandbox namespace denies all by default, and every
    egress rule there (NetworkPolicies and the template's managed policy)
    goes only to the proxy pods on the proxy port; no ingress is allowed.
Prints each broken invariant as FILE: KIND NAME: what; exit 1 if any, 0
if none, 2 when DIR holds no manifests.
"""
import glob
import os
import sys

import yaml

SANDBOX_NS = "sandgate-sandboxes"
PROXY_NS = "sandgate-system"
PROXY_LABELS = {"app.kubernetes.io/name": "sandgate-proxy"}
PROXY_PORT = 3128
PROXY_HOST = "sandgate-proxy.sandgate-system.svc"
SECCOMP = "sandgate/seccomp.json"
TEMPLATE = ("extensions.agents.x-k8s.io/v1beta1", "SandboxTemplate")


class Report:
    def __init__(self):
        self.broken = 0

    def bad(self, where, what):
        print("%s: %s" % (where, what))
        self.broken += 1


def pod_spec(doc):
    kind = doc.get("kind")
    spec = doc.get("spec") or {}
    if kind in ("StatefulSet", "DaemonSet", "Deployment", "Job"):
        return (spec.get("template") or {}).get("spec")
    if kind == "SandboxTemplate":
        return (spec.get("podTemplate") or {}).get("spec")
    if kind == "Pod":
        return spec
    return None


def containers(spec):
    return (spec.get("containers") or []) + (spec.get("initContainers")
                                              or [])


def check_container(rep, where, c, nonroot):
    sc = c.get("securityContext") or {}
    caps = sc.get("capabilities") or {}
    name = "container %s" % c.get("name")
    if "ALL" not in (caps.get("drop") or []):
        rep.bad(where, "%s does not drop ALL capabilities" % name)
    if caps.get("add"):
        rep.bad(where, "%s adds capabilities %s" % (name, caps["add"]))
    if sc.get("allowPrivilegeEscalation") is not False:
        rep.bad(where, "%s allows privilege escalation" % name)
    if sc.get("privileged"):
        rep.bad(where, "%s is privileged" % name)
    if sc.get("readOnlyRootFilesystem") is not True:
        rep.bad(where, "%s has a writable root filesystem" % name)
    if nonroot(sc) is not True:
        rep.bad(where, "%s may run as root (runAsNonRoot)" % name)


def check_pod(rep, where, doc, spec, sandbox):
    if spec.get("automountServiceAccountToken") is not False:
        rep.bad(where, "mounts a service-account token")
    for key in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(key):
            rep.bad(where, "uses %s" % key)
    pod_sc = spec.get("securityContext") or {}
    ours = sandbox or (doc.get("metadata") or {}).get(
        "namespace", "").startswith("sandgate-")

    def nonroot(sc):
        if not ours:
            return True
        return sc.get("runAsNonRoot", pod_sc.get("runAsNonRoot"))
    for c in containers(spec):
        check_container(rep, where, c, nonroot)


def seccomp_of(spec, c):
    sc = (c.get("securityContext") or {}).get("seccompProfile")
    return sc or (spec.get("securityContext") or {}).get("seccompProfile")


def check_sandbox(rep, where, spec, runtimes):
    rc = spec.get("runtimeClassName")
    if rc is None or runtimes.get(rc) != "runsc":
        rep.bad(where, "runtimeClassName %s is not a RuntimeClass with "
                "handler runsc (gVisor)" % rc)
    if spec.get("dnsPolicy") != "None":
        rep.bad(where, "has DNS (dnsPolicy is not None)")
    for c in containers(spec):
        prof = seccomp_of(spec, c) or {}
        if (prof.get("type") != "Localhost"
                or prof.get("localhostProfile") != SECCOMP):
            rep.bad(where, "container %s: seccomp profile is not Localhost "
                    "%s" % (c.get("name"), SECCOMP))
        env = {e.get("name"): e.get("value") for e in c.get("env") or []}
        for var in ("HTTP_PROXY", "HTTPS_PROXY"):
            want = "http://sandgate:$(SANDGATE_TOKEN)@%s:%d" % (
                PROXY_HOST, PROXY_PORT)
            if env.get(var) != want:
                rep.bad(where, "container %s: %s is not %s" % (
                    c.get("name"), var, want))


def peer_is_proxy(peer):
    ns = (peer.get("namespaceSelector") or {}).get("matchLabels") or {}
    pods = (peer.get("podSelector") or {}).get("matchLabels") or {}
    return (set(peer) == {"namespaceSelector", "podSelector"}
            and ns == {"kubernetes.io/metadata.name": PROXY_NS}
            and pods == PROXY_LABELS)


def check_egress(rep, where, rules):
    for i, rule in enumerate(rules or []):
        peers = rule.get("to") or []
        ports = rule.get("ports") or []
        if not peers or not all(peer_is_proxy(p) for p in peers):
            rep.bad(where, "egress rule %d reaches more than the proxy "
                    "pods" % i)
        if (not ports or any(p.get("protocol", "TCP") != "TCP"
                             or p.get("port") != PROXY_PORT
                             or "endPort" in p for p in ports)):
            rep.bad(where, "egress rule %d allows ports other than TCP "
                    "%d" % (i, PROXY_PORT))


def check_netpols(rep, docs):
    deny = False
    for where, doc in docs:
        if (doc.get("kind") != "NetworkPolicy"
                or doc["metadata"].get("namespace") != SANDBOX_NS):
            continue
        spec = doc.get("spec") or {}
        types = set(spec.get("policyTypes") or [])
        if (spec.get("podSelector") in ({}, None) and types ==
                {"Ingress", "Egress"} and not spec.get("ingress")
                and not spec.get("egress")):
            deny = True
        if spec.get("ingress"):
            rep.bad(where, "allows ingress to sandboxes")
        check_egress(rep, where, spec.get("egress"))
    if not deny:
        rep.bad("(all files)", "no default-deny NetworkPolicy (ingress and "
                "egress) in namespace %s" % SANDBOX_NS)


def check_template_netpol(rep, where, spec):
    if spec.get("networkPolicyManagement", "Managed") == "Unmanaged":
        return
    np = spec.get("networkPolicy")
    if np is None:
        rep.bad(where, "managed NetworkPolicy with no rules: agent-sandbox's "
                "default lets sandboxes reach the internet")
        return
    if np.get("ingress"):
        rep.bad(where, "managed NetworkPolicy allows ingress")
    check_egress(rep, where, np.get("egress"))


def load(folder):
    docs = []
    files = sorted(glob.glob(os.path.join(folder, "*.yaml")) +
                   glob.glob(os.path.join(folder, "generated", "*.yaml")))
    for path in files:
        with open(path, encoding="utf-8") as f:
            for doc in yaml.safe_load_all(f):
                if isinstance(doc, dict):
                    where = "%s: %s %s" % (os.path.relpath(path, folder),
                                           doc.get("kind"), (doc.get(
                                               "metadata") or {}).get("name"))
                    docs.append((where, doc))
    return docs


def main(argv):
    folder = argv[1] if len(argv) > 1 else os.path.dirname(
        os.path.abspath(__file__))
    docs = load(folder)
    if not docs:
        sys.stderr.write("check-invariants.py: no manifests in %s\n" % folder)
        return 2
    rep = Report()
    runtimes = {d["metadata"]["name"]: d.get("handler") for _, d in docs
                if d.get("kind") == "RuntimeClass"}
    templates = 0
    for where, doc in docs:
        spec = pod_spec(doc)
        sandbox = (doc.get("apiVersion"), doc.get("kind")) == TEMPLATE
        if spec is not None:
            check_pod(rep, where, doc, spec, sandbox)
        if sandbox:
            templates += 1
            check_sandbox(rep, where, spec or {}, runtimes)
            check_template_netpol(rep, where, doc.get("spec") or {})
    if templates == 0:
        rep.bad("(all files)", "no SandboxTemplate")
    check_netpols(rep, docs)
    if rep.broken:
        print("check-invariants.py: %d invariant(s) broken" % rep.broken)
        return 1
    print("check-invariants.py: %d document(s), every invariant holds"
          % len(docs))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
