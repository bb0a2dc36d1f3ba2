// mvkv-bench's measuring tools: the latency histogram against known samples,
// the key and value formats, the random distributions, the harness's latency
// recording and the CSV writer.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <atomic>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "bench/harness.h"
#include "bench/keys.h"
#include "bench/latency_histogram.h"
#include "bench/report.h"

using namespace mvkv::bench;

TEST_CASE("an empty histogram reports zeros") {
    LatencyHistogram h;
    CHECK(h.count() == 0);
    CHECK(h.percentile(50) == 0);
    CHECK(h.min() == 0);
    CHECK(h.max() == 0);
    CHECK(h.mean() == 0);
}

TEST_CASE("small values are exact: 1..100") {
    LatencyHistogram h;
    for (uint64_t v = 1; v <= 100; ++v)
        h.record(v);
    CHECK(h.count() == 100);
    CHECK(h.min() == 1);
    CHECK(h.max() == 100);
    CHECK(h.mean() == doctest::Approx(50.5));
    CHECK(h.percentile(0) == 1);
    CHECK(h.percentile(1) == 1);
    CHECK(h.percentile(50) == 50);
    CHECK(h.percentile(99) == 99);
    CHECK(h.percentile(99.9) == 100);
    CHECK(h.percentile(100) == 100);
}

TEST_CASE("large values: percentiles within 1/64 above the true value, never below") {
    LatencyHistogram h;
    std::vector<uint64_t> samples;
    for (uint64_t v = 1000; v <= 1000000; v += 997)
        samples.push_back(v);
    for (uint64_t v : samples)
        h.record(v);
    for (double p : {1.0, 10.0, 50.0, 90.0, 99.0, 99.9, 100.0}) {
        // The true percentile: the smallest sample with >= p% at or below it.
        size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * double(samples.size())));
        uint64_t truth = samples[std::max<size_t>(rank, 1) - 1];
        uint64_t got = h.percentile(p);
        CAPTURE(p);
        CHECK(got >= truth);
        CHECK(double(got) <= double(truth) * (1.0 + 1.0 / 64));
    }
    CHECK(h.percentile(100) == samples.back());  // capped at the largest recorded
}

TEST_CASE("one outlier among many: p99.9 sees it only when it is in the top 0.1%") {
    LatencyHistogram h;
    for (int i = 0; i < 999; ++i)
        h.record(100);  // below 128: an exact bucket
    h.record(5000000);  // 5 ms
    CHECK(h.percentile(99) == 100);
    CHECK(h.percentile(99.9) == 100);
    CHECK(h.percentile(99.95) >= 5000000);
    CHECK(h.max() == 5000000);
}

TEST_CASE("bucket bounds: every value lies in its bucket and above the one before") {
    for (uint64_t v : {uint64_t{0}, uint64_t{1}, uint64_t{127}, uint64_t{128}, uint64_t{129},
                       uint64_t{255}, uint64_t{256}, uint64_t{1000}, uint64_t{123456789},
                       (uint64_t{1} << 40) - 1}) {
        int b = LatencyHistogram::bucketOf(v);
        CAPTURE(v);
        CHECK(b >= 0);
        CHECK(b < LatencyHistogram::kBuckets);
        CHECK(LatencyHistogram::bucketHigh(b) >= v);
        if (b > 0)
            CHECK(LatencyHistogram::bucketHigh(b - 1) < v);
    }
    // Past the range: the last bucket, and the percentile is the true maximum.
    LatencyHistogram h;
    h.record(uint64_t{1} << 50);
    CHECK(LatencyHistogram::bucketOf(uint64_t{1} << 50) == LatencyHistogram::kBuckets - 1);
    CHECK(h.percentile(50) == uint64_t{1} << 50);
}

