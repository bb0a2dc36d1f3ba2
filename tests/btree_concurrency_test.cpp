// BTree under concurrent writers and readers: readers always find what was
// inserted before they looked, scans are strictly ordered and never torn
// during many splits, one winner per key for racing insertIfAbsent, and
// concurrent removes and inserts leave exactly the expected contents;
// compareExchange swaps are never lost to concurrent splits; forward scans
// that follow leaf links never skip a key that was there all along.
// No timing assertions: every check is on results.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "btree/btree.h"
#include "btree_scan_check.h"
#include "test_seed.h"
#include "util/epoch.h"

using mvkv::BTree;
using mvkv::EpochManager;

namespace {

BTree::Value val(uint64_t x) {
    return reinterpret_cast<BTree::Value>(static_cast<uintptr_t>(x));
}
uint64_t num(BTree::Value v) {
    return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(v));
}

// Writer w's i-th key; the value encodes (w, i) so readers can check that a
// key and its value belong together. Keys of all writers interleave in order,
// and share 8-byte prefixes, so splits happen everywhere.
std::string keyFor(int writer, int i) {
    char buf[40];
    snprintf(buf, sizeof(buf), "user%06d:w%02d:padding", i, writer);
    return buf;
}
uint64_t valueFor(int writer, int i) {
    return (static_cast<uint64_t>(writer) << 32) | (i + 1u);
}

bool keyMatchesValue(std::string_view key, uint64_t v) {
    int writer = static_cast<int>(v >> 32);
    int i = static_cast<int>((v & 0xffffffffu) - 1);
    return key == keyFor(writer, i);
}

}  // namespace

TEST_CASE("btree concurrency: readers find inserted keys and scan in order during splits") {
    EpochManager epochs;
    BTree tree(epochs);
    constexpr int kWriters = 2;
    constexpr int kPerWriter = 3000;
    std::atomic<int> progress[kWriters];
    for (auto& p : progress) {
        p.store(0);
    }
    std::atomic<int> writersDone{0};
    std::atomic<int> missing{0}, torn{0}, disordered{0};

    std::vector<std::thread> threads;
    for (int w = 0; w < kWriters; ++w) {
        threads.emplace_back([&, w] {
            // Alternate directions so splits hit both ends of leaves.
            for (int j = 0; j < kPerWriter; ++j) {
                int i = w % 2 == 0 ? j : kPerWriter - 1 - j;
                auto [v, inserted] = tree.insertIfAbsent(keyFor(w, i), val(valueFor(w, i)));
                if (!inserted || num(v) != valueFor(w, i)) {
                    missing.fetch_add(1);
                }
                progress[w].store(j + 1, std::memory_order_release);
            }
            writersDone.fetch_add(1);
        });
    }
    // Point readers: any key whose insert has returned must be found.
    threads.emplace_back([&] {
        std::mt19937 rng(42);
        while (writersDone.load() < kWriters) {
            int w = static_cast<int>(rng() % kWriters);
            int done = progress[w].load(std::memory_order_acquire);
            if (done == 0) {
                continue;
            }
            int j = static_cast<int>(rng() % done);
            int i = w % 2 == 0 ? j : kPerWriter - 1 - j;
            auto found = tree.find(keyFor(w, i));
            if (!found || num(*found) != valueFor(w, i)) {
                missing.fetch_add(1);
            }
        }
    });
    // Scanners: forward and backward, strictly ordered, keys match values.
    for (int dir = 0; dir < 2; ++dir) {
        threads.emplace_back([&, dir] {
            BTree::Cursor c(tree);
            std::string last;
            while (writersDone.load() < kWriters) {
                bool first = true;
                int steps = 0;
                for (dir == 0 ? c.seekFirst() : c.seekLast(); c.valid() && steps < 3000;
                     dir == 0 ? c.next() : c.prev(), ++steps) {
                    std::string k(c.key());
                    if (!keyMatchesValue(k, num(c.value()))) {
                        torn.fetch_add(1);
                    }
                    if (!first && (dir == 0 ? !(last < k) : !(k < last))) {
                        disordered.fetch_add(1);
                    }
                    last = std::move(k);
                    first = false;
                }
                std::this_thread::yield();  // leave the writers some CPU on small machines
            }
        });
    }
    for (auto& t : threads) {
        t.join();
    }
    CHECK(missing.load() == 0);
    CHECK(torn.load() == 0);
    CHECK(disordered.load() == 0);
    CHECK(tree.size() == kWriters * kPerWriter);
    CHECK(tree.stats().height >= 3);  // the readers really ran across root and inner splits
    // Final contents: every key, in order, exactly once.
    std::set<std::string> expected;
    for (int w = 0; w < kWriters; ++w) {
        for (int i = 0; i < kPerWriter; ++i) {
            expected.insert(keyFor(w, i));
        }
    }
    BTree::Cursor c(tree);
    auto it = expected.begin();
    for (c.seekFirst(); c.valid(); c.next(), ++it) {
        REQUIRE(it != expected.end());
        REQUIRE(c.key() == *it);
    }
    CHECK(it == expected.end());
}

