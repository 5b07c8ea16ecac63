#!/usr/bin/env python3
"""agent_example.py: an agent harness's run_command wired to sandgate.

Drives one real sandbox through what an agent does in a session:

  1. create a sandbox over a project, allowed to use the demo registry;
  2. install a package from the allowlisted index (works);
  3. install from another index (blocked): read network_blocked;
  4. edit a file with a command, as an agent's tool would;
  5. review the change with `diff --json`;
  6. apply the reviewed file back to the project (--review: only if it
     is still what the diff showed);
  7. discard the sandbox.

Standard library only. Exits 0 when every step did what it should, 1 when
one did not (with the reason), 2 on bad arguments.

  agent_example.py [--sandgate BIN] [--project DIR] [--ca-cert FILE]

Defaults come from the environment: SANDGATE (the binary, else `sandgate`
on PATH), SANDGATE_EXAMPLE_PROJECT (a copy of examples/demo-project: the
example changes its app.py), SANDGATE_EXAMPLE_CA (the demo registry's
ca.crt, written by images/demo-registry/start.sh). It needs the proxy
running with the demo-pypi set and the demo registry (scripts/demo.sh or
tests/integration/test_agent_example.sh set both up).
"""
import argparse
import json
import os
import subprocess
import sys

INDEX = "https://pypi.sandgate.test/simple"   # allowlisted by demo-pypi
BLOCKED_INDEX = "https://pypi.blocked.test/simple"  # in no policy set
OLD_TEXT = "sandgate_demo is not installed"
NEW_TEXT = "sandgate_demo is not installed; run: pip install -r requirements.txt"


class Unexpected(Exception):
    """A step did not do what the example expects."""


def check(cond, what):
    if not cond:
        raise Unexpected(what)


class Sandgate:
    """The harness's side: every call is one `sandgate` process."""

    def __init__(self, binary):
        self.binary = binary

    def call(self, *args):
        """Run `sandgate ARGS`; returns (exit code, stdout, stderr)."""
        p = subprocess.run([self.binary, *args], capture_output=True,
                           text=True)
        return p.returncode, p.stdout, p.stderr

    def run_command(self, sandbox, cmd, timeout=None):
        """The agent's run_command: one command, one JSON result.

        Returns the parsed object; its "notices" are sandgate's own
        (the command's stderr, which may print "sandgate: ..." lines of its
        own, is in "stderr").
        """
        args = ["exec", "--json"]
        if timeout is not None:
            args += ["--timeout", str(timeout)]
        rc, out, err = self.call(*args, sandbox, "--", *cmd)
        if rc in (2, 125) and not out.strip():
            # usage error, or sandgate/Docker failed before the command ran
            raise Unexpected("sandgate exec failed (%d): %s" % (rc, err))
        result = json.loads(out)
        check(result["exit_code"] == rc,
              "exit code %d differs from the JSON's %d"
              % (rc, result["exit_code"]))
        return result


def feedback(result):
    """What the harness tells the agent besides stdout/stderr."""
    lines = []
    if result["timed_out"]:
        lines.append("the command hit the time limit: split the work or "
                     "ask for a longer --timeout")
    if result["oom_killed"]:
        lines.append("the command ran out of memory: use less data or "
                     "ask the operator for a larger sandbox")
    if result["pids_limit_hit"]:
        lines.append("the process limit was reached: run fewer "
                     "processes at once")
    for b in result["network_blocked"]:
        lines.append("%s (reason %s, %d attempt(s)). Do not retry through "
                     "another proxy or an IP address; ask an admin to "
                     "allowlist it, with a rationale, if the task needs it"
                     % (b["message"], b["reason"], b["attempts"]))
    if result["output_truncated"]:
        lines.append("output was cut in the middle; the full output is "
                     "in the sandbox's evidence file runs/%s.stdout"
                     % result["run_id"])
    return lines


def step(title):
    print("\n== " + title, flush=True)


def show(result):
    print("   exit_code=%d duration_ms=%d network_blocked=%s"
          % (result["exit_code"], result["duration_ms"],
             [b["destination"] for b in result["network_blocked"]]))
    for line in feedback(result):
        print("   feedback for the agent: " + line)


def session(sg, project, ca_cert):
    step("create a sandbox over %s (may use demo-pypi)" % project)
    rc, out, err = sg.call("create", project, "--allow", "demo-pypi",
                           "--ca-cert", ca_cert)
    check(rc == 0, "create failed (%d): %s" % (rc, err))
    sandbox = out.strip()
    print("   " + sandbox)
    try:
        agent_work(sg, sandbox, project)
    finally:
        step("discard the sandbox")
        rc, _, err = sg.call("discard", sandbox)
        check(rc == 0, "discard failed (%d): %s" % (rc, err))
        print("   discarded")


