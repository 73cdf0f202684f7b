#!/usr/bin/env python3
"""Checks that no process shows a run's secrets on its command line.

Usage: scripts/secrets-in-cmdlines.py RUN_DIR [--for SECONDS]

The secrets are the contents of every file of RUN_DIR that holds one: the Redis
password (redis/password) and every file under auth/ and secrets/ (tokens,
keys), each as a whole and line by line (lines of 8 characters or more). Every
/proc/PID/cmdline (what `ps -eo args` shows) is searched for them, once or
repeatedly for SECONDS. Prints what it searched and each hit with the secret
masked (never a secret itself); exit status 1 when a command line holds one,
2 when RUN_DIR has no secret to look for.
"""
import argparse
import os
import sys
import time

SECRET_FILES = ["redis/password"]
SECRET_DIRS = ["auth", "secrets"]
MIN_LENGTH = 8


def secret_files(run_dir):
    files = [os.path.join(run_dir, f) for f in SECRET_FILES]
    for d in SECRET_DIRS:
        for root, _, names in os.walk(os.path.join(run_dir, d)):
            files.extend(os.path.join(root, n) for n in sorted(names))
    return [f for f in files if os.path.isfile(f)]


def secrets_of(path):
    with open(path, "rb") as f:
        data = f.read()
    found = {data.rstrip(b"\r\n")}
    found.update(line.strip() for line in data.splitlines())
    return {s for s in found if len(s) >= MIN_LENGTH}


def cmdlines():
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                yield int(pid), f.read().replace(b"\0", b" ").strip()
        except OSError:  # gone, or not ours to read
            continue


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir")
    parser.add_argument("--for", dest="seconds", type=float, default=0,
                        help="keep scanning this long (default: one pass)")
    args = parser.parse_args()
    files = secret_files(args.run_dir)
    secrets = {}  # secret -> the file it came from
    for f in files:
        for s in secrets_of(f):
            secrets.setdefault(s, os.path.relpath(f, args.run_dir))
    if not secrets:
        print(f"no secret files under {args.run_dir} ({', '.join(SECRET_FILES + SECRET_DIRS)})")
        return 2
    print("secrets from: " + ", ".join(os.path.relpath(f, args.run_dir) for f in files))
    hits = {}  # (pid, masked cmdline) -> file
    scans, processes = 0, set()
    deadline = time.monotonic() + args.seconds
    while True:
        for pid, line in cmdlines():
            if pid == os.getpid():
                continue
            processes.add(pid)
            for secret, source in secrets.items():
                if secret in line:
                    masked = line.replace(secret, b"<" + source.encode() + b">")
                    hits[(pid, masked.decode(errors="replace"))] = source
        scans += 1
        if time.monotonic() >= deadline:
            break
        time.sleep(0.05)
    print(f"scanned {scans} time(s), {len(processes)} processes")
    for (pid, line), source in sorted(hits.items()):
        print(f"HOLDS {source}: pid {pid}: {line}")
    print("FAIL: a command line holds a secret" if hits else "ok: no command line holds a secret")
    return 1 if hits else 0


if __name__ == "__main__":
    sys.exit(main())
