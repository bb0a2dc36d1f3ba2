// Keys, values and random choices (keys.h).
#include "keys.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

namespace mvkv::bench {
namespace {

void putBigEndian(char* out, uint64_t v) {
    for (int i = 7; i >= 0; --i) {
        out[i] = static_cast<char>(v & 0xff);
        v >>= 8;
    }
}

uint64_t getBigEndian(std::string_view in) {
    uint64_t v = 0;
    for (size_t i = 0; i < 8 && i < in.size(); ++i)
        v = (v << 8) | static_cast<unsigned char>(in[i]);
    return v;
}

double zeta(uint64_t n, double theta) {
    double sum = 0;
    for (uint64_t i = 1; i <= n; ++i)
        sum += 1.0 / std::pow(double(i), theta);
    return sum;
}

}  // namespace

uint64_t splitmix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

uint64_t threadSeed(uint64_t seed, std::string_view workload, int thread) {
    uint64_t h = splitmix64(seed);
    for (char c : workload)
        h = splitmix64(h ^ static_cast<unsigned char>(c));
    return splitmix64(h ^ static_cast<uint64_t>(thread));
}

void KeyFormat::encode(char* out, uint64_t v) const {
    putBigEndian(out, v);
    std::memset(out + 8, 0, keySize_ - 8);
}

std::string KeyFormat::key(uint64_t index) const {
    std::string k(keySize_, '\0');
    make(k.data(), index);
    return k;
}

uint64_t KeyFormat::indexOf(std::string_view key) {
    return getBigEndian(key) >> 1;
}

ValueFormat::ValueFormat(size_t size) : pattern_(size, '\0') {
    for (size_t i = 0; i < size; ++i)
        pattern_[i] = static_cast<char>('a' + i % 26);
}

void ValueFormat::make(std::string& out, uint64_t stamp) const {
    out.assign(pattern_);
    char head[8];
    putBigEndian(head, stamp);
    std::memcpy(out.data(), head, std::min<size_t>(8, out.size()));
}

uint64_t ValueFormat::stampOf(std::string_view value) {
    return value.size() < 8 ? 0 : getBigEndian(value);
}

ZipfianGenerator::ZipfianGenerator(uint64_t n, double theta)
    : n_(std::max<uint64_t>(n, 1)), theta_(theta) {
    zetan_ = zeta(n_, theta_);
    double zeta2 = zeta(2, theta_);
    alpha_ = 1.0 / (1.0 - theta_);
    eta_ = (1.0 - std::pow(2.0 / double(n_), 1.0 - theta_)) / (1.0 - zeta2 / zetan_);
}

uint64_t ZipfianGenerator::next(Rng& rng) const {
    double u = rng.unit();
    double uz = u * zetan_;
    if (uz < 1.0)
        return 0;
    if (uz < 1.0 + std::pow(0.5, theta_))
        return std::min<uint64_t>(1, n_ - 1);
    auto rank = static_cast<uint64_t>(double(n_) * std::pow(eta_ * u - eta_ + 1.0, alpha_));
    return std::min(rank, n_ - 1);
}

KeyChooser::KeyChooser(uint64_t n, Distribution d, double theta)
    : n_(std::max<uint64_t>(n, 1)),
      distribution_(d),
      // The uniform chooser never draws from it: keep its zeta sum trivial.
      zipf_(d == Distribution::kZipfian ? n_ : 1, theta) {}

uint64_t KeyChooser::next(Rng& rng) const {
    if (distribution_ == Distribution::kUniform)
        return rng.below(n_);
    // Scatter the rank: a fixed hash, reduced to [0, n) by multiply-shift.
    __extension__ using U128 = unsigned __int128;
    return static_cast<uint64_t>((U128{splitmix64(zipf_.next(rng))} * n_) >> 64);
}

uint64_t KeyChooser::rank(Rng& rng) const {
    return distribution_ == Distribution::kUniform ? rng.below(n_) : zipf_.next(rng);
}

std::vector<uint64_t> shuffledIndexes(uint64_t n, uint64_t seed) {
    std::vector<uint64_t> v(n);
    std::iota(v.begin(), v.end(), uint64_t{0});
    Rng rng(seed);
    for (uint64_t i = n; i > 1; --i)
        std::swap(v[i - 1], v[rng.below(i)]);
    return v;
}

}  // namespace mvkv::bench