TEST_CASE("merging two histograms equals recording everything in one") {
    LatencyHistogram a, b, all;
    for (uint64_t v = 1; v < 5000; v += 7) {
        (v % 2 == 0 ? a : b).record(v * 13);
        all.record(v * 13);
    }
    a.merge(b);
    CHECK(a.count() == all.count());
    CHECK(a.min() == all.min());
    CHECK(a.max() == all.max());
    CHECK(a.mean() == doctest::Approx(all.mean()));
    for (double p : {5.0, 50.0, 95.0, 99.9})
        CHECK(a.percentile(p) == all.percentile(p));
}

TEST_CASE("keys sort as their indexes, and a missing key falls between two loaded ones") {
    for (size_t size : {size_t{8}, size_t{16}, size_t{40}}) {
        KeyFormat keys(size);
        CAPTURE(size);
        std::string prev;
        for (uint64_t i : {uint64_t{0}, uint64_t{1}, uint64_t{255}, uint64_t{256}, uint64_t{65535},
                           uint64_t{1} << 40}) {
            std::string k = keys.key(i);
            CHECK(k.size() == size);
            CHECK(KeyFormat::indexOf(k) == i);
            CHECK(prev < k);
            std::string missing(size, '\0');
            keys.makeMissing(missing.data(), i);
            CHECK(k < missing);
            CHECK(missing < keys.key(i + 1));
            prev = k;
        }
    }
    CHECK(KeyFormat(3).size() == KeyFormat::kMinKeySize);
}

TEST_CASE("values carry their stamp in the first 8 bytes") {
    ValueFormat values(100);
    std::string v;
    values.make(v, 0x0102030405060708ULL);
    CHECK(v.size() == 100);
    CHECK(ValueFormat::stampOf(v) == 0x0102030405060708ULL);
    values.make(v, 7);
    CHECK(ValueFormat::stampOf(v) == 7);
    std::string other;
    values.make(other, 8);
    CHECK(v.substr(8) == other.substr(8));  // the same pattern after the stamp
    CHECK(v.substr(8, 3) == "ijk");         // 'a' + 8 onwards
    CHECK(ValueFormat::stampOf("short") == 0);
}

TEST_CASE("the same seed gives the same sequence; another seed another") {
    Rng a(threadSeed(42, "readrandom", 0));
    Rng b(threadSeed(42, "readrandom", 0));
    Rng c(threadSeed(42, "readrandom", 1));
    Rng d(threadSeed(43, "readrandom", 0));
    int sameAsC = 0, sameAsD = 0;
    for (int i = 0; i < 100; ++i) {
        uint64_t x = a.next();
        CHECK(x == b.next());
        sameAsC += x == c.next();
        sameAsD += x == d.next();
    }
    CHECK(sameAsC == 0);
    CHECK(sameAsD == 0);
}

TEST_CASE("uniform choices stay in range and cover it") {
    Rng rng(1);
    KeyChooser chooser(10, Distribution::kUniform);
    std::set<uint64_t> seen;
    for (int i = 0; i < 2000; ++i) {
        uint64_t k = chooser.next(rng);
        REQUIRE(k < 10);
        seen.insert(k);
    }
    CHECK(seen.size() == 10);
}

TEST_CASE("zipfian 0.99 over 1000 items: rank 0 is drawn about 1/zeta(1000) of the time") {
    ZipfianGenerator zipf(1000, 0.99);
    Rng rng(7);
    std::vector<int> counts(1000);
    constexpr int kDraws = 200000;
    for (int i = 0; i < kDraws; ++i) {
        uint64_t r = zipf.next(rng);
        REQUIRE(r < 1000);
        ++counts[r];
    }
    double zeta = 0;
    for (int i = 1; i <= 1000; ++i)
        zeta += 1.0 / std::pow(double(i), 0.99);
    // P(0) = 1 / zeta (~0.134), P(1) = P(0) / 2^0.99.
    CHECK(double(counts[0]) / kDraws == doctest::Approx(1.0 / zeta).epsilon(0.05));
    CHECK(double(counts[1]) / kDraws == doctest::Approx(1.0 / zeta / std::pow(2.0, 0.99)).epsilon(0.1));
    CHECK(counts[0] > counts[1]);
    CHECK(counts[1] > counts[10]);
    CHECK(counts[10] > counts[500]);
}

