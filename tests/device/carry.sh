#!/bin/bash
# Packs what tests/device/gpu_check.sh needs on the GPU machine (it reaches no package registry)
# into .devcarry/ (ignored; named in the device call's carry, ~62 MiB of the 64 MiB allowed):
#   devb.tar.xz  jaxmaxtext_single and cvs from build/, stripped, with every library they load and
#                Debian's loader (run there as $L/ld-linux-x86-64.so.2 --library-path $L BIN)
#   proj.tar.xz  the project at HEAD less tests/ and docs/ (CVS_ROOT there)
#   whl/         MaxText and what its trainer imports that the machine's image lacks, at the versions
#                of tools/requirements-maxtext-cpu.lock (facts: ../shared/device/README.md: the
#                image's jax 0.11.2 has the CUDA plugin; flax/optax/orbax travel because the lock's
#                flax does not import on the image's own; pydantic needs typing_extensions >= 4.16)
# Usage: tests/device/carry.sh   (after the build; a Python >= 3.12 with pip downloads the wheels)
set -euo pipefail
cd "$(dirname "$0")/../.."
out=.devcarry
rm -rf "$out" && mkdir -p "$out/whl"
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
mkdir -p "$t/devb/bin" "$t/devb/lib"
for b in build/suites/jaxmaxtext_single build/tools/cvs/cvs; do
  strip -o "$t/devb/bin/$(basename "$b")" "$b"
  ldd "$b" | awk '/=>/ {print $3}' | xargs -I{} cp -L {} "$t/devb/lib/"
done
cp -L /lib64/ld-linux-x86-64.so.2 "$t/devb/lib/"
tar cJf "$out/devb.tar.xz" -C "$t" devb
git archive --format=tar --prefix=proj/ HEAD | tar xf - -C "$t"
rm -rf "$t/proj/tests" "$t/proj/docs"
tar cJf "$out/proj.tar.xz" -C "$t" proj
lock=tools/requirements-maxtext-cpu.lock
pin() { grep -i "^$1==" "$lock" | head -n 1; }
wheels=(typing_extensions==4.16.0)
for p in maxtext flax optax orbax-checkpoint tensorstore pathwaysutils fastapi starlette uvicorn opentelemetry-api \
  pydantic pydantic_core typing-inspection annotated-types omegaconf aqtp qwix tokamax immutabledict einshape \
  typeguard grain portpicker array_record drjax ml_collections; do
  w=$(pin "$p") || { echo "carry.sh: $p is not in $lock" >&2; exit 2; }
  wheels+=("$w")
done
py=.venv/bin/python3
"$py" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64 \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux1_x86_64 \
  -d "$out/whl" "${wheels[@]}"
du -sh "$out"
