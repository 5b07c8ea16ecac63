# lib.sh: helpers of tests/attacks/run (source it after tests/lib/common.sh
# and sg_setup; needs $SG, $SG_TMP, $SANDGATE_LOG_DIR and $HERE).
#
#   row NAME STATUS SAW RECORD EVIDENCE   one line of the result table
#   verdict NAME COND SAW RECORD EVIDENCE row with STATUS yes when COND (a
#                                         shell test string) holds, NO if not
#   raised NAME COND SAW REC EVID [BUSY]  the same attack with its limit
#                                         raised: COND is "the attack got
#                                         through"; "no (expected)" when it
#                                         did, UNDETECTED when it did not,
#                                         "inconclusive" when it did not and
#                                         BUSY is 1 (the host left no room
#                                         to show it; not a failure)
#   x PREFIX EXEC-ARGS...                 sandgate exec --json EXEC-ARGS:
#                                         $T/PREFIX.json, .err, ${PREFIX}_rc
#   j PREFIX EXPR                         a field of $T/PREFIX.json (o = it)
#   rec PREFIX                            the run record of that exec
#   notice PREFIX [WORDS]                 the "sandgate: " line the agent got
#   sec SANDBOX HOST                      the security event for HOST
#   inproc ID PATTERN                     processes in the sandbox matching
#   sbx_uid ID                            the sandbox's uid (its commands';
#                                         the container's User is the init's)
#   print_table                           the table; exit status 1 if a row
#                                         is NO or UNDETECTED

T=$SG_TMP
ROWS=$T/rows
: >"$ROWS"

row() {
	printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$(printf '%s' "$3" |
	    tr '\n\t' '  ' | cut -c1-110)" "$4" "$(printf '%s' "$5" |
	    tr '\n\t' '  ' | cut -c1-200)" >>"$ROWS"
	printf '  %-44s %s\n' "$1" "$2" >&2
	# a row that fails says why where a log's tail shows it
	case $2 in
	NO | UNDETECTED)
		printf '      saw: %s\n      record: %s\n      evidence: %s\n' \
		    "$3" "$4" "$5" >&2 ;;
	esac
}

verdict() {
	if eval "$2"; then
		row "$1" yes "$3" "$4" "$5"
	else
		row "$1" NO "$3" "$4" "$5"
	fi
}

raised() {
	if eval "$2"; then
		row "$1" "no (expected)" "$3" "$4" "$5"
	elif [ "${6:-0}" = 1 ]; then
		row "$1" inconclusive "$3" "$4" "$5 [the host was too busy for the raised limit to show]"
	else
		row "$1" UNDETECTED "$3" "$4" "$5 [the check passed without the control: it proves nothing]"
	fi
}

# CPU time the whole host has spent busy so far, in ms (from /proc/stat).
host_busy_ms() {
	awk -v hz="$(getconf CLK_TCK)" '/^cpu / {
		print int(($2 + $3 + $4 + $7 + $8 + $9) * 1000 / hz); exit }' /proc/stat
}

sbx_uid() {
	python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get("uid", 1000))' \
	    "$SANDGATE_STATE/sandboxes/$1/meta.json"
}

x() {
	local p=$1 t0=$SECONDS
	shift
	"$SG" exec --json "$@" >"$T/$p.json" 2>"$T/$p.err"
	printf -v "${p}_rc" '%s' "$?"
	[ $((SECONDS - t0)) -ge 4 ] &&
	    printf '    (%s took %d s)\n' "$p" $((SECONDS - t0)) >&2
	return 0
}

j() {
	python3 "$HERE/jf.py" get "$T/$1.json" "$2" 2>/dev/null
}

rec() {
	local run
	run=$(j "$1" 'o["run_id"]')
	python3 "$HERE/jf.py" run "$SANDGATE_RECORD_DIR/runs.jsonl" "$run" ||
	    echo "NO RUN RECORD"
}

# The sandgate: notice (the first one holding WORDS), else the command's
# own last stderr line.
notice() {
	local n
	n=$(grep -m1 -F "sandgate: ${2:-}" "$T/$1.err")
	if [ -z "$n" ]; then
		n=$(j "$1" 'o["stderr"].strip().splitlines()[-1] if o["stderr"].strip() else ""')
	fi
	printf '%s' "${n:-(nothing)}"
}

sec() {
	python3 "$HERE/jf.py" sec "$SANDGATE_LOG_DIR/security-events.jsonl" \
	    "$1" "$2" || echo "no security event"
}

# Matching process lines inside the sandbox (ps through a new exec).
inproc() {
	"$SG" exec "$1" -- ps -eo pid,args 2>/dev/null | grep -E "$2" |
	    grep -v -e 'ps -eo' -e grep
}

# One-line sha256 of files (missing ones as MISSING).
sums() {
	local f
	for f in "$@"; do
		if [ -e "$f" ]; then sha256sum "$f"; else echo "MISSING $f"; fi
	done
}

# VmRSS (KiB) of a process, 0 when gone.
rss_kib() {
	awk '/^VmRSS:/ { print $2; f = 1 } END { if (!f) print 0 }' \
	    "/proc/$1/status" 2>/dev/null || echo 0
}

print_table() {
	python3 - "$ROWS" <<'EOF'
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1], encoding="utf-8")]
head = ["attack", "contained", "what the agent saw", "record", "evidence"]
w = [max(len(r[i]) for r in rows + [head]) for i in range(4)]
fmt = " | ".join("%%-%ds" % x for x in w) + " | %s"
print(fmt % tuple(head))
print("-+-".join("-" * x for x in w) + "-+-" + "-" * 8)
for r in rows:
    print(fmt % tuple(r))
bad = [r[0] for r in rows if r[1] in ("NO", "UNDETECTED")]
print()
busy = [r[0] for r in rows if r[1] == "inconclusive"]
print("%d rows: %d contained, %d shown with the control raised, %d not "
      "contained or undetected%s" % (len(rows),
      sum(r[1] == "yes" for r in rows),
      sum(r[1] == "no (expected)" for r in rows), len(bad),
      (": " + "; ".join(bad)) if bad else ""))
if busy:
    print("inconclusive (the host was too busy to show the raised limit): " +
          "; ".join(busy))
sys.exit(1 if bad else 0)
EOF
}
