#!/usr/bin/env bash
# The .deb on a clean Debian root: built by CPack from this build, installed with apt into a
# minbase root debootstrap makes here (no compiler, no source tree, no build tree), then:
#   cvs --help / --version, `cvs config validate` on an installed config, `man cvs` and `man cvs-run`,
#   `cvs setup-venv` (the pinned MaxText CPU venv, from the network as a user's would be), the CPU
#   default end to end (`cvs run jaxmaxtext_single`, no --config: PASS), `dpkg -L` under /usr only,
#   the binaries free of the source and build paths; then `apt-get remove --purge` and none of
#   the package's files left. Lintian on the .deb: clean.
#
#   deb_install_test.sh SOURCE_DIR BUILD_DIR WORK_DIR
#
# Needs root (debootstrap, chroot, mounts in a private mount namespace that vanish with it), the
# Debian archive (CVS_DEBIAN_MIRROR, default the host's deb.debian.org) and PyPI. MaxText needs
# Python >= 3.12 and Debian 12 has 3.11: the root gets the interpreter tools/setup-venv would pick
# on this host (pyenv's, copied at its own path, its libraries' packages installed by apt), as a
# user brings their own. Exit 77 (skip) when not root or debootstrap is missing.
set -euo pipefail
src=$(cd "$1" && pwd); build=$(cd "$2" && pwd); work=$3
[[ $(id -u) -eq 0 ]] || { echo "needs root (debootstrap, chroot)"; exit 77; }
command -v debootstrap >/dev/null || { echo "debootstrap not installed (tools/setup installs it)"; exit 77; }
suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
mirror=${CVS_DEBIAN_MIRROR:-http://deb.debian.org/debian}
step() { printf '[deb-install] %s\n' "$*"; }
fail() { echo "FAIL: $*" >&2; exit 1; }

rm -rf "$work"; mkdir -p "$work/pkg"
step "cpack -G DEB"
(cd "$build" && cpack -G DEB -B "$work/pkg" >"$work/cpack.log" 2>&1) || { cat "$work/cpack.log"; fail "cpack"; }
deb=$(ls "$work"/pkg/cvs-maxtext_*_amd64.deb)
step "$(basename "$deb"): Depends: $(dpkg-deb -f "$deb" Depends)"
for t in chromium slurm-wlm slurmd postgresql prometheus googletest libgtest libgmock shellcheck clang-format; do
  dpkg-deb -f "$deb" Depends | tr ',|' '\n\n' | sed 's/^ *//; s/ .*//' | grep -qx "$t" && fail "Depends names the test-only package $t"
done
# HIP is opened at run time by cvs-gpu-probe: no node pays for it (libllvm, comgr, ICU: ~255 MB).
# No placeholder in the control fields (a made-up Homepage or Maintainer address).
! dpkg-deb -f "$deb" Maintainer Homepage | grep -qiE 'example\.(org|com)|localhost' || fail "a placeholder in the control fields: $(dpkg-deb -f "$deb" Maintainer Homepage)"
dpkg-deb -f "$deb" Depends | grep -qiE 'hip|llvm|comgr' && fail "Depends names a HIP library: $(dpkg-deb -f "$deb" Depends)"
if command -v lintian >/dev/null; then
  tags=$(lintian --tag-display-limit 0 "$deb" 2>&1 | grep -v 'running with root privileges' || true)
  [[ -z "$tags" ]] || { echo "$tags"; fail "lintian"; }
  step "lintian: clean"
fi

py=$("$src/tools/setup-venv" --print-python 2>/dev/null) || fail "no Python >= 3.12 on this host to bring into the root"
pyhome=$(cd "$(dirname "$py")/.." && pwd -P)
root="$work/root"
step "debootstrap --variant=minbase $suite ($mirror)"
debootstrap --variant=minbase "$suite" "$root" "$mirror" >"$work/debootstrap.log" 2>&1 ||
  { tail -20 "$work/debootstrap.log"; fail "debootstrap"; }
cp "$deb" "$root/tmp/"
cp /etc/resolv.conf "$root/etc/resolv.conf"
mkdir -p "$root$pyhome" && cp -a "$pyhome/." "$root$pyhome/"
# This network's CA bundle (a proxy that re-signs TLS) travels as the user's own would be set up.
ca_env=()
if [[ -n "${PIP_CERT:-${SSL_CERT_FILE:-}}" && -f "${PIP_CERT:-$SSL_CERT_FILE}" ]]; then
  cp "${PIP_CERT:-$SSL_CERT_FILE}" "$root/etc/cvs-test-ca.crt"
  ca_env=(PIP_CERT=/etc/cvs-test-ca.crt SSL_CERT_FILE=/etc/cvs-test-ca.crt REQUESTS_CA_BUNDLE=/etc/cvs-test-ca.crt)
fi
# The packages of the libraries the interpreter's modules link (as a user's Python would need).
pydeps=$(find "$pyhome" -name '*.so*' -type f -exec ldd {} + 2>/dev/null | awk '/=> \//{print $3}' | sort -u |
  { xargs -r dpkg -S 2>/dev/null || true; } | cut -d: -f1 | sort -u | tr '\n' ' ')

cat >"$root/tmp/inside.sh" <<INSIDE
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
step() { printf '[deb-install:root] %s\n' "\$*"; }
fail() { echo "FAIL (in the root): \$*" >&2; exit 1; }
step "apt-get install ./$(basename "$deb") (and man-db for the check; the interpreter's libraries)"
apt-get update -q >/dev/null
apt-get install -y -q --no-install-recommends man-db $pydeps >/tmp/apt-test.log 2>&1 || { tail -20 /tmp/apt-test.log; fail "apt (test tools)"; }
dpkg-query -W -f='\${Package}\n' > /tmp/before.txt
apt-get install -y -q --no-install-recommends /tmp/$(basename "$deb") >/tmp/apt.log 2>&1 || { tail -20 /tmp/apt.log; fail "apt install the .deb"; }
! command -v c++ >/dev/null && ! command -v gcc >/dev/null || fail "a compiler is in the root"
[[ ! -e "$src" && ! -e "$build" ]] || fail "the source or build tree is visible in the root"
cvs --help | grep -q 'setup-venv' || fail "cvs --help"
cvs --version | grep -q '^cvs (cvs-maxtext) ' || fail "cvs --version"
cvs config validate /usr/share/cvs-maxtext/configs/cpu_jaxmaxtext_tiny_single.json || fail "cvs config validate"
cvs config validate cpu_jaxmaxtext_tiny_single || fail "cvs config validate NAME (a name cvs config list prints)"
cvs-gpu-probe --help | head -1 | grep -q '^cvs-gpu-probe' || fail "cvs-gpu-probe --help calls it otherwise"
man -P cat cvs-gpu-probe 2>/dev/null | grep -q 'cvs-gpu-probe' || fail "man cvs-gpu-probe"
! man -P cat cvs-gpu-probe 2>/dev/null | grep -qw 'gpu_probe' || fail "man cvs-gpu-probe says gpu_probe"
cvs config list | grep -q cpu_jaxmaxtext_tiny_single.json || fail "cvs config list"
man -P cat cvs 2>/dev/null | grep -q 'setup-venv' || fail "man cvs"
man -P cat cvs-run 2>/dev/null | grep -q -- '--config' || fail "man cvs-run"
for page in /usr/share/man/man1/cvs*.1.gz; do  # help2man writes ??? for what it could not render
  ! zcat "\$page" | grep -qF '???' || fail "\$page: help2man lost a character: \$(zcat "\$page" | grep -F '???' | head -1)"
done
dpkg -L cvs-maxtext > /tmp/files.txt
grep -v '^/usr' /tmp/files.txt | grep -v '^/\.\$' && fail "dpkg -L lists a file outside /usr"
grep -E '$src|$build' /tmp/files.txt && fail "dpkg -L lists a path of the source or build tree"
for b in /usr/bin/cvs /usr/bin/cvs-gpu-probe /usr/libexec/cvs-maxtext/jaxmaxtext_*; do
  ! grep -a -q -F '$src' "\$b" || fail "\$b holds the source path $src"
done
step "cvs setup-venv --python $py"
cvs setup-venv --python "$py" > /tmp/venv.log 2>&1 || { tail -20 /tmp/venv.log; fail "cvs setup-venv"; }
test -x /root/.local/share/cvs-maxtext/venv/bin/python3 || fail "the venv is not where the default says"
step "cvs run jaxmaxtext_single (the CPU default, installed config)"
mkdir -p /root/work && cd /root/work
rc=0; cvs run jaxmaxtext_single --output /root/work/report > /tmp/run.log 2>&1 || rc=\$?
tail -5 /tmp/run.log
[[ \$rc -eq 0 ]] || { tail -40 /tmp/run.log; fail "cvs run jaxmaxtext_single exited \$rc"; }
grep -q '"status": *"PASS"' /root/work/report/results.json || fail "results.json: status is not PASS"
step "apt-get remove --purge cvs-maxtext"
apt-get remove --purge -y -q cvs-maxtext >/tmp/purge.log 2>&1 || { cat /tmp/purge.log; fail "purge"; }
left=\$(while read -r f; do if [[ -f "\$f" || -L "\$f" ]]; then echo "\$f"; fi; done < /tmp/files.txt)
[[ -z "\$left" ]] || fail "left after the purge: \$left"
for d in /usr/share/cvs-maxtext /usr/libexec/cvs-maxtext /usr/share/doc/cvs-maxtext; do [[ ! -e \$d ]] || fail "\$d left"; done
dpkg-query -W cvs-maxtext >/dev/null 2>&1 && fail "dpkg still knows cvs-maxtext"
step "purged: none of its \$(wc -l < /tmp/files.txt) paths left"
# What apt installed for it stays, marked automatic, until autoremove (docs/install.md says so).
dpkg-query -W -f='\${Package}\n' > /tmp/after-purge.txt
kept=\$(comm -13 <(sort /tmp/before.txt) <(sort /tmp/after-purge.txt) | wc -l)
apt-get autoremove --purge -y -q >/tmp/autoremove.log 2>&1 || { cat /tmp/autoremove.log; fail "autoremove"; }
dpkg-query -W -f='\${Package}\n' | sort | cmp -s - <(sort /tmp/before.txt) || fail "apt-get autoremove --purge left packages the .deb brought: \$(comm -13 <(sort /tmp/before.txt) <(dpkg-query -W -f='\${Package}\n' | sort) | head)"
step "the \$kept package(s) apt installed for it: gone with apt-get autoremove --purge"
INSIDE

step "in the root (private mount namespace: /proc, /dev, /sys vanish with it)"
unshare --mount --fork sh -c "
  mount -t proc proc '$root/proc' && mount --rbind /dev '$root/dev' && mount --rbind /sys '$root/sys' &&
  mount -t tmpfs tmpfs '$root/dev/shm' &&
  exec chroot '$root' /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    LANG=C.UTF-8 ${ca_env[*]} /bin/bash /tmp/inside.sh"
rm -rf "$root"  # ~3 GB with the venv; a failing run keeps it for a look
step "PASS"
