// Workload "btree": point lookups, writes and scans on one BTree of --keys
// random 16-byte keys, against std::map lookups as the baseline.
//
// Cases (every one measured at each --threads count, in this order):
//   map_find     std::map<std::string, void*>::find of a random present key,
//                read-only and unlocked (the map is never written while
//                timed): the baseline, a pointer chase per level.
//   btree_find   BTree::find of a random present key (pins the epoch, OLC
//                descent, no allocation).
//   btree_write  BTree::insertIfAbsent of a fresh key, then remove of it:
//                the tree's size stays at --keys; each thread its own keys.
//   btree_scan   one Cursor::next() (a cursor per thread, wrapping around).
//
// The two structures are built once per run, before any case is timed, and
// shared by all cases and thread counts. Reported per row: ops/s, ns/op per
// thread, ratio = ns/op over map_find at the same thread count, and scaling
// over 1 thread. On a machine with slow memory both sides pay for it: the
// ratio is the figure to compare.
#include <fmt/format.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "harness.h"
#include "workload.h"
#include "btree/btree.h"
#include "util/epoch.h"

namespace mvkv::bench {
namespace {

constexpr std::string_view kWorkload = "btree";
constexpr size_t kKeyBytes = 16;

std::string randomKey(std::mt19937_64& rng) {
    std::string k(kKeyBytes, '\0');
    uint64_t a = rng();
    uint64_t b = rng();
    std::memcpy(k.data(), &a, 8);
    std::memcpy(k.data() + 8, &b, 8);
    return k;
}

// Everything the cases share; built once.
struct Fixture {
    EpochManager epochs;
    BTree tree{epochs};
    std::map<std::string, void*> map;
    std::vector<std::string> keys;

    explicit Fixture(size_t count) {
        std::mt19937_64 rng(20261122);
        keys.reserve(count);
        while (keys.size() < count) {
            std::string k = randomKey(rng);
            void* value = reinterpret_cast<void*>(static_cast<uintptr_t>(keys.size() + 1));
            if (tree.insertIfAbsent(k, value).second) {
                map.emplace(k, value);
                keys.push_back(std::move(k));
            }
        }
    }
};

// A cheap per-thread index generator (the timed loop should measure the tree).
struct Picker {
    Picker(int thread, size_t keys)
        : state(0x9E3779B97F4A7C15ull * (static_cast<uint64_t>(thread) + 1)), count(keys) {}
    size_t next() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        return static_cast<size_t>(state % count);
    }
    uint64_t state;
    size_t count;
};

Measurement runMapFind(Fixture& f, const BenchConfig& config, int threads) {
    return repeatRuns(config.repeat, [&] {
        return runParallel(threads, limitsFor(config), [&](int index) {
            return [&f, picker = Picker(index, f.keys.size())]() mutable {
                if (f.map.find(f.keys[picker.next()]) == f.map.end()) {
                    throw std::runtime_error("std::map lost a key");
                }
            };
        });
    });
}

Measurement runBTreeFind(Fixture& f, const BenchConfig& config, int threads) {
    return repeatRuns(config.repeat, [&] {
        return runParallel(threads, limitsFor(config), [&](int index) {
            return [&f, picker = Picker(index, f.keys.size())]() mutable {
                if (!f.tree.find(f.keys[picker.next()])) {
                    throw std::runtime_error("BTree::find lost a key");
                }
            };
        });
    });
}

Measurement runBTreeWrite(Fixture& f, const BenchConfig& config, int threads) {
    return repeatRuns(config.repeat, [&] {
        return runParallel(threads, limitsFor(config), [&](int index) {
            // Fresh keys: an existing key with a thread tag and counter
            // appended, so they land all over the tree and never collide.
            return [&f, picker = Picker(index + 1000, f.keys.size()), index, n = uint64_t{0},
                    key = std::string()]() mutable {
                key.assign(f.keys[picker.next()]);
                key.append(reinterpret_cast<const char*>(&index), sizeof(index));
                key.append(reinterpret_cast<const char*>(&n), sizeof(n));
                ++n;
                if (!f.tree.insertIfAbsent(key, nullptr).second || !f.tree.remove(key)) {
                    throw std::runtime_error("BTree insert/remove of a fresh key failed");
                }
            };
        });
    });
}

Measurement runBTreeScan(Fixture& f, const BenchConfig& config, int threads) {
    return repeatRuns(config.repeat, [&] {
        return runParallel(threads, limitsFor(config), [&](int) {
            auto cursor = std::make_unique<BTree::Cursor>(f.tree);
            cursor->seekFirst();
            return [cursor = std::move(cursor)] {
                cursor->next();
                if (!cursor->valid()) {
                    cursor->seekFirst();
                }
            };
        });
    });
}

struct Case {
    std::string_view name;
    Measurement (*run)(Fixture&, const BenchConfig&, int threads);
};

const Case kCases[] = {
    {"map_find", runMapFind},
    {"btree_find", runBTreeFind},
    {"btree_write", runBTreeWrite},
    {"btree_scan", runBTreeScan},
};

WorkloadResult runBTreeWorkload(const BenchConfig& config) {
    WorkloadResult result;
    Fixture fixture(static_cast<size_t>(config.keys));
    for (int threads : config.threads) {
        for (const Case& c : kCases) {
            if (!config.wantCase(c.name))
                continue;
            Measurement m = c.run(fixture, config, threads);
            result.rows.push_back(toRow(kWorkload, c.name, threads, m));
        }
    }
    addRatioToBaseline(result.rows, "map_find");
    addScaling(result.rows);
    BTree::Stats s = fixture.tree.stats();
    result.notes.push_back(fmt::format(
        "tree: {} keys of {} bytes, height {}, {} leaves, {} inner nodes, {:.1f} MB", s.keys,
        kKeyBytes, s.height, s.leafNodes, s.innerNodes, static_cast<double>(s.bytes) / 1e6));
    return result;
}

}  // namespace

void registerBTreeWorkload(WorkloadRegistry& registry) {
    Workload w;
    w.name = std::string(kWorkload);
    w.description =
        "BTree on --keys random 16-byte keys: find, insert+remove, scan; std::map find baseline";
    for (const Case& c : kCases)
        w.caseNames.emplace_back(c.name);
    w.run = runBTreeWorkload;
    registry.add(std::move(w));
}

}  // namespace mvkv::bench
