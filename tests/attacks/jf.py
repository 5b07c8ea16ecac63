#!/usr/bin/env python3
"""jf.py: small JSON helpers for tests/attacks/run (no jq on the host).

  jf.py get FILE EXPR            print EXPR evaluated with o = the JSON in FILE
  jf.py run RUNS RUN_ID          summary of the run record RUN_ID in runs.jsonl
  jf.py lastrun RUNS SANDBOX     summary of the last record of SANDBOX
  jf.py sec EVENTS SANDBOX HOST  summary of the egress.blocked events of
                                 SANDBOX for HOST (empty when none)
A missing file or record prints nothing and exits 1.
"""
import json
import sys


def lines(path):
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if line:
                    try:
                        yield json.loads(line)
                    except ValueError:
                        continue
    except OSError:
        return


def run_summary(o):
    fl = o.get("flags", {})
    on = [k for k in ("timed_out", "oom_killed", "pids_limit_hit",
                      "container_stopped", "sandbox_killed",
                      "output_truncated") if fl.get(k)]
    if fl.get("signal"):
        on.append("signal=%d" % fl["signal"])
    # What tells a kill from outside apart from the command's own end,
    # when a row fails for a reason nobody reproduced.
    if o.get("cmd_exit") is not None and o.get("cmd_exit") != o.get(
            "exit_code"):
        on.append("cmd_exit=%s" % o["cmd_exit"])
    if o.get("cleanup") not in (None, "ok"):
        on.append("cleanup=%s" % o["cleanup"])
    return "runs.jsonl seq %s exit %s%s after %s ms" % (
        o.get("seq"), o.get("exit_code"), " " + ",".join(on) if on else "",
        o.get("duration_ms"))


def main(argv):
    if argv[1] == "get":
        try:
            with open(argv[2], encoding="utf-8") as f:
                o = json.load(f)
        except (OSError, ValueError):
            return 1
        v = eval(argv[3], {"o": o})  # expressions come from the test script
        print(v if not isinstance(v, bool) else str(v).lower())
        return 0
    if argv[1] == "run":
        for o in lines(argv[2]):
            if o.get("run") == argv[3]:
                print(run_summary(o))
                return 0
        return 1
    if argv[1] == "lastrun":
        last = None
        for o in lines(argv[2]):
            if o.get("sandbox") == argv[3]:
                last = o
        if last is None:
            return 1
        print(run_summary(last))
        return 0
    if argv[1] == "sec":
        hits = [o for o in lines(argv[2]) if o.get("event") == "egress.blocked"
                and o.get("sandbox") == argv[3] and o.get("host") == argv[4]]
        if not hits:
            return 1
        print("security-events seq %s reason %s" % (
            hits[-1].get("seq"), hits[-1].get("reason")))
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
