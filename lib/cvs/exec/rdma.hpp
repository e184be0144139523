// The check test_setup_rdma runs on every node, from the fabric settings of a distributed config
// (config/fabric_env.hpp).
#pragma once

#include <string>
#include <vector>

#include "cvs/config/config.hpp"
#include "cvs/config/fabric_env.hpp"

namespace cvs {

// The sh program (argv) that checks, on one node: with IB in use (NCCL_IB_HCA set and
// NCCL_IB_DISABLE not 1), /dev/infiniband and every NCCL_IB_HCA entry in `ibv_devices` (a prefix
// matches any device starting with it, an exact name that device; excluded ones need not exist);
// every NCCL_SOCKET_IFNAME entry as an interface (prefix or exact); GLOO_SOCKET_IFNAME exactly.
// It prints one line per problem and exits 1 if there is any.
std::vector<std::string> rdma_check_argv(const EnvList& env);

}  // namespace cvs
