#!/usr/bin/env python3
"""extract-crd.py: the openAPIV3Schema of one served version of a CRD.

    extract-crd.py CRD.yaml VERSION > KIND.json

Used to vendor the agent-sandbox CRDs' schemas (schemas/README.md says
from which release); validate.py reads the JSON it writes.
"""
import json
import sys

import yaml


def main(argv):
    if len(argv) != 3:
        sys.stderr.write("usage: extract-crd.py CRD.yaml VERSION\n")
        return 2
    with open(argv[1], encoding="utf-8") as f:
        crd = yaml.safe_load(f)
    for v in crd["spec"]["versions"]:
        if v["name"] == argv[2]:
            schema = v["schema"]["openAPIV3Schema"]
            json.dump({"group": crd["spec"]["group"], "version": v["name"],
                       "kind": crd["spec"]["names"]["kind"],
                       "openAPIV3Schema": schema}, sys.stdout,
                      indent=1, sort_keys=True)
            sys.stdout.write("\n")
            return 0
    sys.stderr.write("%s: no version %s\n" % (argv[1], argv[2]))
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
