#include "cvs/history/openmetrics.hpp"
#include "cvs/catalog/metric_catalog.hpp"

#include <fmt/format.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <map>
#include <vector>

#include "cvs/base/text.hpp"

namespace cvs::history {
namespace {

std::string label_value(const std::string& v) {
  return escape_chars(v, {{'\\', "\\\\"}, {'"', "\\\""}, {'\n', "\\n"}});
}

std::string stem(const std::string& path) {
  return path.empty() ? "" : std::filesystem::path(path).stem().string();
}

std::string cluster_of(const SessionEntry& e) {
  return e.cluster.find('/') != std::string::npos ? stem(e.cluster) : e.cluster;
}

// Families in the order first seen, each with its HELP, TYPE and samples.
class Families {
 public:
  void add(const std::string& name, const std::string& help, const std::string& labels, double v) {
    if (!std::isfinite(v)) return;
    auto [it, fresh] = index_.emplace(name, order_.size());
    if (fresh) order_.push_back({name, help, {}});
    order_[it->second].samples.push_back(fmt::format("{}{{{}}} {:.17g}", name, labels, v));
  }
  std::string text() const {
    std::string out;
    for (const auto& f : order_) {
      out += "# HELP " + f.name + " " + f.help + "\n# TYPE " + f.name + " gauge\n";
      for (const auto& s : f.samples) out += s + "\n";
    }
    return out + "# EOF\n";
  }

 private:
  struct Family {
    std::string name, help;
    std::vector<std::string> samples;
  };
  std::vector<Family> order_;
  std::map<std::string, std::size_t> index_;
};

double epoch_of(const std::string& iso) {
  std::tm tm{};
  if (!strptime(iso.c_str(), "%Y-%m-%dT%H:%M:%S", &tm)) return NAN;
  return static_cast<double>(timegm(&tm));
}

std::string base64url(const std::string& s) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string o;
  std::size_t i = 0;
  for (; i + 2 < s.size(); i += 3) {
    const unsigned v = (static_cast<unsigned char>(s[i]) << 16) |
                       (static_cast<unsigned char>(s[i + 1]) << 8) | static_cast<unsigned char>(s[i + 2]);
    o += {k[(v >> 18) & 63], k[(v >> 12) & 63], k[(v >> 6) & 63], k[v & 63]};
  }
  if (i + 1 == s.size()) {
    const unsigned v = static_cast<unsigned char>(s[i]) << 16;
    o += {k[(v >> 18) & 63], k[(v >> 12) & 63], '=', '='};
  } else if (i + 2 == s.size()) {
    const unsigned v = (static_cast<unsigned char>(s[i]) << 16) | (static_cast<unsigned char>(s[i + 1]) << 8);
    o += {k[(v >> 18) & 63], k[(v >> 12) & 63], k[(v >> 6) & 63], '='};
  }
  return o.empty() ? "=" : o;
}

}  // namespace

std::pair<std::string, double> prometheus_name(const std::string& metric) {
  if (metric == to_string(Metric::TokensPerSecTotal)) return {"cvs_maxtext_tokens_per_second_all_gpus", 1.0};
  std::string n = metric;
  replace_all(n, "_per_sec", "_per_second");
  double f = 1.0;
  if (n.find("_ms") != std::string::npos) replace_all(n, "_ms", "_seconds"), f = 1e-3;
  if (n.size() > 4 && n.substr(n.size() - 4) == "_pct") n = n.substr(0, n.size() - 4) + "_ratio", f = 0.01;
  if (n.size() > 3 && n.substr(n.size() - 3) == "_gb") n = n.substr(0, n.size() - 3) + "_bytes", f = 1e9;
  return {"cvs_maxtext_" + n, f};
}

