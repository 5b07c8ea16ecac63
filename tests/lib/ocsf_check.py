#!/usr/bin/python3
"""ocsf_check.py SCHEMA [FILE]: check OCSF events, one JSON object a line
(FILE, or stdin), as `sandgate audit export --format ocsf` writes them.

Each event is validated against SCHEMA (tests/data/ocsf/) with Debian's
python3-jsonschema (Draft 2020-12), plus what a JSON Schema cannot state:
type_uid = class_uid * 100 + activity_id, type_name = "CLASS: ACTIVITY",
and the captions (severity, status, action) that go with their ids.

Prints a JSON summary on its last line: {"events": N, "invalid": K,
"by_event": {"egress.blocked": {"class_uid": [4002], "n": 12}, ...},
"errors": [first few]}. Exit 0 when every event is valid, 1 when one is
not, 2 when it cannot run (no jsonschema: apt-get install
python3-jsonschema).

Run it with /usr/bin/python3 so that it is Debian's validator that checks.
"""
import json
import sys

try:
    import jsonschema
except ImportError:
    print("ocsf_check.py: no jsonschema module; apt-get install "
          "python3-jsonschema", file=sys.stderr)
    sys.exit(2)

SEVERITY = {0: "Unknown", 1: "Informational", 2: "Low", 3: "Medium",
            4: "High", 5: "Critical", 6: "Fatal", 99: "Other"}
STATUS = {0: "Unknown", 1: "Success", 2: "Failure", 99: "Other"}
ACTION = {0: "Unknown", 1: "Allowed", 2: "Denied", 3: "Observed",
          4: "Modified", 99: "Other"}
DISPOSITION = {0: "Unknown", 1: "Allowed", 2: "Blocked", 17: "Logged",
               24: "Access Revoked"}


def extra_problems(ev):
    """The rules beyond the schema, as a list of messages."""
    out = []
    want = ev.get("class_uid", -1) * 100 + ev.get("activity_id", -1)
    if ev.get("type_uid") != want:
        out.append("type_uid %r is not class_uid*100+activity_id (%d)"
                   % (ev.get("type_uid"), want))
    if "type_name" in ev and ev["type_name"] != "%s: %s" % (
            ev.get("class_name"), ev.get("activity_name")):
        out.append("type_name %r is not 'class_name: activity_name'"
                   % ev["type_name"])
    for key, table in (("severity", SEVERITY), ("status", STATUS),
                       ("action", ACTION), ("disposition", DISPOSITION)):
        if key in ev and table.get(ev.get(key + "_id")) != ev[key]:
            out.append("%s %r does not go with %s_id %r"
                       % (key, ev[key], key, ev.get(key + "_id")))
    return out


def main(argv):
    if len(argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    src = open(argv[2]) if len(argv) == 3 else sys.stdin
    summary = {"events": 0, "invalid": 0, "by_event": {}, "errors": []}
    for no, line in enumerate(src, 1):
        if not line.strip():
            continue
        summary["events"] += 1
        try:
            ev = json.loads(line)
        except ValueError as e:
            problems = ["not JSON: %s" % e]
            ev = {}
        else:
            problems = [e.message[:300] for e in
                        validator.iter_errors(ev)] + extra_problems(ev)
        name = str(ev.get("unmapped", {}).get("sandgate", {}).get("event",
                                                                  "?"))
        entry = summary["by_event"].setdefault(name, {"class_uid": [],
                                                      "n": 0})
        entry["n"] += 1
        if ev.get("class_uid") not in entry["class_uid"]:
            entry["class_uid"].append(ev.get("class_uid"))
        if problems:
            summary["invalid"] += 1
            if len(summary["errors"]) < 20:
                summary["errors"].append("line %d (%s): %s"
                                         % (no, name, "; ".join(problems)))
    print(json.dumps(summary, sort_keys=True))
    return 1 if summary["invalid"] or not summary["events"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
