// Keys, values and random choices of mvkv-bench's storage workloads.
//
// Every engine is given the same keys in the same order, derived from an
// index: key(i) is big-endian (2 * i) in 8 bytes, padded with zero bytes to
// the key size. So keys sort as their indexes do (fillseq writes in key
// order), and missingKey(i) = big-endian (2 * i + 1) falls between key(i)
// and key(i + 1): a lookup that misses lands in the same leaf a hit would.
//
// Random choices come from a per-thread splitmix64 generator seeded from
// --seed, the workload and the thread index, so two engines see the same
// sequence of keys (up to how many operations each manages in the time).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mvkv::bench {

uint64_t splitmix64(uint64_t x);

/// A per-thread generator of 64-bit random numbers (splitmix64's sequence).
class Rng {
  public:
    explicit Rng(uint64_t seed) : state_(seed) {}
    uint64_t next() { return splitmix64(state_++); }
    /// Uniform in [0, n) by multiply-shift (no division; bias below 2^-32 for n < 2^32).
    uint64_t below(uint64_t n) {
        __extension__ using U128 = unsigned __int128;
        return static_cast<uint64_t>((U128{next()} * n) >> 64);
    }
    /// Uniform in [0, 1).
    double unit() { return double(next() >> 11) * 0x1.0p-53; }

  private:
    uint64_t state_;
};

/// The seed of thread `thread` of workload `workload` under --seed `seed`.
uint64_t threadSeed(uint64_t seed, std::string_view workload, int thread);

class KeyFormat {
  public:
    static constexpr size_t kMinKeySize = 8;
    explicit KeyFormat(size_t keySize) : keySize_(keySize < kMinKeySize ? kMinKeySize : keySize) {}
    size_t size() const { return keySize_; }
    /// Writes key(i) into out (size() bytes).
    void make(char* out, uint64_t index) const { encode(out, index << 1); }
    /// A key that is never loaded, ordered between key(i) and key(i + 1).
    void makeMissing(char* out, uint64_t index) const { encode(out, (index << 1) | 1); }
    std::string key(uint64_t index) const;
    /// The index of a key made by make() (the inverse, for checks).
    static uint64_t indexOf(std::string_view key);

  private:
    void encode(char* out, uint64_t v) const;
    size_t keySize_;
};

/// Values: `size` bytes of a fixed printable pattern whose first 8 bytes
/// carry a stamp (big-endian), so readers can check what they got.
class ValueFormat {
  public:
    explicit ValueFormat(size_t size);
    size_t size() const { return pattern_.size(); }
    /// The pattern with `stamp` in its first 8 bytes (or as many as fit).
    void make(std::string& out, uint64_t stamp) const;
    /// The stamp of a value made by make(); 0 for a value shorter than 8 bytes.
    static uint64_t stampOf(std::string_view value);

  private:
    std::string pattern_;
};

/// YCSB's zipfian generator (Gray et al., "Quickly generating billion-record
/// synthetic databases"): ranks in [0, n) with P(rank r) ~ 1 / (r + 1)^theta.
/// Construction costs O(n) (the zeta sum); next() is O(1).
class ZipfianGenerator {
  public:
    ZipfianGenerator(uint64_t n, double theta);
    uint64_t next(Rng& rng) const;
    uint64_t items() const { return n_; }

  private:
    uint64_t n_;
    double theta_;
    double alpha_;
    double zetan_;
    double eta_;
};

enum class Distribution { kUniform, kZipfian };

/// Chooses key indexes in [0, n): uniform, or zipfian with the ranks
/// scattered over the key space (YCSB's "scrambled zipfian": the hot keys are
/// not neighbours, so they do not share one leaf).
class KeyChooser {
  public:
    KeyChooser(uint64_t n, Distribution d, double theta = 0.99);
    uint64_t next(Rng& rng) const;
    /// A zipfian rank (0 hottest), unscattered: YCSB's "latest" distribution
    /// counts back from the newest key by it.
    uint64_t rank(Rng& rng) const;

  private:
    uint64_t n_;
    Distribution distribution_;
    ZipfianGenerator zipf_;
};

/// Indexes 0..n-1 in a random order fixed by `seed` (fillrandom's order).
std::vector<uint64_t> shuffledIndexes(uint64_t n, uint64_t seed);

}  // namespace mvkv::bench
