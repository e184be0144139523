#include "cvs/logs/gpu_sample.hpp"

#include <cctype>
#include <cmath>

#include "cvs/base/text.hpp"

namespace cvs {

std::string normalize_bus_id(std::string_view pci) {
  // [domain:]bus:device[.function]; nvidia-smi writes an 8-digit domain, the others 4.
  pci = trim(pci);
  if (const auto dot = pci.rfind('.'); dot != std::string_view::npos) pci = pci.substr(0, dot);
  const auto last = pci.rfind(':');
  if (last == std::string_view::npos || last == 0) return {};
  const auto before = pci.rfind(':', last - 1);
  const std::size_t bus_at = before == std::string_view::npos ? 0 : before + 1;
  const std::string_view bus = pci.substr(bus_at, last - bus_at), dev = pci.substr(last + 1);
  std::string_view domain =
      before == std::string_view::npos ? std::string_view("0000") : pci.substr(0, before);
  while (domain.size() > 4 && domain.front() == '0') domain.remove_prefix(1);
  if (bus.empty() || dev.empty() || bus.size() > 2 || dev.size() > 2 || domain.empty() || domain.size() > 4)
    return {};
  std::string out = std::string(4 - domain.size(), '0') + std::string(domain) + ":" +
                    std::string(2 - bus.size(), '0') + std::string(bus) + ":" +
                    std::string(2 - dev.size(), '0') + std::string(dev);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (out.find_first_not_of("0123456789abcdef:") != std::string::npos) return {};
  return out;
}

std::optional<double> pcie_gen_of_rate(double gts) {
  static constexpr std::pair<double, double> kGens[] = {{2.5, 1}, {5, 2}, {8, 3}, {16, 4}, {32, 5}, {64, 6}};
  for (const auto& [rate, gen] : kGens)
    if (std::fabs(gts - rate) < 0.3) return gen;
  return std::nullopt;
}

}  // namespace cvs