TEST_CASE("btree concurrency: racing insertIfAbsent has exactly one winner per key") {
    EpochManager epochs;
    BTree tree(epochs);
    constexpr int kThreads = 4;
    constexpr int kKeys = 3000;
    std::vector<std::vector<int>> wins(kThreads);
    std::atomic<int> wrongValue{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < kKeys; ++i) {
                // Different thread, different order: same keys.
                int k = t % 2 == 0 ? i : kKeys - 1 - i;
                auto [v, inserted] =
                    tree.insertIfAbsent("same" + std::to_string(k), val(valueFor(t, k)));
                if (inserted) {
                    wins[t].push_back(k);
                }
                // Whoever won, the value returned is the winner's for this key.
                if (static_cast<int>((num(v) & 0xffffffffu) - 1) != k) {
                    wrongValue.fetch_add(1);
                }
            }
        });
    }
    for (auto& t : threads) {
        t.join();
    }
    CHECK(wrongValue.load() == 0);
    std::vector<int> winners(kKeys, 0);
    for (int t = 0; t < kThreads; ++t) {
        for (int k : wins[t]) {
            ++winners[k];
            CHECK(tree.find("same" + std::to_string(k)) == val(valueFor(t, k)));
        }
    }
    for (int k = 0; k < kKeys; ++k) {
        REQUIRE(winners[k] == 1);
    }
    CHECK(tree.size() == kKeys);
}

TEST_CASE("btree concurrency: compareExchange counters lose no increment during splits") {
    // Counter keys spread over the key space; inserter threads add keys
    // between them, so the counters' leaves shift and split while
    // incrementers swap their values (find with a hint, then
    // compareExchange, retrying on failure: the update chain's write path).
    // A swap that a split or shift lost would show as a missing increment.
    EpochManager epochs;
    BTree tree(epochs);
    constexpr int kCounters = 40;
    constexpr int kIncrementers = 3;
    constexpr int kIncrements = 4000;
    constexpr int kInserters = 2;
    constexpr int kInserts = 6000;
    auto counterKey = [](int c) {
        char buf[32];
        snprintf(buf, sizeof(buf), "user%06d:counter", c * 150);
        return std::string(buf);
    };
    for (int c = 0; c < kCounters; ++c) {
        REQUIRE(tree.insertIfAbsent(counterKey(c), val(0)).second);
    }
    std::atomic<int> badValue{0};
    std::vector<std::vector<int>> done(kIncrementers, std::vector<int>(kCounters, 0));
    std::vector<std::thread> threads;
    for (int t = 0; t < kIncrementers; ++t) {
        threads.emplace_back([&, t] {
            std::mt19937 rng(static_cast<unsigned>(t) + 1);
            for (int i = 0; i < kIncrements; ++i) {
                int c = static_cast<int>(rng() % kCounters);
                std::string key = counterKey(c);
                BTree::Hint hint;
                std::optional<BTree::Value> expected = tree.find(key, &hint);
                if (!expected) {
                    badValue.fetch_add(1);
                    continue;
                }
                while (!tree.compareExchange(key, expected, val(num(*expected) + 1), &hint)) {
                    if (!expected) {  // the key never leaves the tree
                        badValue.fetch_add(1);
                        break;
                    }
                }
                ++done[t][c];
            }
        });
    }
    for (int w = 0; w < kInserters; ++w) {
        threads.emplace_back([&, w] {
            for (int j = 0; j < kInserts; ++j) {
                int i = w % 2 == 0 ? j : kInserts - 1 - j;
                tree.insertIfAbsent(keyFor(w, i), val(valueFor(w, i)));
            }
        });
    }
    for (auto& t : threads) {
        t.join();
    }
    CHECK(badValue.load() == 0);
    for (int c = 0; c < kCounters; ++c) {
        uint64_t expectedCount = 0;
        for (int t = 0; t < kIncrementers; ++t) {
            expectedCount += static_cast<uint64_t>(done[t][c]);
        }
        CHECK(tree.find(counterKey(c)) == val(expectedCount));
    }
    for (int w = 0; w < kInserters; ++w) {
        for (int i = 0; i < kInserts; i += 97) {
            CHECK(tree.find(keyFor(w, i)) == val(valueFor(w, i)));
        }
    }
    CHECK(tree.size() == size_t(kCounters + kInserters * kInserts));
}