def agent_work(sg, sandbox, project):
    step("pip install from the allowlisted index")
    r = sg.run_command(sandbox, ["pip", "install", "--index-url", INDEX,
                                 "sandgate-demo"])
    show(r)
    check(r["exit_code"] == 0, "pip install failed: " + r["stderr"][-500:])
    check(r["network_blocked"] == [], "nothing should be blocked")
    check("Successfully installed sandgate-demo" in r["stdout"],
          "pip did not report the install")
    r = sg.run_command(sandbox, ["python3", "app.py"])
    check(r["stdout"].startswith("hello from sandgate-demo"),
          "the installed package does not run: %r" % r["stdout"])
    print("   python3 app.py -> " + r["stdout"].strip())

    step("pip install from an index no policy allows")
    r = sg.run_command(sandbox, ["pip", "install", "--retries", "0",
                                 "--timeout", "5", "--index-url",
                                 BLOCKED_INDEX, "requests"])
    show(r)
    check(r["exit_code"] != 0, "a blocked install must fail")
    blocked = {b["destination"]: b for b in r["network_blocked"]}
    check("pypi.blocked.test:443" in blocked,
          "network_blocked lacks the index: %r" % r["network_blocked"])
    b = blocked["pypi.blocked.test:443"]
    check(b["reason"] == "not_allowlisted", "reason %r" % b["reason"])
    check(b["attempts"] >= 1, "attempts %r" % b["attempts"])
    check(any(n.startswith("network blocked by policy: "
                           "destination pypi.blocked.test:443")
              for n in r["notices"]),
          "no notice in the JSON: %r" % r["notices"])

    step("edit app.py with a command, as an agent's tool would")
    edit = ("import pathlib; p = pathlib.Path('app.py'); "
            "p.write_text(p.read_text().replace(%r, %r))"
            % (OLD_TEXT, NEW_TEXT))
    r = sg.run_command(sandbox, ["python3", "-c", edit])
    show(r)
    check(r["exit_code"] == 0, "the edit failed: " + r["stderr"])

    step("review: sandgate diff --json")
    rc, out, err = sg.call("diff", "--json", sandbox)
    check(rc == 0, "diff failed (%d): %s" % (rc, err))
    d = json.loads(out)
    changed = [f["path"] for f in d["added"] + d["modified"] + d["deleted"]]
    print("   changed: %s" % changed)
    check(changed == ["app.py"], "only app.py should differ: %r" % changed)
    f = d["modified"][0]
    check(not f["risky"] and not f["binary"], "app.py flagged: %r" % f)
    edits = [l for l in f["diff"].splitlines()
             if l[:1] in "+-" and not l.startswith(("+++", "---"))]
    print("   " + "\n   ".join(edits))
    check(any(l.startswith("+") and NEW_TEXT in l for l in edits),
          "the diff does not show the edit: %r" % f["diff"])

    step("apply the reviewed file to the project")
    # --review: only if app.py is still what the diff above showed
    rc, out, err = sg.call("apply", "--review", d["review"], "--path",
                           "app.py", sandbox)
    print("   " + out.strip())
    check(rc == 0 and out.strip() == "applied app.py",
          "apply failed (%d): %s%s" % (rc, out, err))
    with open(os.path.join(project, "app.py"), encoding="utf-8") as fh:
        check(NEW_TEXT in fh.read(), "the project's app.py is unchanged")
    rc, out, _ = sg.call("diff", "--stat", sandbox)
    check(rc == 0 and out.startswith("0 added, 0 modified, 0 deleted"),
          "after apply the sandbox should match the project: %r" % out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sandgate", default=os.environ.get("SANDGATE",
                                                         "sandgate"))
    ap.add_argument("--project",
                    default=os.environ.get("SANDGATE_EXAMPLE_PROJECT"))
    ap.add_argument("--ca-cert", default=os.environ.get("SANDGATE_EXAMPLE_CA"))
    a = ap.parse_args()
    if not a.project or not a.ca_cert:
        ap.error("need --project and --ca-cert (or SANDGATE_EXAMPLE_PROJECT "
                 "and SANDGATE_EXAMPLE_CA)")
    try:
        session(Sandgate(a.sandgate), os.path.abspath(a.project), a.ca_cert)
    except (Unexpected, OSError, ValueError, KeyError) as e:
        print("\nFAILED: %s" % e, file=sys.stderr)
        return 1
    print("\nall steps did what they should")
    return 0


if __name__ == "__main__":
    sys.exit(main())
