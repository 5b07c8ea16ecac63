#!/usr/bin/env bash
# test_cli.sh: the command line of every sandgate command and subcommand
# (controller/cmd.c), on the real binary ($SANDGATE_BIN/sandgate). No Docker:
# DOCKER_HOST points at a socket that does not exist and the state folder is
# empty, so nothing here can reach a container.
#
# The contract under test is docs/controller.md ("The command line"):
# - a bad option is one message and exit 2, for every command and verb;
# - an id that is malformed or names no sandbox exits 125 with one
#   "no sandbox" message, for every command that takes an id;
# - `--help` exits 0 and shows the summary that `sandgate --help` (or the
#   command's list of subcommands) shows, whole;
# - `proxy stop` does not need the policy folder.

set -u
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
sg_setup
export DOCKER_HOST=unix:///nonexistent.sock

# Every command, then every subcommand as COMMAND/VERB[/VERB].
COMMANDS="create exec diff apply export discard list gc run doctor policy pending grant revoke grants
    audit proxy secret image"
VERBS="policy/check policy/explain policy/list policy/diff policy/suggest
    audit/list audit/summary audit/verify audit/tail audit/export audit/key
    audit/key/create audit/key/rotate audit/key/show
    proxy/start proxy/stop proxy/status proxy/reload proxy/logs
    proxy/rotate-ca proxy/token secret/set secret/list secret/rm
    image/build image/status"
HAS_VERBS="policy audit audit/key proxy secret image"
BAD_ID=sbx_nope
GONE_ID=sbx_000000000000000000000000

# The "  NAME  SUMMARY" lines under HEADER in the text on stdin.
listing() {
	awk -v h="$1" '$0 == h { on = 1; next } on && /^$/ { exit }
	    on { print }'
}

# The lines of stderr that are messages, not the usage that follows them.
messages() {
	printf '%s\n' "$1" | grep -v -e '^usage: ' -e '^ ' -e '^$'
}

# ------------------------------------------------- what the binary declares

sg_run r "$SG" --help
assert_eq "sandgate --help exits 0" 0 "$r_rc"
TOP=$(printf '%s\n' "$r_out" | listing "commands:")
declared=$(printf '%s\n' "$TOP" | awk '{ print $1 }' | sort | tr '\n' ' ')
assert_eq "every command is walked here" \
    "$(printf '%s\n' $COMMANDS | sort | tr '\n' ' ')" "$declared"
long=$(printf '%s\n' "$TOP" | awk 'length > 79')
assert_eq "sandgate --help lines fit 79 columns" "" "$long"

# "a/b/c" -> "a b c"
words() {
	printf '%s' "$1" | tr '/' ' '
}

for c in $HAS_VERBS; do
	got=$("$SG" $(words "$c") --help | listing "subcommands:" |
	    awk '{ print $1 }' | sort | tr '\n' ' ')
	want=$(printf '%s\n' $VERBS | awk -v c="$c/" \
	    'index($0, c) == 1 && index(substr($0, length(c) + 1), "/") == 0 {
	    print substr($0, length(c) + 1) }' | sort | tr '\n' ' ')
	assert_eq "$(words "$c"): every subcommand is walked here" "$want" "$got"
done

# ------------------------------------------------------------------- --help

# check_help "WORDS" SUMMARY: WORDS --help shows SUMMARY as a paragraph.
check_help() {
	local words=$1 summary=$2 next
	sg_run h "$SG" $words --help
	assert_eq "$words --help exits 0" 0 "$h_rc"
	assert_eq "$words --help: nothing on stderr" "" "$h_err"
	assert_eq "$words --help: usage line" "usage: sandgate $words" \
	    "$(printf '%s\n' "$h_out" | head -n1 | cut -c1-$((16 + ${#words})))"
	if [ -z "$summary" ]; then
		fail "$words --help: summary" "no summary listed"
		return
	fi
	# the line after the summary: blank or the end, never its second half
	next=$(printf '%s\n' "$h_out" | awk -v s="$summary" \
	    'found { print "[" $0 "]"; exit } $0 == s { found = 1 }
	    END { if (!found) print "missing" }')
	case "$next" in
	""|"[]") ok "$words --help: whole summary" ;;
	*) fail "$words --help: whole summary" "'$summary' then $next" ;;
	esac
}

