#!/usr/bin/env python3
"""Build the demo package's wheel (sandgate_demo) on the spot.

A wheel is a zip with the module and a .dist-info folder (PEP 427); this
writes one without setuptools so that the demo needs nothing but python3.

    make_wheel.py OUTDIR  ->  OUTDIR/sandgate_demo-0.1.0-py3-none-any.whl
"""
import base64
import hashlib
import os
import sys
import zipfile

NAME, VERSION = "sandgate_demo", "0.1.0"
FILES = {
    f"{NAME}/__init__.py": (
        '"""A package served by the sandgate demo registry."""\n'
        "__version__ = \"0.1.0\"\n\n\n"
        "def hello():\n"
        "    return \"hello from sandgate-demo, installed through the "
        "egress proxy\"\n"),
    f"{NAME}-{VERSION}.dist-info/METADATA": (
        "Metadata-Version: 2.1\n"
        "Name: sandgate-demo\n"
        f"Version: {VERSION}\n"
        "Summary: Demo package for sandgate's local registry\n"),
    f"{NAME}-{VERSION}.dist-info/WHEEL": (
        "Wheel-Version: 1.0\n"
        "Generator: sandgate make_wheel.py\n"
        "Root-Is-Purelib: true\n"
        "Tag: py3-none-any\n"),
}


def record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest())
    return f"{path},sha256={digest.rstrip(b'=').decode()},{len(data)}\n"


def main():
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    wheel = os.path.join(outdir, f"{NAME}-{VERSION}-py3-none-any.whl")
    record_path = f"{NAME}-{VERSION}.dist-info/RECORD"
    record = ""
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as z:
        for path, text in FILES.items():
            data = text.encode()
            z.writestr(path, data)
            record += record_line(path, data)
        record += f"{record_path},,\n"
        z.writestr(record_path, record)
    print(wheel)


if __name__ == "__main__":
    main()
