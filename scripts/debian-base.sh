#!/usr/bin/env bash
# Makes a local equivalent of debian:bookworm-slim with debootstrap, for machines
# that cannot pull from Docker Hub: a minbase root file system, slimmed as the
# official image is (no docs, man pages, locales, apt lists or cached .debs, and
# dpkg told not to install them later), imported and tagged as IMAGE.
#   scripts/debian-base.sh [ENGINE] [IMAGE]     (defaults: podman debian:bookworm-slim)
set -euo pipefail
engine=${1:-podman}
image=${2:-debian:bookworm-slim}
suite=bookworm
sources=/etc/apt/sources.list.d/debian.sources
mirror=$(awk '/^URIs:/ { print $2; exit }' "$sources" 2>/dev/null || true)
mirror=${mirror:-http://deb.debian.org/debian}

root=$(mktemp -d /var/tmp/chessrl-base.XXXXXX)
trap 'rm -rf "$root"' EXIT
echo "debian-base: debootstrap --variant=minbase $suite $mirror (about 2 minutes)"
debootstrap --variant=minbase "$suite" "$root" "$mirror" >"$root.log" 2>&1 \
  || { tail -20 "$root.log" >&2; exit 1; }
rm -f "$root.log"

echo "debian-base: slimming"
# What the official slim image's dpkg excludes (debuerreotype's slimify).
cat >"$root/etc/dpkg/dpkg.cfg.d/docker" <<'CFG'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
path-exclude /usr/share/man/*
CFG
find "$root/usr/share/doc" -mindepth 1 -not -type d -not -name copyright -delete
find "$root/usr/share/doc" -mindepth 1 -type d -empty -delete
find "$root/usr/share/locale" -mindepth 1 -maxdepth 1 -not -name locale.alias -exec rm -rf {} +
rm -rf "$root"/usr/share/{groff,info,linda,lintian,man}/*
# apt as in the official image: no cached .debs, no translations, gzipped lists.
cat >"$root/etc/apt/apt.conf.d/docker-clean" <<'CFG'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
CFG
echo 'Acquire::Languages "none";' >"$root/etc/apt/apt.conf.d/docker-no-languages"
printf 'Acquire::GzipIndexes "true";\nAcquire::CompressionTypes::Order:: "gz";\n' \
  >"$root/etc/apt/apt.conf.d/docker-gzip-indexes"
printf 'Apt::AutoRemove::SuggestsImportant "false";\n' >"$root/etc/apt/apt.conf.d/docker-autoremove-suggests"
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d" && chmod 755 "$root/usr/sbin/policy-rc.d"
# The same suites as this host (bookworm, -updates, -security), in deb822 form.
if [ -f "$sources" ]; then
  rm -f "$root/etc/apt/sources.list"
  grep -v '^#' "$sources" >"$root/etc/apt/sources.list.d/debian.sources"
fi
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/* "$root"/var/cache/debconf/*-old \
  "$root"/var/lib/dpkg/*-old "$root"/var/log/* "$root"/tmp/* "$root"/root/.bash_history
: >"$root/etc/resolv.conf"
: >"$root/etc/hostname"

echo "debian-base: importing as $image"
tar --numeric-owner -C "$root" -c . | "$engine" import --change 'CMD ["bash"]' - "$image" >/dev/null
# Short names resolve to docker.io/library/... : tag that too so FROM finds it locally.
case "$image" in
  */*) ;;
  *) "$engine" tag "$image" "docker.io/library/$image" ;;
esac
"$engine" image ls "$image"
