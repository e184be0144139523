// The fabric settings of a distributed config, as NCCL and Gloo read them.
//
// NCCL reads NCCL_IB_HCA and NCCL_SOCKET_IFNAME as lists with three forms: "mlx5" (prefixes: any
// device whose name starts so), "=mlx5_0,mlx5_1" (exact names) and "^mlx5_3" (exclude these, use
// the rest); an HCA entry may carry ":port". Gloo's GLOO_SOCKET_IFNAME is one interface name.
#pragma once

#include <string>
#include <vector>

namespace cvs {

struct NcclList {
  enum class Mode { Prefix, Exact, Exclude };
  Mode mode = Mode::Prefix;
  std::vector<std::string> names;  // ":port" suffixes dropped
};
NcclList parse_nccl_list(const std::string& value);

// Why a GLOO_SOCKET_IFNAME value is not exactly one interface name ("" when it is).
std::string gloo_ifname_problem(const std::string& value);

}  // namespace cvs
