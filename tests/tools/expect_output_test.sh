#!/usr/bin/env bash
# expect_output.sh's own test: it passes only on the expected exit status AND
# the expected output; a crash after the expected line fails it.
cd "$(dirname "$0")"
. ./check.sh
passes() { ./expect_output.sh "$@" >/dev/null 2>&1; }
fails() { ! passes "$@"; }
check "exit 0 and the lines across newlines: passes" passes 0 'first.*second' sh -c 'echo first; echo second'
check "a crash after the expected line: fails" fails 0 'first' sh -c 'echo first; kill -SEGV $$'
check "a nonzero exit after the expected line: fails" fails 0 'first' sh -c 'echo first; exit 3'
check "the expected nonzero exit and line: passes" passes 1 'FAILED: x' sh -c 'echo "FAILED: x"; exit 1'
check "an expected failure that exits 0: fails" fails 1 'FAILED' sh -c 'echo FAILED'
check "the line missing: fails" fails 0 'second' sh -c 'echo first'
check "stderr counts as output: passes" passes 0 'warned' sh -c 'echo warned >&2'
finish