for c in $COMMANDS; do
	s=$(printf '%s\n' "$TOP" | awk -v c="$c" '$1 == c { sub(/^ *[^ ]+ +/, ""); print }')
	check_help "$c" "$s"
done
for v in $VERBS; do
	s=$("$SG" $(words "${v%/*}") --help | listing "subcommands:" |
	    awk -v c="${v##*/}" '$1 == c { sub(/^ *[^ ]+ +/, ""); print }')
	check_help "$(words "$v")" "$s"
done

# --------------------------------------------------------------- bad options

# check_bad "WORDS" ARGS...: one message naming the option, exit 2.
check_bad() {
	local words=$1 msgs
	shift
	sg_run b "$SG" $words "$@"
	assert_eq "$words $*: exit 2" 2 "$b_rc"
	msgs=$(messages "$b_err")
	assert_eq "$words $*: one message" \
	    "sandgate: unknown option '${BADOPT}'" "$msgs"
	assert_contains "$words $*: usage follows" "$b_err" \
	    "usage: sandgate $words"
}

for BADOPT in --no-such-option -Z; do
	for c in $COMMANDS; do
		case $c in
		exec) check_bad "$c" "$BADOPT" "$GONE_ID" -- true ;;
		run) check_bad "$c" "$BADOPT" -- true ;;
		*) check_bad "$c" "$BADOPT" ;;
		esac
	done
	for v in $VERBS; do
		check_bad "$(words "$v")" "$BADOPT"
	done
done

# A value missing is one message too.
sg_run r "$SG" audit tail -n
assert_eq "audit tail -n: exit 2" 2 "$r_rc"
assert_eq "audit tail -n: one message" "sandgate: option '-n' needs a value" \
    "$(messages "$r_err")"
# A verb's option given to another verb: one message naming both.
sg_run r "$SG" policy list --sets pypi
assert_eq "policy list --sets: exit 2" 2 "$r_rc"
assert_eq "policy list --sets: one message" \
    "sandgate: 'policy list' takes no --sets" "$(messages "$r_err")"

# ------------------------------------------------------------- unknown ids

# check_id ID WORDS...: WORDS (with ID in it) exits 125, one message.
check_id() {
	local id=$1
	shift
	sg_run u "$SG" "$@"
	assert_eq "$*: exit 125" 125 "$u_rc"
	assert_eq "$*: one message" "sandgate: no sandbox '$id'" \
	    "$(messages "$u_err")"
}

for id in "$BAD_ID" "$GONE_ID"; do
	check_id "$id" diff "$id"
	check_id "$id" diff --stat "$id"
	check_id "$id" apply --all "$id"
	check_id "$id" export --output "$SG_TMP/x.zip" "$id"
	check_id "$id" exec "$id" -- true
done
# discard succeeds for a sandbox already gone; a malformed id is refused
# before anything is removed, like everywhere else.
check_id "$BAD_ID" discard "$BAD_ID"
check_id "$BAD_ID" discard "$GONE_ID" "$BAD_ID"
[ ! -e "$SG_TMP/x.zip" ] && ok "no zip for an unknown id" ||
    fail "no zip for an unknown id"

# Usage errors come before the id is looked up.
sg_run r "$SG" export "$BAD_ID"
assert_eq "export without --output: exit 2" 2 "$r_rc"
assert_eq "export without --output: one message" \
    "sandgate: --output is required" "$(messages "$r_err")"
sg_run r "$SG" exec "$BAD_ID"
assert_eq "exec without a command: exit 2" 2 "$r_rc"

# -------------------------------------------------------------- proxy stop

sg_run r env SANDGATE_POLICY_DIR="$SG_TMP/no-policy" "$SG" proxy stop
assert_eq "proxy stop without a policy folder: Docker error" 125 "$r_rc"
assert_contains "proxy stop reaches for Docker" "$r_err" \
    "cannot reach Docker at unix:///nonexistent.sock"
assert_not_contains "proxy stop does not read the policy folder" "$r_err" \
    "policy folder"

sg_summary
