#!/usr/bin/env python3
"""compile_as.py: compile a probe file as if it were one of a layer's files.

    compile_as.py COMPILE_COMMANDS LAYER_FILE PROBE --compiles
    compile_as.py COMPILE_COMMANDS LAYER_FILE PROBE --fails REGEX

Takes LAYER_FILE's own compile command from the build's
compile_commands.json (its compiler, include path, definitions, warnings),
puts PROBE in its place and the object in a temporary folder, and runs it.
With --compiles the probe must compile; with --fails it must not, and the
compiler's output must match REGEX, so a probe that fails for another
reason (a typo, a missing build) fails the test. Exits 0 when the
expectation holds, 1 when not, 2 on a usage error.
"""
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile


def layer_command(db, layer_file):
    """The argument list that compiles layer_file, and its folder."""
    with open(db, encoding="utf-8") as f:
        entries = json.load(f)
    want = os.path.realpath(layer_file)
    for e in entries:
        path = os.path.join(e["directory"], e["file"])
        if os.path.realpath(path) == want:
            args = e.get("arguments") or shlex.split(e["command"])
            return args, e["directory"]
    sys.exit(f"compile_as: {layer_file} is not in {db}")


def probe_command(args, probe, obj):
    """args with the source replaced by probe and the object by obj."""
    out = []
    i = 0
    while i < len(args):
        if args[i] == "-c" and i + 1 < len(args):
            out += ["-c", probe]
            i += 2
        elif args[i] == "-o" and i + 1 < len(args):
            out += ["-o", obj]
            i += 2
        else:
            out.append(args[i])
            i += 1
    if probe not in out or obj not in out:
        sys.exit("compile_as: no -c SOURCE and -o OBJECT in the command")
    return out


def main():
    if len(sys.argv) < 5 or sys.argv[4] not in ("--compiles", "--fails") or \
            (sys.argv[4] == "--fails") != (len(sys.argv) == 6):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        sys.exit(2)
    db, layer_file, probe, mode = sys.argv[1:5]
    args, cwd = layer_command(db, layer_file)
    with tempfile.TemporaryDirectory() as tmp:
        cmd = probe_command(args, os.path.realpath(probe),
                            os.path.join(tmp, "probe.o"))
        r = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
    what = f"{os.path.basename(probe)} compiled as {layer_file}"
    print(f"$ {shlex.join(cmd)}\n{r.stdout}", end="")
    if mode == "--compiles":
        ok = r.returncode == 0
        print(f"{what}: " + ("compiles, as it should" if ok else
                             "does not compile, but it should"))
    else:
        ok = r.returncode != 0 and re.search(sys.argv[5], r.stdout)
        if r.returncode == 0:
            print(f"{what}: compiles, but the layer rule forbids it")
        elif not ok:
            print(f"{what}: fails, but not with /{sys.argv[5]}/")
        else:
            print(f"{what}: fails, as the layer rule wants")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
