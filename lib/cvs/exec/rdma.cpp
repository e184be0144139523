#include "cvs/exec/rdma.hpp"

#include <sstream>

namespace cvs {

namespace {

const char* mode_word(NcclList::Mode m) {
  return m == NcclList::Mode::Exact ? "exact" : m == NcclList::Mode::Exclude ? "exclude" : "prefix";
}

// The node-side program: $1 ib (0/1), $2 HCA mode, $3 interface mode, $4 gloo interface, then
// the HCA names, "--", the interface names.
constexpr const char* kProgram = R"SH(ib=$1; hmode=$2; imode=$3; gloo=$4; shift 4
hcas=""; while [ $# -gt 0 ] && [ "$1" != "--" ]; do hcas="$hcas $1"; shift; done
[ $# -gt 0 ] && shift
rc=0
have_if() { # exact name, or (prefix mode) any interface starting with it
  if [ "$2" = prefix ]; then for p in /sys/class/net/"$1"*; do [ -e "$p" ] && return 0; done; return 1; fi
  [ -e "/sys/class/net/$1" ]
}
if [ "$imode" != exclude ]; then
  for i in "$@"; do have_if "$i" "$imode" || { echo "interface $i missing (NCCL_SOCKET_IFNAME, $imode)"; rc=1; }; done
fi
if [ -n "$gloo" ]; then have_if "$gloo" exact || { echo "interface $gloo missing (GLOO_SOCKET_IFNAME)"; rc=1; }; fi
if [ "$ib" = 1 ]; then
  [ -d /dev/infiniband ] || { echo '/dev/infiniband missing'; rc=1; }
  devs=$(ibv_devices 2>&1) || { echo "ibv_devices failed: $devs"; exit 1; }
  names=$(echo "$devs" | awk 'NR > 2 && NF { print $1 }')
  if [ "$hmode" != exclude ]; then
    for h in $hcas; do
      found=0
      for d in $names; do
        case "$hmode" in
          exact) [ "$d" = "$h" ] && found=1 ;;
          *) case "$d" in "$h"*) found=1 ;; esac ;;
        esac
      done
      [ $found = 1 ] || { echo "HCA $h not listed by ibv_devices (NCCL_IB_HCA, $hmode)"; rc=1; }
    done
  fi
fi
exit $rc
)SH";

}  // namespace

std::vector<std::string> rdma_check_argv(const EnvList& env) {
  std::string hca, sock, gloo, ib_disable;
  for (const auto& [k, v] : env) {
    if (k == "NCCL_IB_HCA") hca = v;
    if (k == "NCCL_SOCKET_IFNAME") sock = v;
    if (k == "GLOO_SOCKET_IFNAME") gloo = v;
    if (k == "NCCL_IB_DISABLE") ib_disable = v;
  }
  const auto hcas = parse_nccl_list(hca);
  const auto ifs = parse_nccl_list(sock);
  const bool ib = !hcas.names.empty() && ib_disable != "1";
  std::vector<std::string> argv = {
      "sh", "-c", kProgram, "cvs-rdma", ib ? "1" : "0", mode_word(hcas.mode), mode_word(ifs.mode), gloo};
  argv.insert(argv.end(), hcas.names.begin(), hcas.names.end());
  argv.push_back("--");
  argv.insert(argv.end(), ifs.names.begin(), ifs.names.end());
  return argv;
}

}  // namespace cvs
