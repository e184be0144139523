#include "cvs/config/fabric_env.hpp"

#include <sstream>

namespace cvs {

NcclList parse_nccl_list(const std::string& value) {
  NcclList l;
  std::string v = value;
  if (!v.empty() && v[0] == '^') {
    l.mode = NcclList::Mode::Exclude;
    v.erase(0, 1);
  } else if (!v.empty() && v[0] == '=') {
    l.mode = NcclList::Mode::Exact;
    v.erase(0, 1);
  }
  std::stringstream ss(v);
  for (std::string item; std::getline(ss, item, ',');) {
    if (auto c = item.find(':'); c != std::string::npos) item.erase(c);  // "mlx5_0:1" -> "mlx5_0"
    if (!item.empty()) l.names.push_back(item);
  }
  return l;
}

std::string gloo_ifname_problem(const std::string& value) {
  if (value.empty()) return "it is empty";
  if (value[0] == '^' || value[0] == '=')
    return "'" + value + "' uses NCCL's list syntax (" + value.substr(0, 1) +
           "); Gloo takes one interface name";
  if (value.find(',') != std::string::npos) return "'" + value + "' names several interfaces; Gloo binds one";
  return "";
}

}  // namespace cvs
