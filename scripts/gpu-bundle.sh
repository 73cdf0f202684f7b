#!/usr/bin/env bash
# The services' dependencies as one relocatable folder, for a machine that has a
# compiler, CMake, ninja and LibTorch but none of the libraries the services need
# and no package registry (a GPU machine's bare Ubuntu 24.04 image).
#
#   scripts/gpu-bundle.sh [--out DIR] [--no-tar]
#
# Downloads Debian 12's binary packages (apt-get download, with apt lists of its
# own, so no root is needed), unpacks them into DIR (default build/gpu-bundle),
# keeps what building and running the services takes (headers, CMake and
# pkg-config files, shared libraries, protoc, grpc_cpp_plugin, redis-server),
# makes every library and program find its neighbours through $ORIGIN (patchelf),
# rewrites absolute paths so that the folder can move, and writes
#   DIR/toolchain.cmake   cmake --toolchain DIR/toolchain.cmake: build against DIR
#   DIR/MANIFEST.txt      each package, its version and its size here
#   DIR.tar.xz            the folder packed, to carry to another machine
# It prints the bundle's size, which must stay well under what a device call can
# carry (64 MiB, the source tree included). docs/benchmarks.md ("The dependency
# bundle") says what comes from the bundle, what from the host, and why that mix is safe.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out="$here/build/gpu-bundle"
tar=1
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$(realpath -m "$2"); shift 2 ;;
    --no-tar) tar=0; shift ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu-bundle: unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done
for tool in apt-get dpkg-deb patchelf xz file; do
  command -v "$tool" >/dev/null ||
    { echo "gpu-bundle: needs $tool (Debian: scripts/install-deps.sh deps/apt-images.txt installs it)" >&2; exit 1; }
done
start=$SECONDS
say() { printf 'gpu-bundle [%3ds] %s\n' $((SECONDS - start)) "$*"; }

# What the services link and run, as Debian 12 packages. glibc, the C++ runtime
# (libstdc++6, libgcc-s1, libatomic1), libsystemd0 and LibTorch come from the host.
dev=(libgrpc++-dev libgrpc-dev libprotobuf-dev libabsl-dev libre2-dev libc-ares-dev
     libssl-dev zlib1g-dev libhiredis-dev libcivetweb-dev libyaml-cpp-dev
     prometheus-cpp-dev libcli11-dev nlohmann-json3-dev)
runtime=(libgrpc++1.51 libgrpc29 libprotobuf32 libprotobuf-lite32 libprotoc32
         libabsl20220623 libre2-9 libc-ares2 libssl3 zlib1g libhiredis0.14
         libcivetweb1 libyaml-cpp0.7 libprometheus-cpp-core1.0
         libprometheus-cpp-pull1.0 libprometheus-cpp-push1.0)
# protoc, the gRPC plugin, pkg-config (pkgconf), and redis-server with the two
# libraries Debian builds it with (jemalloc, LZF).
tools=(protobuf-compiler protobuf-compiler-grpc pkgconf-bin libpkgconf3
       redis-tools redis-server libjemalloc2 liblzf1)
packages=("${dev[@]}" "${runtime[@]}" "${tools[@]}")

work="$out.work"
rm -rf "$work" "$out" "$out.tar.xz"
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/debs" "$out"
apt_opts=(-o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache"
          -o "Debug::NoLocking=1" -o "APT::Sandbox::User=$(id -un)")
say "apt lists of its own (apt-get update) ..."
apt-get "${apt_opts[@]}" -q update >"$work/apt-update.log" 2>&1 ||
  { cat "$work/apt-update.log" >&2; echo "gpu-bundle: apt-get update failed" >&2; exit 1; }
say "downloading ${#packages[@]} packages ..."
(cd "$work/debs" && apt-get "${apt_opts[@]}" -q download "${packages[@]}" >"$work/download.log" 2>&1) ||
  { cat "$work/download.log" >&2; echo "gpu-bundle: apt-get download failed" >&2; exit 1; }

