#!/usr/bin/env bash
# expect_output.sh <exit status> <regex> <command> [args...]
# Runs the command, shows its output (stdout and stderr together), and passes
# only when the command exits with <exit status> AND its output matches <regex>,
# an extended regular expression over the whole output, newlines included
# (grep -Ez). ctest's PASS_REGULAR_EXPRESSION alone ignores the exit status, so
# a crash after the expected line passed: the bench tests in CMakeLists.txt
# check both through this.
set -u
if [ $# -lt 3 ]; then
  echo "usage: $0 <exit status> <regex> <command> [args...]" >&2
  exit 2
fi
want=$1
regex=$2
shift 2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$@" 2>&1 | tee "$out"
rc=${PIPESTATUS[0]}
ok=1
if [ "$rc" -ne "$want" ]; then
  echo "expect_output: exit status $rc, expected $want" >&2
  ok=0
fi
if ! tr '\0' ' ' <"$out" | grep -Ezq -- "$regex"; then
  echo "expect_output: the output does not match: $regex" >&2
  ok=0
fi
[ "$ok" = 1 ] && echo "expect_output: exit status $rc and the expected output"
[ "$ok" = 1 ]
