#!/usr/bin/env python3
"""scripts/gpu-run.sh, the one command a GPU machine runs, checked here without a GPU.

    gpu_run_test.py SCRIPT

1. `gpu-run.sh all --dry-run` (GPU mode): exit 0, a preflight line for each thing it
   checks, then the commands of the one build (against the bundle's toolchain, LibTorch
   from python3's torch) and of every stage (bench nn, bench selfplay and bench train on
   cuda, chessrl local --device cuda), each stage on the one build directory; and
   OUT/summary.md begun with the preflight.
2. Without a GPU (a stand-in nvidia-smi that fails, first on PATH): `gpu-run.sh loop`
   stops at the preflight with exit status 1, names the GPU as missing, and builds nothing.
3. A usage error (an unknown stage) exits 2 and names it.
4. The bundle's tarball unpacked without xz (gpu-check-helper.py unpack, what
   gpu-check.sh falls back to): the files arrive, and a member that would land outside
   the folder is refused.
"""

import os
import stat
import subprocess
import sys
import tempfile
import time

failures = []


def check(what, ok):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def run(script, args, out, path_prefix=None):
    env = dict(os.environ, OUT=out)
    if path_prefix:
        env["PATH"] = path_prefix + os.pathsep + env["PATH"]
    start = time.time()
    proc = subprocess.run(["bash", script, *args], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=300)
    print(f"--- gpu-run.sh {' '.join(args)}: exit {proc.returncode}, {time.time() - start:.1f} s")
    print(proc.stdout)
    return proc


def main():
    script = sys.argv[1]
    root = os.path.dirname(os.path.dirname(os.path.abspath(script)))
    build_dir = os.path.join(root, "build", "gpu-full")
    with tempfile.TemporaryDirectory() as tmp:
        # 1. The dry run of everything.
        out = os.path.join(tmp, "dry")
        p = run(script, ["all", "--dry-run"], out)
        text = p.stdout
        check("dry run exits 0", p.returncode == 0)
        for name in ("gpu", "compiler", "cmake", "ninja", "nvcc", "bundle", "disk"):
            check(f"the preflight reports '{name}'", f" {name} " in text)
        check("the build is configured with the bundle's toolchain",
              "--toolchain" in text and "gpu-bundle/toolchain.cmake" in text)
        check("the build takes LibTorch from python3's torch (or TORCH_CMAKE)",
              "-DCMAKE_PREFIX_PATH=" in text)
        check("one build of the services and chessrl",
              "chessrl-replay" in text and "chessrl-trainer" in text and "chessrl-selfplay" in text)
        for what in ("bench nn --device cuda", "bench selfplay --device cuda",
                     "bench train --device cuda", "local --dir", "--device cuda --net 10x128"):
            check(f"a stage runs '{what}'", what in text)
        check("every stage uses the one build directory",
              text.count(f"cmake --build {build_dir}") >= 4)
        check("each of the three stages is announced",
              all(f"stage {i}/3" in text for i in (1, 2, 3)))
        summary = os.path.join(out, "summary.md")
        check("OUT/summary.md begins with the preflight",
              os.path.exists(summary) and "Preflight on" in open(summary).read())

        # 2. No GPU: the preflight stops the run before any build.
        fake = os.path.join(tmp, "bin")
        os.makedirs(fake)
        smi = os.path.join(fake, "nvidia-smi")
        with open(smi, "w") as f:
            f.write("#!/bin/sh\necho 'NVIDIA-SMI has failed (a test stand-in)' >&2\nexit 9\n")
        os.chmod(smi, os.stat(smi).st_mode | stat.S_IEXEC)
        out = os.path.join(tmp, "nogpu")
        p = run(script, ["loop"], out, path_prefix=fake)
        check("without a GPU it exits 1", p.returncode == 1)
        check("it names the missing GPU", "FAIL gpu" in p.stdout and "nvidia-smi lists no GPU" in p.stdout)
        check("it builds nothing", "nothing was built" in p.stdout and "2. build" not in p.stdout)
        summary = os.path.join(out, "summary.md")
        check("its summary marks the GPU missing",
              os.path.exists(summary) and "- gpu: **missing**" in open(summary).read())

        # 3. A usage error.
        p = run(script, ["loops"], os.path.join(tmp, "usage"))
        check("an unknown stage exits 2 and is named",
              p.returncode == 2 and "unknown argument loops" in p.stdout)

        # 4. Unpacking without xz.
        import io
        import tarfile
        helper = os.path.join(root, "scripts", "gpu-check-helper.py")
        tarball = os.path.join(tmp, "gpu-bundle.tar.xz")
        with tarfile.open(tarball, "w:xz") as t:
            for name, text in (("gpu-bundle/toolchain.cmake", b"# toolchain\n"),
                               ("gpu-bundle/usr/bin/redis-server", b"#!/bin/sh\n")):
                info = tarfile.TarInfo(name)
                info.size = len(text)
                t.addfile(info, io.BytesIO(text))
        dest = os.path.join(tmp, "unpacked")
        os.makedirs(dest)
        p = subprocess.run([sys.executable, helper, "unpack", tarball, dest],
                           capture_output=True, text=True, timeout=60)
        check("unpack without xz exits 0", p.returncode == 0)
        check("unpack without xz writes the toolchain file",
              os.path.exists(os.path.join(dest, "gpu-bundle", "toolchain.cmake")))
        evil = os.path.join(tmp, "evil.tar.xz")
        with tarfile.open(evil, "w:xz") as t:
            info = tarfile.TarInfo("../outside.txt")
            info.size = 1
            t.addfile(info, io.BytesIO(b"x"))
        dest = os.path.join(tmp, "unpacked2")
        os.makedirs(dest)
        p = subprocess.run([sys.executable, helper, "unpack", evil, dest],
                           capture_output=True, text=True, timeout=60)
        check("a member outside the folder is refused",
              p.returncode != 0 and not os.path.exists(os.path.join(tmp, "outside.txt")))

    if failures:
        print(f"{len(failures)} check(s) failed")
        sys.exit(1)
    print("every check passed")


if __name__ == "__main__":
    main()