say "unpacking ..."
: >"$out/MANIFEST.txt"
for deb in "$work"/debs/*.deb; do
  dpkg-deb -x "$deb" "$out"
  dpkg-deb -f "$deb" Package Version Installed-Size |
    paste -sd' ' | awk '{printf "%-28s %-28s %6d KiB unpacked\n", $2, $4, $6}' >>"$out/MANIFEST.txt"
done
# Debian 12 is merged-/usr: what a package puts under /lib lives under /usr/lib.
if [ -d "$out/lib" ]; then
  cp -a "$out/lib/." "$out/usr/lib/" && rm -rf "$out/lib"
fi
# Only what a build and a run read.
rm -rf "$out"/usr/share/{doc,man,lintian,bug,bash-completion,info} "$out"/etc "$out"/var \
       "$out"/usr/lib/systemd "$out"/usr/sbin "$out"/usr/lib/tmpfiles.d "$out"/usr/lib/sysusers.d
find "$out" -name '*.a' -delete
# (the other languages' gRPC plugins stay: gRPC's CMake package checks that they exist)
rm -f "$out"/usr/bin/redis-{benchmark,check-aof}
lib="$out/usr/lib/x86_64-linux-gnu"

say "making it relocatable ..."
# Absolute symbolic links (libz.so -> /lib/x86_64-linux-gnu/libz.so.1.2.13) point
# into the bundle instead; one that points outside it is an error.
while IFS= read -r link; do
  target=$(readlink "$link")
  case "$target" in /*) ;; *) continue ;; esac
  case "$target" in /lib/*|/bin/*|/sbin/*) target=/usr$target ;; esac   # merged /usr
  inside="$out$target"
  [ -e "$inside" ] || { echo "gpu-bundle: $link points outside the bundle ($target)" >&2; exit 1; }
  ln -sfn "$(realpath --relative-to="$(dirname "$link")" "$inside")" "$link"
done < <(find "$out" -type l)
# pkg-config files: their prefix is the bundle, wherever it lies.
for pc in "$lib"/pkgconfig/*.pc "$out"/usr/share/pkgconfig/*.pc; do
  [ -f "$pc" ] || continue
  rel=$(realpath --relative-to="$(dirname "$pc")" "$out/usr")
  sed -i -e "s|^prefix=/usr\$|prefix=\${pcfiledir}/$rel|" -e "s|=/usr/|=\${pcfiledir}/$rel/|" "$pc"
done
# prometheus-cpp: chess-rl links only its core. Its CMake package would otherwise
# look for the pull and push parts' dependencies (civetweb's CMake package and
# program, libcurl), which nothing here links.
sed -i -e 's/^set(PROMETHEUS_CPP_ENABLE_PULL ON)/set(PROMETHEUS_CPP_ENABLE_PULL OFF)/' \
       -e 's/^set(PROMETHEUS_CPP_ENABLE_PUSH ON)/set(PROMETHEUS_CPP_ENABLE_PUSH OFF)/' \
       "$lib/cmake/prometheus-cpp/prometheus-cpp-config.cmake"
# hiredis's CMake package (chess-rl uses its pkg-config file) hints at /usr.
sed -i -e 's|HINTS "/usr/include"|HINTS "${CMAKE_CURRENT_LIST_DIR}/../../../../include"|' \
       -e 's|HINTS "/usr/lib"|HINTS "${CMAKE_CURRENT_LIST_DIR}/.."|' \
       "$lib/cmake/Hiredis/HiredisConfig.cmake"
# No CMake or pkg-config file may still name the system's /usr/lib or /usr/include.
if grep -rlE '"/usr/(lib|include)|[ =;]/usr/(lib|include)' "$lib/cmake" "$lib/pkgconfig" \
     "$out/usr/share/cmake" "$out/usr/share/pkgconfig" 2>/dev/null |
   xargs -r grep -LE '_realOrig|Use original install prefix' >"$work/absolute.txt" &&
   [ -s "$work/absolute.txt" ]; then
  echo "gpu-bundle: files that still name /usr:" >&2; cat "$work/absolute.txt" >&2; exit 1
fi
# Each library finds the others beside it, each program the libraries under
# ../lib: $ORIGIN, so nothing needs LD_LIBRARY_PATH.
n=0
while IFS= read -r f; do
  [ -L "$f" ] && continue
  case "$(file -b "$f")" in
    ELF*shared\ object*) ;;
    ELF*executable*) ;;
    *) continue ;;
  esac
  case "$f" in
    "$lib"/*) patchelf --set-rpath '$ORIGIN' "$f" ;;
    *) patchelf --set-rpath '$ORIGIN/../lib/x86_64-linux-gnu' "$f" ;;
  esac
  n=$((n + 1))
done < <(find "$lib" "$out/usr/bin" -maxdepth 1 -type f)
say "set \$ORIGIN search paths on $n programs and libraries"

cat >"$out/toolchain.cmake" <<'EOF'
# Written by scripts/gpu-bundle.sh. Builds chess-rl against this folder:
#   cmake -S . -B build/X --toolchain <this folder>/toolchain.cmake \
#         -DCMAKE_PREFIX_PATH=<LibTorch's share/cmake>
# The folder is searched before the system for every package the services use.
get_filename_component(CHESSRL_BUNDLE "${CMAKE_CURRENT_LIST_DIR}" ABSOLUTE)
list(PREPEND CMAKE_PREFIX_PATH "${CHESSRL_BUNDLE}/usr")
list(REMOVE_DUPLICATES CMAKE_PREFIX_PATH)
set(Protobuf_PROTOC_EXECUTABLE "${CHESSRL_BUNDLE}/usr/bin/protoc" CACHE FILEPATH "protoc (bundle)")
set(CHESSRL_GRPC_CPP_PLUGIN "${CHESSRL_BUNDLE}/usr/bin/grpc_cpp_plugin" CACHE FILEPATH "grpc_cpp_plugin (bundle)")
set(PKG_CONFIG_EXECUTABLE "${CHESSRL_BUNDLE}/usr/bin/pkgconf" CACHE FILEPATH "pkg-config (bundle)")
set(CHESSRL_BUNDLE_DIR "${CHESSRL_BUNDLE}" CACHE PATH "The dependency bundle this build uses")
# The programs' run path as DT_RPATH, which the loader also uses for the libraries
# they load, not DT_RUNPATH, which it uses for the program's own needs only: so a
# library the bundle holds is loaded from the bundle whoever asks for it, LibTorch
# too, and a process never holds two copies of one soname.
set(CMAKE_EXE_LINKER_FLAGS_INIT "-Wl,--disable-new-dtags")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "-Wl,--disable-new-dtags")
EOF

# Check: every program and library of the bundle resolves each library it needs,
# from the bundle or the host's base system.
missing=$(find "$lib" "$out/usr/bin" -maxdepth 1 -type f -exec sh -c \
  'file -b "$1" | grep -q ^ELF && ldd "$1" 2>/dev/null | sed -n "s/^\t*\([^ ]*\) => not found/\1/p"' _ {} \; |
  sort -u | tr '\n' ' ')
# libcurl (prometheus-cpp's push part) is the one library no chess-rl program loads.
missing=$(echo "$missing" | tr ' ' '\n' | grep -v '^libcurl\.so\.4$' | tr '\n' ' ' | sed 's/ *$//')
[ -z "$missing" ] || { echo "gpu-bundle: unresolved libraries: $missing" >&2; exit 1; }
"$out/usr/bin/protoc" --version >/dev/null
"$out/usr/bin/redis-server" --version >/dev/null

size=$(du -sm "$out" | cut -f1)
if [ "$tar" = 1 ]; then
  say "packing $out.tar.xz ..."
  tar -C "$(dirname "$out")" -cf - "$(basename "$out")" | xz -T0 -6 >"$out.tar.xz"
  packed=$(( $(stat -c %s "$out.tar.xz") / 1024 / 1024 ))
  packed_line="$out.tar.xz: $packed MiB"
fi
rm -rf "$work"
say "done: $(wc -l <"$out/MANIFEST.txt") packages, $size MiB unpacked${packed_line:+; $packed_line}"
echo "  build with: cmake -S . -B build/bundle --toolchain $out/toolchain.cmake -DCMAKE_PREFIX_PATH=<LibTorch>"