TEST_CASE("scrambled zipfian: hot keys are not neighbours") {
    KeyChooser chooser(1000000, Distribution::kZipfian);
    Rng rng(3);
    std::map<uint64_t, int> counts;
    for (int i = 0; i < 50000; ++i)
        ++counts[chooser.next(rng)];
    std::vector<std::pair<int, uint64_t>> byCount;
    for (auto [k, n] : counts)
        byCount.emplace_back(n, k);
    std::sort(byCount.rbegin(), byCount.rend());
    REQUIRE(byCount.size() > 3);
    // The three hottest keys are spread out, not 0, 1, 2.
    CHECK(byCount[0].second != 0);
    uint64_t lo = std::min({byCount[0].second, byCount[1].second, byCount[2].second});
    uint64_t hi = std::max({byCount[0].second, byCount[1].second, byCount[2].second});
    CHECK(hi - lo > 1000);
    CHECK(byCount[0].first > 50000 / 20);  // and the hottest is hot
}

TEST_CASE("shuffledIndexes is a permutation fixed by its seed") {
    std::vector<uint64_t> a = shuffledIndexes(1000, 5);
    std::vector<uint64_t> b = shuffledIndexes(1000, 5);
    CHECK(a == b);
    CHECK(a != shuffledIndexes(1000, 6));
    std::vector<uint64_t> sorted = a;
    std::sort(sorted.begin(), sorted.end());
    for (uint64_t i = 0; i < 1000; ++i)
        REQUIRE(sorted[i] == i);
    CHECK(a != sorted);
}

TEST_CASE("the harness records one latency per timed op") {
    RunLimits limits;
    limits.opsPerThread = 500;
    limits.warmupOps = 10;
    limits.recordLatency = true;
    std::atomic<uint64_t> calls{0};
    Measurement m = runParallel(3, limits, [&](int) {
        return [&] { calls.fetch_add(1, std::memory_order_relaxed); };
    });
    CHECK(m.error.empty());
    CHECK(m.totalOps == 1500);
    CHECK(calls.load() == 1500 + 30);  // warm-up ops are run, not timed
    CHECK(m.latency.count() == 1500);
    CHECK(m.latency.percentile(50) <= m.latency.max());

    limits.recordLatency = false;
    Measurement quiet = runParallel(1, limits, [&](int) { return [] {}; });
    CHECK(quiet.latency.count() == 0);
}

TEST_CASE("a worker that throws fails the measurement with its message") {
    RunLimits limits;
    limits.opsPerThread = 10;
    limits.warmupOps = 0;
    limits.recordLatency = true;
    Measurement m = runParallel(2, limits, [&](int t) {
        return [t] {
            if (t == 1)
                throw std::runtime_error("boom");
        };
    });
    CHECK(m.error == "boom");
}

TEST_CASE("CSV: a header with every metric, quoted fields, empty cells where a row lacks one") {
    ResultRow a;
    a.workload = "readrandom";
    a.caseName = "mvkv";
    a.threads = 1;
    a.ops = 10;
    a.setMetric("p50_us", 1.5);
    ResultRow b;
    b.workload = "readrandom";
    b.caseName = "lmdb";
    b.threads = 2;
    b.setMetric("vs_lmdb", 1.0, "x");
    b.error = "bad, \"very\" bad";
    std::string csv = toCsv({a, b});
    std::vector<std::string> lines;
    size_t start = 0;
    for (size_t nl; (nl = csv.find('\n', start)) != std::string::npos; start = nl + 1)
        lines.push_back(csv.substr(start, nl - start));
    REQUIRE(lines.size() == 3);
    CHECK(lines[0] ==
          "workload,case,threads,ops,seconds,ops_per_sec,ns_per_op,cpu_pct,p50_us,vs_lmdb,error,skipped");
    CHECK(lines[1] == "readrandom,mvkv,1,10,0,0,0,,1.5,,,");
    CHECK(lines[2] == "readrandom,lmdb,2,0,0,0,0,,,1,\"bad, \"\"very\"\" bad\",");
}
