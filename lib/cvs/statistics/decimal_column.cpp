#include "cvs/statistics/decimal_column.hpp"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace cvs {
namespace {

constexpr int kDoubles = 8;

// The fewest bytes (1 to 4) that hold count n below that width's "absent" code (all ones).
int count_width(std::uint64_t n) {
  for (int w = 1; w <= 4; ++w)
    if (n < (std::uint64_t{1} << (8 * w)) - 1) return w;
  return kDoubles;
}

std::uint64_t ones(int width) {
  return width == kDoubles ? ~std::uint64_t{0} : (std::uint64_t{1} << (8 * width)) - 1;
}

}  // namespace

DecimalColumn::DecimalColumn(int decimals) : scale_(std::pow(10.0, decimals)) {
  if (decimals < 0 || decimals > 9) throw std::invalid_argument("DecimalColumn: decimals must be 0..9");
}

std::uint64_t DecimalColumn::absent() const {
  return width_ == kDoubles ? std::bit_cast<std::uint64_t>(std::numeric_limits<double>::quiet_NaN())
                            : ones(width_);
}

void DecimalColumn::store(std::size_t i, std::uint64_t c) {
  auto& chunk = chunks_[i >> kChunkBits];
  unsigned char* p = chunk.data() + (i & (kChunk - 1)) * static_cast<std::size_t>(width_);
  for (int b = 0; b < width_; ++b) p[b] = static_cast<unsigned char>(c >> (8 * b));
}

void DecimalColumn::widen(int width) {
  const int old = width_;
  for (auto& chunk : chunks_) {
    const std::size_t values = chunk.size() / static_cast<std::size_t>(old);
    std::vector<unsigned char> next(values * static_cast<std::size_t>(width));
    for (std::size_t k = 0; k < values; ++k) {
      std::uint64_t c = 0;
      std::memcpy(&c, chunk.data() + k * static_cast<std::size_t>(old), static_cast<std::size_t>(old));
      if (width == kDoubles)
        c = std::bit_cast<std::uint64_t>(c == ones(old) ? std::numeric_limits<double>::quiet_NaN()
                                                        : static_cast<double>(c) / scale_);
      else if (c == ones(old))
        c = ones(width);
      for (int b = 0; b < width; ++b)
        next[k * static_cast<std::size_t>(width) + static_cast<std::size_t>(b)] =
            static_cast<unsigned char>(c >> (8 * b));
    }
    chunk.swap(next);
  }
  width_ = width;
}

void DecimalColumn::push_back(double v) {
  // The last chunk grows by doubling up to kChunk values (a short series costs what it holds).
  const std::size_t in_last = size_ & (kChunk - 1), w = static_cast<std::size_t>(width_);
  if (in_last == 0) {
    chunks_.emplace_back(256 * w);
  } else if (chunks_.back().size() == in_last * w) {
    chunks_.back().resize(std::min(kChunk, 2 * in_last) * w);
  }
  std::uint64_t c;
  if (!std::isfinite(v)) {
    c = absent();
  } else if (width_ == kDoubles) {
    c = std::bit_cast<std::uint64_t>(v);
  } else {
    const double n = std::nearbyint(v * scale_);
    const bool count =
        n >= 0 && n < 4294967295.0 && static_cast<double>(static_cast<std::uint64_t>(n)) / scale_ == v;
    const int need = count ? count_width(static_cast<std::uint64_t>(n)) : kDoubles;
    if (need > width_) widen(need);
    c = width_ == kDoubles ? std::bit_cast<std::uint64_t>(v) : static_cast<std::uint64_t>(n);
  }
  store(size_++, c);
}

std::size_t DecimalColumn::bytes() const {
  std::size_t b = 0;
  for (const auto& c : chunks_) b += c.size();
  return b;
}

// Counts: the count itself. Doubles: the IEEE bits with the sign folded so that unsigned order is
// numeric order (negatives flipped whole, positives with the sign bit set).
std::uint64_t DecimalColumn::sort_key(std::size_t i) const {
  const std::uint64_t c = code(i);
  if (width_ != kDoubles) return c;
  return (c >> 63) ? ~c : c | (std::uint64_t{1} << 63);
}

double DecimalColumn::from_key(std::uint64_t k) const {
  if (width_ != kDoubles) return static_cast<double>(k) / scale_;
  return std::bit_cast<double>((k >> 63) ? k & ~(std::uint64_t{1} << 63) : ~k);
}

void DecimalColumn::count_digits(const std::vector<std::pair<std::size_t, std::size_t>>& ranges, int shift,
                                 bool top, DigitCounts& hist) const {
  const std::uint64_t none = absent();
  for (const auto& [b, e] : ranges)
    for (std::size_t i = b; i < e; ++i) {
      if (code(i) == none) continue;
      const std::uint64_t k = sort_key(i);
      if (width_ == kDoubles && !std::isfinite(from_key(k))) continue;
      const std::uint64_t high = top ? 0 : k >> (shift + 16);
      for (auto& h : hist)
        if (h.first == high) {
          ++h.second[(k >> shift) & 0xFFFF];
          break;
        }
    }
}

std::vector<double> DecimalColumn::order_statistics(
    const std::vector<std::pair<std::size_t, std::size_t>>& ranges,
    const std::vector<std::size_t>& ranks) const {
  const int bits = width_ == kDoubles ? 64 : (width_ <= 2 ? 16 : 32);
  struct Want {
    std::uint64_t prefix = 0;  // the key's digits found so far
    std::size_t rank;          // the rank among the keys that share the prefix
  };
  std::vector<Want> want;
  for (auto r : ranks) want.push_back({0, r});
  for (int shift = bits - 16; shift >= 0; shift -= 16) {
    // One histogram of this digit per distinct prefix (ranks close together share one).
    DigitCounts hist;
    for (const auto& w : want) {
      bool seen = false;
      for (const auto& h : hist) seen |= h.first == w.prefix;
      if (!seen) hist.emplace_back(w.prefix, std::vector<std::size_t>(std::size_t{1} << 16, 0));
    }
    count_digits(ranges, shift, shift + 16 >= bits, hist);
    for (auto& w : want) {
      const std::vector<std::size_t>* h = nullptr;
      for (const auto& x : hist)
        if (x.first == w.prefix) h = &x.second;
      std::size_t digit = 0;
      while (digit < h->size() && w.rank >= (*h)[digit]) w.rank -= (*h)[digit++];
      if (digit == h->size())
        throw std::out_of_range("DecimalColumn::order_statistics: rank beyond the values");
      w.prefix = (w.prefix << 16) | digit;
    }
  }
  std::vector<double> out;
  for (const auto& w : want) out.push_back(from_key(w.prefix));
  return out;
}

}  // namespace cvs
