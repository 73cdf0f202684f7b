#!/usr/bin/env bash
# `chessrl probe` against a real chessrl-replay (memory store, ports chosen by the
# kernel) and against endpoints where nothing listens.
# Usage: chessrl_probe_test.sh <path to chessrl> <path to chessrl-replay>
set -u
bin=$1
replay=$2
# shellcheck source=check.sh
. "$(dirname "${BASH_SOURCE[0]}")/check.sh"

log=$(mktemp)
"$replay" --store memory --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 2>"$log" &
replay_pid=$!
trap 'kill $replay_pid 2>/dev/null; wait $replay_pid 2>/dev/null; rm -f "$log"' EXIT
for _ in $(seq 100); do grep -q "serving gRPC on port" "$log" && break; sleep 0.1; done
grpc_port=$(sed -n 's/.*serving gRPC on port \([0-9]*\).*/\1/p' "$log")
metrics_port=$(sed -n 's/.*metrics on port \([0-9]*\).*/\1/p' "$log")
check "replay started (gRPC port '$grpc_port', metrics port '$metrics_port')" \
  test -n "$grpc_port" -a -n "$metrics_port"

out=$("$bin" probe --grpc-health "127.0.0.1:$grpc_port" --metrics "http://127.0.0.1:$metrics_port/metrics" \
      --http "http://127.0.0.1:$metrics_port/healthz" --timeout 20 2>&1); rc=$?
check "probe of a serving replay exits 0" test $rc -eq 0
check "gRPC health says SERVING" grep -q "^ok   grpc-health 127.0.0.1:$grpc_port: SERVING" <<<"$out"
check "/metrics answers with chessrl metrics" grep -q "^ok   metrics .*/metrics: HTTP 200" <<<"$out"
check "/healthz answers 200" grep -q "^ok   http .*/healthz: HTTP 200" <<<"$out"
check "closing line counts 3 passed" grep -qx "3 passed, 0 failed" <<<"$out"

out=$("$bin" probe --http "http://127.0.0.1:$metrics_port/no-such-page" --timeout 1 2>&1); rc=$?
check "a 404 fails the probe" test $rc -ne 0
check "the failure names the URL and the status" grep -q "^FAIL http .*/no-such-page: HTTP 404" <<<"$out"

out=$("$bin" probe --metrics "http://127.0.0.1:$metrics_port/healthz" --timeout 1 2>&1); rc=$?
check "a page without chessrl metrics fails --metrics" test $rc -ne 0

kill $replay_pid; wait $replay_pid 2>/dev/null
out=$("$bin" probe --grpc-health "127.0.0.1:$grpc_port" --metrics "http://127.0.0.1:$metrics_port/metrics" \
      --timeout 2 --attempt-timeout 0.5 2>&1); rc=$?
check "probe of a stopped server exits non-zero" test $rc -ne 0
check "both endpoints reported as failed" grep -qx "0 passed, 2 failed" <<<"$out"
check "the gRPC failure names the address" grep -q "^FAIL grpc-health 127.0.0.1:$grpc_port: " <<<"$out"

# TLS (and tokens, which the health service does not need): an openssl-made certificate.
tls=$(mktemp -d)
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
  -subj /CN=chessrl-replay -addext subjectAltName=DNS:chessrl-replay \
  -keyout "$tls/key.pem" -out "$tls/cert.pem" 2>"$tls/openssl.log"
check "openssl made a certificate" test -s "$tls/cert.pem"
mkdir -m 700 "$tls/auth"
for role in selfplay trainer evaluator; do openssl rand -hex 32 >"$tls/auth/$role"; done
"$replay" --store memory --listen 127.0.0.1:0 --metrics-listen off --auth-dir "$tls/auth" \
  --tls-cert "$tls/cert.pem" --tls-key "$tls/key.pem" 2>"$tls/replay.log" &
tls_pid=$!
for _ in $(seq 100); do grep -q "serving gRPC (TLS) on port" "$tls/replay.log" && break; sleep 0.1; done
tls_port=$(sed -n 's/.*serving gRPC (TLS) on port \([0-9]*\).*/\1/p' "$tls/replay.log")
check "a TLS replay started (port '$tls_port')" test -n "$tls_port"
check "it says calls need a token" grep -q "calls need a bearer token (roles with one: selfplay, trainer, evaluator)" "$tls/replay.log"
out=$("$bin" probe --grpc-health "127.0.0.1:$tls_port" --tls-ca "$tls/cert.pem" \
      --tls-server-name chessrl-replay --timeout 20 2>&1); rc=$?
check "probe over TLS trusting the certificate exits 0" test $rc -eq 0
check "and the health service (no token needed) says SERVING" grep -q "^ok   grpc-health 127.0.0.1:$tls_port: SERVING" <<<"$out"
out=$("$bin" probe --grpc-health "127.0.0.1:$tls_port" --timeout 1 --attempt-timeout 0.5 2>&1); rc=$?
check "a plain-text probe of the TLS replay fails" test $rc -ne 0
kill $tls_pid; wait $tls_pid 2>/dev/null
rm -rf "$tls"
out=$("$replay" --store memory --listen 127.0.0.1:0 --metrics-listen off --tls-cert /nonexistent 2>&1); rc=$?
check "--tls-cert without --tls-key is refused" grep -q "go together" <<<"$out"

out=$("$bin" probe --timeout 1 2>&1); rc=$?
check "probe with no endpoint is refused" test $rc -ne 0
check "and says what to give" grep -q -- "--grpc-health, --http or --metrics" <<<"$out"
out=$("$bin" probe --http "ftp://x/y" 2>&1); rc=$?
check "a non-http URL is refused by name" grep -q "'ftp://x/y' is not an http:// URL" <<<"$out"
out=$("$bin" probe --http "http://x:99999/y" 2>&1); rc=$?
check "a bad port is refused by name" grep -q "bad port '99999'" <<<"$out"

finish