std::string openmetrics_text(const SessionEntry& e) {
  const std::string base = fmt::format("suite=\"{}\",config=\"{}\",cluster=\"{}\",session=\"{}\"",
                                       label_value(e.suite), label_value(stem(e.config_file)),
                                       label_value(cluster_of(e)), label_value(e.id.substr(0, 12)));
  Families fam;
  fam.add("cvs_maxtext_session_passed", "1 when the session's status is PASS",
          base + fmt::format(",status=\"{}\"", label_value(to_string(e.status))),
          e.status == Outcome::Pass ? 1.0 : 0.0);
  fam.add("cvs_maxtext_session_start_timestamp_seconds", "when the session started (Unix time)", base,
          epoch_of(e.started_at));
  for (const auto& m : e.metrics) {
    const auto [name, f] = prometheus_name(m.metric);
    const std::string labels = base + ",sweep=\"" + label_value(m.sweep) + "\"";
    const double v = m.estimate ? *m.estimate : m.value.value_or(NAN);
    fam.add(name,
            m.metric + ": the steady-state estimate its verdict used (the point figure where it has none)",
            labels, v * f);
    if (m.lo && m.hi) {
      fam.add(name + "_low", m.metric + ": the low end of its steady-state interval", labels, *m.lo * f);
      fam.add(name + "_high", m.metric + ": the high end of its steady-state interval", labels, *m.hi * f);
    }
    if (m.outcome)
      fam.add("cvs_maxtext_gate", "1 for a gate's outcome",
              labels + ",metric=\"" + label_value(m.metric) + "\",outcome=\"" +
                  label_value(to_string(*m.outcome)) + "\"",
              1.0);
  }
  if (e.kind == "fleet" || e.kind == "certify")
    for (const auto& n : e.node_entries)
      fam.add("cvs_maxtext_node_suspect",
              "1 when fleet mode named the node a suspect or a certification excluded it",
              base + ",node=\"" + label_value(n.node) + "\"", n.suspect ? 1.0 : 0.0);
  if (e.kind == "certify") {
    double certified = 0;
    for (const auto& n : e.node_entries) certified += n.outcome == Outcome::Pass ? 1.0 : 0.0;
    fam.add("cvs_maxtext_certified_nodes", "the nodes a certification certified", base, certified);
  }
  return fam.text();
}

void push_to_gateway(const std::string& url, const SessionEntry& e, const std::string& text) {
  namespace beast = boost::beast;
  namespace http = beast::http;
  using tcp = boost::asio::ip::tcp;
  if (url.rfind("http://", 0) != 0) throw StoreError("--pushgateway " + url + ": only http://host:port URLs");
  std::string rest = url.substr(7), prefix;
  if (const auto slash = rest.find('/'); slash != std::string::npos) {
    prefix = rest.substr(slash);
    rest = rest.substr(0, slash);
  }
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  const auto colon = rest.rfind(':');
  const std::string host = colon == std::string::npos ? rest : rest.substr(0, colon);
  const std::string port = colon == std::string::npos ? "80" : rest.substr(colon + 1);
  const std::string target = prefix + "/metrics/job/cvs_maxtext/suite@base64/" + base64url(e.suite) +
                             "/config@base64/" + base64url(stem(e.config_file)) + "/cluster@base64/" +
                             base64url(cluster_of(e));
  try {
    boost::asio::io_context io;
    tcp::resolver resolver(io);
    beast::tcp_stream stream(io);
    stream.expires_after(std::chrono::seconds(15));
    stream.connect(resolver.resolve(host, port));
    http::request<http::string_body> req{http::verb::put, target, 11};
    req.set(http::field::host, rest);
    req.set(http::field::content_type, "text/plain; version=0.0.4");
    req.body() = text;
    req.prepare_payload();
    http::write(stream, req);
    beast::flat_buffer buf;
    http::response<http::string_body> res;
    http::read(stream, buf, res);
    beast::error_code ec;
    stream.socket().shutdown(tcp::socket::shutdown_both, ec);
    if (res.result_int() / 100 != 2)
      throw StoreError("the Pushgateway at " + url + " answered " + std::to_string(res.result_int()) + ": " +
                       res.body().substr(0, 200));
  } catch (const boost::system::system_error& x) {
    throw StoreError("cannot push to the Pushgateway at " + url + ": " + x.what());
  }
}

}  // namespace cvs::history