TEST_CASE("btree concurrency: removes and inserts race to the expected final set") {
    EpochManager epochs;
    BTree tree(epochs);
    constexpr int kThreads = 3;
    constexpr int kPerThread = 2000;
    // Pre-load the even keys of every thread's range.
    for (int t = 0; t < kThreads; ++t) {
        for (int i = 0; i < kPerThread; i += 2) {
            tree.insertIfAbsent(keyFor(t, i), val(valueFor(t, i)));
        }
    }
    std::atomic<int> errors{0};
    std::atomic<bool> stop{false};
    std::vector<std::thread> threads;
    // Thread t removes its even keys and inserts its odd keys, interleaved;
    // for keys divisible by 3 it also churns (insert, removeIf, re-insert).
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < kPerThread; ++i) {
                std::string k = keyFor(t, i);
                if (i % 2 == 0) {
                    if (!tree.remove(k)) {
                        errors.fetch_add(1);
                    }
                } else {
                    if (!tree.insertIfAbsent(k, val(valueFor(t, i))).second) {
                        errors.fetch_add(1);
                    }
                }
                if (i % 3 == 0 && i % 2 == 1) {
                    if (!tree.removeIf(k, val(valueFor(t, i))) ||
                        !tree.insertIfAbsent(k, val(valueFor(t, i))).second) {
                        errors.fetch_add(1);
                    }
                }
            }
        });
    }
    // A reader keeps scanning: order and key/value pairing must hold while
    // leaves empty out and refill. value() is the key's value now: null when
    // a remover took the key after the cursor reached it.
    threads.emplace_back([&] {
        BTree::Cursor c(tree);
        while (!stop.load()) {
            std::string last;
            bool first = true;
            for (c.seekFirst(); c.valid(); c.next()) {
                std::string k(c.key());
                BTree::Value v = c.value();
                if ((v != nullptr && !keyMatchesValue(k, num(v))) || (!first && !(last < k))) {
                    errors.fetch_add(1);
                }
                last = std::move(k);
                first = false;
            }
            std::this_thread::yield();
        }
    });
    for (int t = 0; t < kThreads; ++t) {
        threads[t].join();
    }
    stop.store(true);
    threads.back().join();
    CHECK(errors.load() == 0);

    std::set<std::string> expected;
    for (int t = 0; t < kThreads; ++t) {
        for (int i = 1; i < kPerThread; i += 2) {
            expected.insert(keyFor(t, i));
        }
    }
    CHECK(tree.size() == expected.size());
    BTree::Cursor c(tree);
    auto it = expected.begin();
    for (c.seekFirst(); c.valid(); c.next(), ++it) {
        REQUIRE(it != expected.end());
        REQUIRE(c.key() == *it);
    }
    CHECK(it == expected.end());
    for (int t = 0; t < kThreads; ++t) {
        for (int i = 0; i < kPerThread; i += 2) {
            REQUIRE_FALSE(tree.find(keyFor(t, i)).has_value());
        }
    }
}

