#!/bin/sh
# Installs kvcr-mock from a release: picks the archive for this OS and CPU, checks its SHA-256
# against the release's SHA256SUMS, unpacks the binary into PREFIX/bin (default ~/.local/bin).
#   sh install.sh [--from DIR | --url BASE_URL] [--prefix DIR]
# --from DIR reads the release files (archives + SHA256SUMS) from a directory, e.g. dist/release
# after `npm run release`; --url BASE_URL downloads them (curl or wget) from BASE_URL/<file>
# (default: $KVCR_MOCK_RELEASE_URL).
set -eu

from=""
url="${KVCR_MOCK_RELEASE_URL:-}"
prefix="${HOME}/.local"

die() {
  echo "install.sh: $*" >&2
  exit 1
}

while [ $# -gt 0 ]; do
  case "$1" in
    --from) [ $# -ge 2 ] || die "--from needs a directory"; from="$2"; shift 2 ;;
    --url) [ $# -ge 2 ] || die "--url needs a base URL"; url="$2"; shift 2 ;;
    --prefix) [ $# -ge 2 ] || die "--prefix needs a directory"; prefix="$2"; shift 2 ;;
    -h | --help)
      echo "usage: sh install.sh [--from DIR | --url BASE_URL] [--prefix DIR]"
      echo "  --from DIR     the release files (archives + SHA256SUMS) in a directory, e.g. dist/release"
      echo "  --url URL      download them from URL/<file> (default: \$KVCR_MOCK_RELEASE_URL)"
      echo "  --prefix DIR   install into DIR/bin (default: ~/.local)"
      exit 0 ;;
    *) die "unknown argument $1 (try --help)" ;;
  esac
done
[ -n "$from" ] || [ -n "$url" ] || die "say where the release is: --from DIR or --url BASE_URL"

# This machine, in the release's names: <os>-<arch>.
case "$(uname -s)" in
  Linux) os=linux ;;
  Darwin) os=darwin ;;
  MINGW* | MSYS* | CYGWIN*) os=windows ;;
  *) die "no release for OS $(uname -s) (built for Linux, macOS, Windows)" ;;
esac
case "$(uname -m)" in
  x86_64 | amd64) arch=x64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) die "no release for CPU $(uname -m) (built for x86_64 and arm64)" ;;
esac
# Alpine and other musl systems take the musl build (built for x64 only); an x64 CPU without AVX2
# (older ones, some VMs) the baseline build, which the default one would crash on.
if [ "$os" = linux ] && { ls /lib/ld-musl-*.so.1 > /dev/null 2>&1 || ldd --version 2>&1 | grep -qi musl; }; then
  [ "$arch" = x64 ] || die "no release for musl on $arch (built for musl on x86_64 only)"
  arch=x64-musl
elif [ "$os" = linux ] && [ "$arch" = x64 ] && [ -r /proc/cpuinfo ] && ! grep -qw avx2 /proc/cpuinfo; then
  arch=x64-baseline
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

fetch() { # fetch FILE → $tmp/FILE
  if [ -n "$from" ]; then
    [ -f "$from/$1" ] || die "$from/$1 not found"
    cp "$from/$1" "$tmp/$1"
  elif command -v curl > /dev/null 2>&1; then
    curl -fsSL "$url/$1" -o "$tmp/$1" || die "cannot download $url/$1"
  elif command -v wget > /dev/null 2>&1; then
    wget -q "$url/$1" -O "$tmp/$1" || die "cannot download $url/$1"
  else
    die "neither curl nor wget is installed"
  fi
}

fetch SHA256SUMS
archive=$(sed -n "s/^[0-9a-f]\{64\}  \(kvcr-mock-.*-$os-$arch\.tar\.gz\)\$/\1/p" "$tmp/SHA256SUMS" | head -n 1)
[ -n "$archive" ] || die "the release has no archive for $os-$arch"
fetch "$archive"

want=$(grep "  $archive\$" "$tmp/SHA256SUMS" | cut -d ' ' -f 1)
if command -v sha256sum > /dev/null 2>&1; then
  got=$(sha256sum "$tmp/$archive" | cut -d ' ' -f 1)
elif command -v shasum > /dev/null 2>&1; then
  got=$(shasum -a 256 "$tmp/$archive" | cut -d ' ' -f 1)
else
  die "neither sha256sum nor shasum is installed: cannot verify $archive"
fi
[ "$got" = "$want" ] || die "$archive: SHA-256 $got does not match SHA256SUMS ($want); nothing installed"

exe=kvcr-mock
[ "$os" = windows ] && exe=kvcr-mock.exe
tar -xzf "$tmp/$archive" -C "$tmp" "$exe" || die "cannot unpack $archive"
chmod 755 "$tmp/$exe"
# Run before it is put in place: a binary this machine cannot run is not installed.
if [ "$os" = windows ]; then
  version=$archive
else
  version=$("$tmp/$exe" --version 2>&1) || die "$archive does not run on this machine: $version; nothing installed"
fi
mkdir -p "$prefix/bin"
mv "$tmp/$exe" "$prefix/bin/$exe"
echo "installed $version ($os-$arch, SHA-256 verified) at $prefix/bin/$exe"
case ":${PATH}:" in
  *":$prefix/bin:"*) ;;
  *) echo "note: $prefix/bin is not on your PATH" ;;
esac
