#!/usr/bin/env python3
"""configmap.py: a ConfigMap of files, as YAML on stdout.

    configmap.py NAME NAMESPACE ANNOTATION FILE...

ANNOTATION is KEY=VALUE, or empty for none. Each FILE becomes a key, its
base name, holding its text; gen-configmaps.sh calls this.
"""
import os
import sys

import yaml


class Literal(str):
    """A string written as a YAML block literal."""


def literal(dumper, data):
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|")


def main(argv):
    if len(argv) < 5:
        sys.stderr.write("usage: configmap.py NAME NAMESPACE ANNOTATION "
                         "FILE...\n")
        return 2
    meta = {"name": argv[1], "namespace": argv[2],
            "labels": {"app.kubernetes.io/part-of": "sandgate"}}
    if argv[3]:
        key, _, value = argv[3].partition("=")
        meta["annotations"] = {key: value}
    data = {}
    for path in sorted(argv[4:]):
        name = os.path.basename(path)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        if name in data:
            sys.stderr.write("configmap.py: two files named %s\n" % name)
            return 1
        data[name] = Literal(text) if text.endswith("\n") else text
    yaml.add_representer(Literal, literal)
    sys.stdout.write("# Made by deploy/kubernetes/gen-configmaps.sh: do not "
                     "edit.\n")
    yaml.dump({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta,
               "data": data}, sys.stdout, sort_keys=False,
              default_flow_style=False, width=1000)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
