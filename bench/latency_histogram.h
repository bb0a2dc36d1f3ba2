// A latency histogram in the manner of HdrHistogram: fixed memory, constant
// time record(), and percentiles within 1/64 (1.6%) of the recorded value.
//
// Values (nanoseconds) below 128 get a bucket each; above, each power of two
// is split into 64 equal buckets. A percentile reports the largest value its
// bucket can hold (never more than the largest value recorded), so it never
// understates a latency. Values past 2^40 ns (18 minutes) land in the last
// bucket.
//
// Thread safety: none; each thread records into its own and the results are
// merged afterwards.
#pragma once

#include <array>
#include <cstdint>

namespace mvkv::bench {

class LatencyHistogram {
  public:
    void record(uint64_t ns) {
        ++counts_[bucketOf(ns)];
        ++count_;
        sum_ += ns;
        if (ns > max_)
            max_ = ns;
        if (ns < min_)
            min_ = ns;
    }
    void merge(const LatencyHistogram& other);
    void reset() { *this = LatencyHistogram(); }

    uint64_t count() const { return count_; }
    uint64_t min() const { return count_ == 0 ? 0 : min_; }
    uint64_t max() const { return max_; }
    double mean() const { return count_ == 0 ? 0 : double(sum_) / double(count_); }
    /// The smallest bucket bound v with at least `percent`% of the values <= v
    /// (0 when empty). percent in [0, 100].
    uint64_t percentile(double percent) const;

    // The bucket layout (public for the tests).
    static constexpr int kExactBelow = 128;  // values below: one bucket each
    static constexpr int kSubBits = 6;       // 64 buckets per power of two above
    static constexpr int kMaxExponent = 40;
    static constexpr int kBuckets = kExactBelow + (kMaxExponent - 7 + 1) * (1 << kSubBits);
    static int bucketOf(uint64_t ns);
    /// The largest value bucket `b` holds.
    static uint64_t bucketHigh(int b);

  private:
    std::array<uint64_t, kBuckets> counts_{};
    uint64_t count_ = 0;
    uint64_t sum_ = 0;
    uint64_t max_ = 0;
    uint64_t min_ = UINT64_MAX;
};

}  // namespace mvkv::bench
