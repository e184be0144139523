#!/bin/bash
# Packs what tests/device/h200_check.sh runs on the device machine: gpu_probe and jaxmaxtext_single
# from build/, stripped, with every library they load and Debian's loader, into
# .devbundle/devb.tar.xz (ignored; named in the device call's carry).
set -euo pipefail
cd "$(dirname "$0")/../.."
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
mkdir -p "$t/devb/bin" "$t/devb/lib" .devbundle
for b in build/tools/gpu_probe/gpu_probe build/suites/jaxmaxtext_single; do
  strip -o "$t/devb/bin/$(basename "$b")" "$b"
  ldd "$b" | awk '/=>/ {print $3}' | xargs -I{} cp -L {} "$t/devb/lib/"
done
cp -L /lib64/ld-linux-x86-64.so.2 "$t/devb/lib/"
tar cJf .devbundle/devb.tar.xz -C "$t" devb
ls -la .devbundle/devb.tar.xz
