// A long series of numbers kept in as few bytes as give each back exactly. MaxText prints its step
// figures with 3 decimals ("seconds: 0.038, ... Tokens/s/device: 13641.692"), so a value is an
// integer count of thousandths: 0.038 is kept as 38 in one byte, 13641.692 as 13641692 in three.
// A value that is not such a count (a full-precision metrics_file figure, a negative number) turns
// the whole column into plain doubles: the column is always exact, compact when it can be.
//
// The values live in fixed-size chunks, so growing never copies the series (a vector's doubling
// holds old and new buffers at once). The metrics of a multi-GB log keep one column per step
// figure instead of one StepRecord per step (step_stats.hpp: TimedSeries).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

namespace cvs {

class DecimalColumn {
 public:
  explicit DecimalColumn(int decimals = 3);

  // Appends v. A non-finite v (or an absent figure, passed as NaN) reads back as NaN.
  void push_back(double v);
  double operator[](std::size_t i) const {
    const std::uint64_t c = code(i);
    if (width_ == 8) return std::bit_cast<double>(c);
    if (c == (std::uint64_t{1} << (8 * width_)) - 1) return std::numeric_limits<double>::quiet_NaN();
    return static_cast<double>(c) / scale_;
  }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // Bytes per value: 1 to 4 for counts of 10^-decimals, 8 once the column holds plain doubles.
  int width() const { return width_; }
  // The stored code of value i: its count of 10^-decimals (or absent()), or the double's bits at
  // width 8. Counts are in the values' order.
  std::uint64_t code(std::size_t i) const {
    const unsigned char* p =
        chunks_[i >> kChunkBits].data() + (i & (kChunk - 1)) * static_cast<std::size_t>(width_);
    switch (width_) {
      case 1:
        return p[0];
      case 2: {
        std::uint16_t v;
        std::memcpy(&v, p, 2);
        return v;
      }
      case 3:
        return std::uint64_t{p[0]} | std::uint64_t{p[1]} << 8 | std::uint64_t{p[2]} << 16;
      case 4: {
        std::uint32_t v;
        std::memcpy(&v, p, 4);
        return v;
      }
      default: {
        std::uint64_t v;
        std::memcpy(&v, p, 8);
        return v;
      }
    }
  }
  std::uint64_t absent() const;  // the code that stands for NaN at the current width
  double decode(std::uint64_t count) const { return static_cast<double>(count) / scale_; }  // counts only
  // Bytes held by the values (what the column costs in memory).
  std::size_t bytes() const;

  // The k-th smallest values (0-based ranks) among the finite values at the indices in `ranges`
  // (half-open [begin, end) index ranges, in order), without copying or reordering the column:
  // a radix selection over the stored codes, 16 bits per pass (one or two passes for counts,
  // four for plain doubles). Every rank must be below the number of values selected.
  std::vector<double> order_statistics(const std::vector<std::pair<std::size_t, std::size_t>>& ranges,
                                       const std::vector<std::size_t>& ranks) const;

 private:
  // order_statistics' pass over one 16-bit digit: per prefix found so far, its digits' counts.
  using DigitCounts = std::vector<std::pair<std::uint64_t, std::vector<std::size_t>>>;
  void count_digits(const std::vector<std::pair<std::size_t, std::size_t>>& ranges, int shift, bool top,
                    DigitCounts& hist) const;
  static constexpr std::size_t kChunkBits = 16;
  static constexpr std::size_t kChunk = std::size_t{1} << kChunkBits;

  void store(std::size_t i, std::uint64_t c);
  void widen(int width);  // re-encodes every chunk at a new width (counts only) or as doubles
  std::uint64_t sort_key(std::size_t i) const;  // order-preserving key of a finite value
  double from_key(std::uint64_t k) const;

  double scale_;   // 10^decimals
  int width_ = 1;  // bytes per value; 8: plain doubles
  std::size_t size_ = 0;
  std::vector<std::vector<unsigned char>> chunks_;
};

}  // namespace cvs
