#!/usr/bin/env python3
"""validate.py: every manifest of deploy/kubernetes against its schema, offline.

    validate.py [FILE.yaml...]     (default: *.yaml and generated/*.yaml)

Schemas (schemas/README.md): the agent-sandbox CRDs' openAPIV3Schema,
extracted from their CRD YAML of release v0.5.6, and schemas/kubernetes.json
for the Kubernetes kinds, whose PodSpec, PersistentVolumeClaim and
NetworkPolicy rules are the ones inside the SandboxTemplate schema (both
from k8s.io/api v0.36.3). Checked with python3-jsonschema (Debian). An
object schema that names its properties gets additionalProperties false
unless it says otherwise, so a misspelt field is an error, as with
kubectl --validate=strict. Exit 0 when every document passes, 1 when one
does not (each error is printed as FILE: document N (KIND NAME): PATH:
message), 2 on usage errors.
"""
import glob
import json
import os
import sys

import jsonschema
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMAS = os.path.join(HERE, "schemas")
AGENT_SANDBOX = "agent-sandbox-v0.5.6-"


def strict(node):
    """additionalProperties false on every object schema with properties."""
    if isinstance(node, dict):
        if ("properties" in node and "additionalProperties" not in node
                and not node.get("x-kubernetes-preserve-unknown-fields")):
            node["additionalProperties"] = False
        for value in node.values():
            strict(value)
    elif isinstance(node, list):
        for value in node:
            strict(value)
    return node


def load_crd(name):
    with open(os.path.join(SCHEMAS, AGENT_SANDBOX + name + ".json"),
              encoding="utf-8") as f:
        crd = json.load(f)
    key = (crd["group"] + "/" + crd["version"], crd["kind"])
    return key, strict(crd["openAPIV3Schema"])


def load_schemas():
    """{(apiVersion, kind): (schema, resolver)} for every known kind."""
    kinds = {}
    tkey, template = load_crd("sandboxtemplates")
    wkey, warmpool = load_crd("sandboxwarmpools")
    kinds[tkey] = template
    kinds[wkey] = warmpool
    with open(os.path.join(SCHEMAS, "kubernetes.json"),
              encoding="utf-8") as f:
        k8s = strict(json.load(f))
    spec = template["properties"]["spec"]["properties"]
    defs = k8s["definitions"]
    defs["PodSpec"] = spec["podTemplate"]["properties"]["spec"]
    defs["PersistentVolumeClaim"] = spec["volumeClaimTemplates"]["items"]
    netpol = spec["networkPolicy"]["properties"]
    defs["NetworkPolicyIngressRule"] = netpol["ingress"]["items"]
    defs["NetworkPolicyEgressRule"] = netpol["egress"]["items"]
    for name, schema in defs.items():
        props = schema.get("properties", {})
        if "kind" in props and "const" in props["kind"]:
            key = (props["apiVersion"]["const"], props["kind"]["const"])
            kinds[key] = {"$ref": "#/definitions/" + name,
                          "definitions": defs}
    return kinds


def check_file(path, kinds):
    errors = 0
    try:
        with open(path, encoding="utf-8") as f:
            docs = list(yaml.safe_load_all(f))
    except (OSError, yaml.YAMLError) as e:
        print("%s: cannot be read as YAML: %s" % (path, e))
        return 1
    for n, doc in enumerate(docs, 1):
        if doc is None:
            continue
        if not isinstance(doc, dict):
            print("%s: document %d is not a mapping" % (path, n))
            errors += 1
            continue
        key = (doc.get("apiVersion"), doc.get("kind"))
        name = (doc.get("metadata") or {}).get("name", "?")
        where = "%s: document %d (%s %s)" % (path, n, key[1], name)
        if key not in kinds:
            print("%s: no schema for apiVersion %s kind %s" % (where, *key))
            errors += 1
            continue
        validator = jsonschema.Draft7Validator(kinds[key])
        for err in sorted(validator.iter_errors(doc),
                          key=lambda e: list(e.absolute_path)):
            field = "/".join(str(p) for p in err.absolute_path) or "(top)"
            print("%s: %s: %s" % (where, field, err.message))
            errors += 1
    return errors


def main(argv):
    files = argv[1:] or sorted(glob.glob(os.path.join(HERE, "*.yaml")) +
                               glob.glob(os.path.join(HERE, "generated",
                                                      "*.yaml")))
    if not files:
        sys.stderr.write("validate.py: no manifests\n")
        return 2
    kinds = load_schemas()
    errors = sum(check_file(path, kinds) for path in files)
    if errors:
        print("validate.py: %d error(s) in %d file(s)" % (errors, len(files)))
        return 1
    print("validate.py: %d file(s) valid" % len(files))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
