// The fabric settings of a distributed config and the check test_setup_rdma runs on every node.
//
// NCCL reads NCCL_IB_HCA and NCCL_SOCKET_IFNAME as lists with three forms: "mlx5" (prefixes: any
// device whose name starts so), "=mlx5_0,mlx5_1" (exact names) and "^mlx5_3" (exclude these, use
// the rest); an HCA entry may carry ":port". Gloo's GLOO_SOCKET_IFNAME is one interface name.
#pragma once

#include <string>
#include <vector>

#include "cvs/config/config.hpp"

namespace cvs {

struct NcclList {
  enum class Mode { Prefix, Exact, Exclude };
  Mode mode = Mode::Prefix;
  std::vector<std::string> names;  // ":port" suffixes dropped
};
NcclList parse_nccl_list(const std::string& value);

// Why a GLOO_SOCKET_IFNAME value is not exactly one interface name ("" when it is).
std::string gloo_ifname_problem(const std::string& value);

// The sh program (argv) that checks, on one node: with IB in use (NCCL_IB_HCA set and
// NCCL_IB_DISABLE not 1), /dev/infiniband and every NCCL_IB_HCA entry in `ibv_devices` (a prefix
// matches any device starting with it, an exact name that device; excluded ones need not exist);
// every NCCL_SOCKET_IFNAME entry as an interface (prefix or exact); GLOO_SOCKET_IFNAME exactly.
// It prints one line per problem and exits 1 if there is any.
std::vector<std::string> rdma_check_argv(const EnvList& env);

}  // namespace cvs
