# Sourced by the black-box shell tests: `check <description> <command...>` runs the
# command as an assertion and prints ok/FAIL; `finish` prints the closing line
# "N passed, M failed" and returns non-zero when any check failed.
failures=0
checks=0
check() {
  local what=$1; shift
  checks=$((checks + 1))
  if "$@"; then echo "ok   $what"; else echo "FAIL $what"; failures=$((failures + 1)); fi
}
finish() {
  echo "$((checks - failures)) passed, $failures failed"
  [ "$failures" -eq 0 ]
}
