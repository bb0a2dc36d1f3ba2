// The latency histogram (latency_histogram.h).
#include "latency_histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace mvkv::bench {

int LatencyHistogram::bucketOf(uint64_t ns) {
    if (ns < uint64_t{kExactBelow})
        return static_cast<int>(ns);
    int exponent = std::bit_width(ns) - 1;  // >= 7
    if (exponent > kMaxExponent)
        return kBuckets - 1;
    int sub = static_cast<int>((ns >> (exponent - kSubBits)) & ((1u << kSubBits) - 1));
    return kExactBelow + (exponent - 7) * (1 << kSubBits) + sub;
}

uint64_t LatencyHistogram::bucketHigh(int b) {
    if (b < kExactBelow)
        return static_cast<uint64_t>(b);
    int exponent = 7 + (b - kExactBelow) / (1 << kSubBits);
    uint64_t sub = static_cast<uint64_t>((b - kExactBelow) % (1 << kSubBits));
    uint64_t width = uint64_t{1} << (exponent - kSubBits);
    return (uint64_t{1} << exponent) + (sub + 1) * width - 1;
}

void LatencyHistogram::merge(const LatencyHistogram& other) {
    for (int b = 0; b < kBuckets; ++b)
        counts_[static_cast<size_t>(b)] += other.counts_[static_cast<size_t>(b)];
    count_ += other.count_;
    sum_ += other.sum_;
    max_ = std::max(max_, other.max_);
    min_ = std::min(min_, other.min_);
}

uint64_t LatencyHistogram::percentile(double percent) const {
    if (count_ == 0)
        return 0;
    percent = std::clamp(percent, 0.0, 100.0);
    // The rank of the value asked for, 1-based: at least 1, at most count.
    // (less a hair, so that 99.9% of 1000 is rank 999 despite rounding)
    auto rank = static_cast<uint64_t>(std::ceil(percent / 100.0 * double(count_) - 1e-9));
    rank = std::clamp<uint64_t>(rank, 1, count_);
    uint64_t seen = 0;
    for (int b = 0; b < kBuckets; ++b) {
        seen += counts_[static_cast<size_t>(b)];
        if (seen >= rank) {
            // The last bucket also holds everything past the range.
            return b == kBuckets - 1 ? max_ : std::min(bucketHigh(b), max_);
        }
    }
    return max_;
}

}  // namespace mvkv::bench
