#!/bin/sh
# review.sh STAGE: put in the working copy what breaks a review, its
# output, or the host when it is brought out (tests/attacks/rows-review.sh
# runs the stages one after the other and looks after each):
#   names   Latin-1 content, a name with a newline and terminal escapes,
#           escapes in content, 0666 and 0777 modes, 3,000 small files
#   sparse  9 KiB of text then a hole to 900 MiB (inside --disk 1g), and
#           a 3 GiB file (past it)
#   deep    a file under 1,100 folders
#   long    a file whose path is 4.4 KiB long
#   alike   names drawn like src/app.py (U+2215, U+FF0F), a folder SRC
#           beside src, a CI workflow under .GitHub, a Cyrillic letter in
#           setup.py; confusables.txt's U+27CB, U+31D3, U+4E3F for '/' and
#           U+0660, U+06F0 for '.'
cd /workspace || exit 1
exec python3 - "$1" <<'PY'
import os, sys
stage = sys.argv[1]
if stage == "names":
    open("latin1.txt", "wb").write(b"caf\xe9 cr\xe8me br\xfbl\xe9e\n")
    open("x\n\x1b[2KD README.md  (deleted: harmless)", "w").write("forged\n")
    open("esc.txt", "wb").write(b"ok\n\x1b[2K\x1b[1A+print('fake')\n")
    for name, mode in (("ww.txt", 0o666), ("wx.sh", 0o777)):
        open(name, "w").write(name + "\n")
        os.chmod(name, mode)
    os.mkdir("many")
    for i in range(3000):
        open("many/%04d.txt" % i, "w").write("file %d\n" % i)
elif stage == "alike":
    for n in ("src\u2215app.py", "src\uff0fapp.py", "SRC/app.py",
              ".GitHub/workflows/x.yml", "s\u0435tup.py",
              "src\u27cbapp.py", "src\u31d3app.py", "src\u4e3fapp.py",
              "setup\u0660py", "setup\u06f0py"):
        os.makedirs(os.path.dirname(n) or ".", exist_ok=True)
        open(n, "w").write('import os; os.system("id")\n')
elif stage == "sparse":
    with open("half.txt", "wb") as f:
        f.write(b"line of text\n" * 700)
        f.truncate(900 << 20)
    with open("over.bin", "wb") as f:
        f.truncate(3 << 30)
elif stage == "deep":
    for i in range(1100):
        os.mkdir("d")
        os.chdir("d")
    open("deep.txt", "w").write("at the bottom\n")
elif stage == "long":
    parts = ["p%03d" % i + "x" * 196 for i in range(22)]
    for c in parts:		# one level at a time: past PATH_MAX
        os.mkdir(c)
        os.chdir(c)
    open("long.txt", "w").write("long path\n")
    print("a %d-byte path" % len("/".join(parts) + "/long.txt"))
else:
    sys.exit("review.sh: no stage " + stage)
print("planted:", stage)
PY