TEST_CASE("btree concurrency: values stay usable under a pin when removers retire them") {
    // The contract in btree.h: find() under epochs.pin(), removal retires the
    // value through the same manager, so the reader never sees it freed.
    struct Payload {
        std::atomic<uint64_t> magic{0x5AFE};
        ~Payload() { magic.store(0xDEAD, std::memory_order_relaxed); }
    };
    EpochManager epochs;
    BTree tree(epochs);
    constexpr int kKeys = 64;
    for (int i = 0; i < kKeys; ++i) {
        tree.insertIfAbsent("p" + std::to_string(i), new Payload);
    }
    std::atomic<bool> stop{false};
    std::atomic<int> bad{0};
    std::thread reader([&] {
        std::mt19937 rng(3);
        while (!stop.load()) {
            auto guard = epochs.pin();
            auto v = tree.find("p" + std::to_string(rng() % kKeys));
            if (v && static_cast<Payload*>(*v)->magic.load(std::memory_order_relaxed) != 0x5AFE) {
                bad.fetch_add(1);
            }
        }
    });
    std::mt19937 rng(4);
    for (int round = 0; round < 2000; ++round) {
        std::string k = "p" + std::to_string(rng() % kKeys);
        auto v = tree.find(k);  // single writer: stable between find and removeIf
        if (v && tree.removeIf(k, *v)) {
            epochs.retireObject(static_cast<Payload*>(*v));
            tree.insertIfAbsent(k, new Payload);
        }
    }
    stop.store(true);
    reader.join();
    CHECK(bad.load() == 0);
    BTree::Cursor c(tree);
    for (c.seekFirst(); c.valid(); c.seekFirst()) {
        delete static_cast<Payload*>(c.value());
        tree.remove(c.key());
    }
    CHECK(tree.size() == 0);
}

TEST_CASE("btree concurrency: forward scans by leaf links never skip a key present throughout") {
    using namespace mvkv::testing;
    EpochManager epochs;
    BTree tree(epochs);
    constexpr int kKeys = 8000;
    for (int i = 0; i < kKeys; i += 5)  // the stable keys (isStable)
        tree.insertIfAbsent(numberedKey(i), val(uint64_t(i) + 1));
    const uint32_t seed = testSeed();
    // Writers and scanners run until the scanners finished kScans scans in
    // all, so that they overlap however the threads are scheduled.
    constexpr uint64_t kScans = 200;
    std::atomic<uint64_t> scans{0};
    std::vector<std::thread> threads;
    // Writers: runs of inserts (splitting leaves, so keys move right) and
    // runs of removes (emptying leaves) of the other keys, all over the tree.
    constexpr int kWriters = 2;
    for (int w = 0; w < kWriters; ++w) {
        threads.emplace_back([&, w] {
            std::mt19937_64 rng(seed + w);
            while (scans.load() < kScans) {
                const int from = int(rng() % kKeys);
                const int to = std::min(kKeys, from + 1 + int(rng() % 150));
                const bool insert = rng() % 2 == 0;
                for (int i = from; i < to; ++i) {
                    if (isStable(i))
                        continue;
                    if (insert)
                        tree.insertIfAbsent(numberedKey(i), val(uint64_t(i) + 1));
                    else
                        tree.remove(numberedKey(i));
                }
            }
        });
    }
    // Scanners: whole forward scans, each checked against the rule.
    std::atomic<int> broken{0};
    std::string firstError;
    std::mutex errorMutex;
    constexpr int kScanners = 2;
    for (int r = 0; r < kScanners; ++r) {
        threads.emplace_back([&] {
            BTree::Cursor c(tree);
            while (scans.load() < kScans) {
                ForwardScanCheck check(kKeys);
                for (c.seekFirst(); c.valid(); c.next()) {
                    check.step(c.key());
                    BTree::Value v = c.value();
                    if (v != nullptr && num(v) != uint64_t(keyNumber(c.key())) + 1) {
                        std::lock_guard lock(errorMutex);
                        if (firstError.empty())
                            firstError = "a key with another key's value";
                        broken.fetch_add(1);
                    }
                }
                check.finish();
                if (!check.ok()) {
                    std::lock_guard lock(errorMutex);
                    if (firstError.empty())
                        firstError = check.what();
                    broken.fetch_add(1);
                }
                scans.fetch_add(1);
                std::this_thread::yield();  // leave the writers some CPU on small machines
            }
        });
    }
    for (auto& t : threads)
        t.join();
    INFO(firstError);
    CHECK(broken.load() == 0);
    CHECK(scans.load() >= kScans);
}
