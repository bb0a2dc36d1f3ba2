// BTree, single-threaded: randomized operations against std::map as the model,
// iteration both ways, forward scans that follow leaf links while the tree
// changes between their steps, seek edge cases (empty tree, ends, exact and between,
// empty key, prefixes, long and binary keys), removeIf and stats.
#include "btree/btree.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "btree/arena.h"
#include "btree_scan_check.h"
#include "test_seed.h"
#include "util/epoch.h"

using mvkv::BTree;
using mvkv::EpochManager;

namespace {

BTree::Value val(uint64_t x) {
    return reinterpret_cast<BTree::Value>(static_cast<uintptr_t>(x));
}

// Keys from a small alphabet incl. 0x00 and 0xff and varied lengths, so that
// prefixes of each other, shared 8-byte prefixes and binary bytes are common.
std::string randomKey(std::mt19937_64& rng) {
    static const char kAlphabet[] = {'\0', '\x01', 'a', 'b', '\x7f', '\x80', '\xfe', '\xff'};
    size_t len;
    switch (rng() % 4) {
        case 0:
            len = rng() % 4;
            break;
        case 1:
            len = 6 + rng() % 6;
            break;  // straddles the 8-byte prefix
        case 2:
            len = 12 + rng() % 10;
            break;
        default:
            len = rng() % 40;
            break;
    }
    std::string k(len, '\0');
    for (auto& c : k) {
        c = kAlphabet[rng() % sizeof(kAlphabet)];
    }
    return k;
}

std::string printable(const std::string& s) {
    std::string out;
    for (unsigned char c : s) {
        static const char* hex = "0123456789abcdef";
        out += hex[c >> 4];
        out += hex[c & 15];
    }
    return out;
}

// The tree's full contents, forward and backward, equal the model's.
void checkIteration(const BTree& tree, const std::map<std::string, uint64_t>& model) {
    BTree::Cursor c(tree);
    auto it = model.begin();
    for (c.seekFirst(); c.valid(); c.next(), ++it) {
        REQUIRE(it != model.end());
        REQUIRE(std::string(c.key()) == it->first);
        REQUIRE(c.value() == val(it->second));
    }
    REQUIRE(it == model.end());
    auto rit = model.rbegin();
    for (c.seekLast(); c.valid(); c.prev(), ++rit) {
        REQUIRE(rit != model.rend());
        REQUIRE(std::string(c.key()) == rit->first);
    }
    REQUIRE(rit == model.rend());
}

// seek and seekForPrev of `probe` agree with lower_bound / upper_bound - 1.
void checkSeek(const BTree& tree, const std::map<std::string, uint64_t>& model,
               const std::string& probe) {
    INFO("probe ", printable(probe));
    BTree::Cursor c(tree);
    c.seek(probe);
    auto lb = model.lower_bound(probe);
    if (lb == model.end()) {
        CHECK_FALSE(c.valid());
    } else {
        REQUIRE(c.valid());
        CHECK(std::string(c.key()) == lb->first);
    }
    c.seekForPrev(probe);
    auto ub = model.upper_bound(probe);
    if (ub == model.begin()) {
        CHECK_FALSE(c.valid());
    } else {
        --ub;
        REQUIRE(c.valid());
        CHECK(std::string(c.key()) == ub->first);
    }
}

// A full forward scan of `tree`: it sees as many keys as `model` holds and
// descends from the root once (the links carry it from leaf to leaf).
void checkScanDescendsOnce(const BTree& tree, const std::map<std::string, uint64_t>& model) {
    BTree::Cursor c(tree);
    size_t seen = 0;
    for (c.seekFirst(); c.valid(); c.next())
        ++seen;
    CHECK(seen == model.size());
    CHECK(c.descents() == 1);
}

}  // namespace

TEST_CASE("btree: randomized operations match std::map") {
    for (uint64_t seed : {1ull, 2ull, 3ull, 0xC0FFEEull}) {
        INFO("seed ", seed);
        EpochManager epochs;
        BTree tree(epochs);
        std::map<std::string, uint64_t> model;
        std::mt19937_64 rng(seed);
        uint64_t nextValue = 1;
        for (int op = 0; op < 40000; ++op) {
            std::string k = randomKey(rng);
            switch (rng() % 8) {
                case 0:
                case 1:
                case 2: {
                    uint64_t v = nextValue++;
                    auto [got, inserted] = tree.insertIfAbsent(k, val(v));
                    auto [it, modelInserted] = model.emplace(k, v);
                    REQUIRE(inserted == modelInserted);
                    REQUIRE(got == val(it->second));
                    break;
                }
                case 3: {
                    bool removed = tree.remove(k);
                    REQUIRE(removed == (model.erase(k) == 1));
                    break;
                }
                case 4: {
                    auto it = model.find(k);
                    uint64_t expected = it != model.end() && rng() % 2 ? it->second : 999999999;
                    bool removed = tree.removeIf(k, val(expected));
                    bool modelRemoved = it != model.end() && it->second == expected;
                    if (modelRemoved) {
                        model.erase(it);
                    }
                    REQUIRE(removed == modelRemoved);
                    break;
                }
                case 5:
                    checkSeek(tree, model, k);
                    break;
                default: {
                    auto found = tree.find(k);
                    auto it = model.find(k);
                    REQUIRE(found.has_value() == (it != model.end()));
                    if (found) {
                        REQUIRE(*found == val(it->second));
                    }
                    break;
                }
            }
            if (op % 10000 == 0) {
                REQUIRE(tree.size() == model.size());
            }
        }
        REQUIRE(tree.size() == model.size());
        checkIteration(tree, model);
        for (const auto& [k, v] : model) {
            REQUIRE(tree.find(k) == val(v));
        }
    }
}

TEST_CASE("btree: many sequential and reverse keys split deep trees") {
    EpochManager epochs;
    BTree tree(epochs);
    std::map<std::string, uint64_t> model;
    char buf[32];
    for (int i = 0; i < 50000; ++i) {
        // Ascending then descending insertion orders hit both split halves.
        int x = i < 25000 ? i : 74999 - i;
        snprintf(buf, sizeof(buf), "key%08d", x);
        tree.insertIfAbsent(buf, val(static_cast<uint64_t>(x) + 1));
        model.emplace(buf, x + 1);
    }
    checkIteration(tree, model);
    BTree::Stats s = tree.stats();
    CHECK(s.keys == 50000);
    CHECK(s.height >= 3);
    CHECK(s.leafNodes >= 50000 / BTree::kLeafCapacity);
    CHECK(s.innerNodes >= 1);
    CHECK(s.bytes > 50000 * 11);
    // Remove every other key, then all: empty leaves stay and are skipped.
    for (int x = 0; x < 50000; x += 2) {
        snprintf(buf, sizeof(buf), "key%08d", x);
        REQUIRE(tree.remove(buf));
        model.erase(buf);
    }
    checkIteration(tree, model);
    for (auto& [k, v] : model) {
        REQUIRE(tree.remove(k));
    }
    model.clear();
    checkIteration(tree, model);
    CHECK(tree.size() == 0);
    CHECK(tree.stats().leafNodes == s.leafNodes);  // no merging
    BTree::Cursor c(tree);
    c.seek("key");
    CHECK_FALSE(c.valid());
    c.seekForPrev("key99999999");
    CHECK_FALSE(c.valid());
}

TEST_CASE("btree: seek edge cases") {
    EpochManager epochs;
    BTree tree(epochs);
    std::map<std::string, uint64_t> model;

    SUBCASE("empty tree") {
        BTree::Cursor c(tree);
        c.seekFirst();
        CHECK_FALSE(c.valid());
        c.seekLast();
        CHECK_FALSE(c.valid());
        c.seek("");
        CHECK_FALSE(c.valid());
        c.seekForPrev("\xff\xff");
        CHECK_FALSE(c.valid());
        CHECK_FALSE(tree.find("").has_value());
        CHECK_FALSE(tree.remove(""));
        BTree::Stats s = tree.stats();
        CHECK(s.keys == 0);
        CHECK(s.height == 1);
        CHECK(s.leafNodes == 1);
        CHECK(s.innerNodes == 0);
    }

    SUBCASE("prefixes, empty key, binary bytes, long keys") {
        std::vector<std::string> keys = {
            "",
            std::string(1, '\0'),
            std::string(2, '\0'),
            std::string(9, '\0'),
            "a",
            "ab",
            "abcdefgh",   // exactly the prefix length
            "abcdefghi",  // one past it
            std::string("abcdefgh\0", 9),
            "abcdefgz",
            std::string(8, '\xff'),
            std::string(20, '\xff'),
            std::string("\x00\xff\x00", 3),
            std::string(5000, 'q'),        // > 4 KiB
            std::string(5000, 'q') + "r",  // differs after 5000 bytes
            std::string(65536, 'z'),       // 64 KiB
            std::string(4999, 'q') + std::string(1, '\xff'),
        };
        uint64_t v = 1;
        for (const auto& k : keys) {
            CHECK(tree.insertIfAbsent(k, val(v)).second);
            model.emplace(k, v++);
        }
        for (const auto& k : keys) {
            CHECK(tree.insertIfAbsent(k, val(12345)).first == val(model[k]));
            CHECK_FALSE(tree.insertIfAbsent(k, val(12345)).second);
        }
        checkIteration(tree, model);
        std::vector<std::string> probes = keys;
        probes.push_back(std::string(3, '\0'));
        probes.push_back("aa");
        probes.push_back("abcdefg");
        probes.push_back("abcdefgha");
        probes.push_back(std::string(21, '\xff'));  // after last
        probes.push_back(std::string(4999, 'q'));
        probes.push_back(std::string(65537, 'z'));
        probes.push_back("b");
        for (const auto& p : probes) {
            checkSeek(tree, model, p);
        }
        BTree::Cursor c(tree);
        c.seek("");
        REQUIRE(c.valid());
        CHECK(c.key().empty());  // exact hit on the empty key
        c.prev();
        CHECK_FALSE(c.valid());  // nothing before the first key
        c.seekLast();
        REQUIRE(c.valid());
        CHECK(std::string(c.key()) == std::string(20, '\xff'));
        c.next();
        CHECK_FALSE(c.valid());
    }

    SUBCASE("exact, between, before first and after last, in a multi-level tree") {
        for (int i = 0; i < 10000; ++i) {
            std::string k = "k" + std::to_string(i * 10);
            tree.insertIfAbsent(k, val(static_cast<uint64_t>(i) + 1));
            model.emplace(k, i + 1);
        }
        std::mt19937_64 rng(7);
        for (int i = 0; i < 3000; ++i) {
            checkSeek(tree, model, "k" + std::to_string(rng() % 100005));
        }
        checkSeek(tree, model, "");
        checkSeek(tree, model, "a");
        checkSeek(tree, model, "z");
        // Direction changes in the middle of a batch and across batches.
        BTree::Cursor c(tree);
        c.seek("k5000");
        auto it = model.find("k5000");
        REQUIRE(c.valid());
        for (int step = 0; step < 500; ++step) {
            bool forward = (step / 70) % 2 == 0;
            if (forward) {
                c.next();
                ++it;
            } else {
                c.prev();
                --it;
            }
            REQUIRE(c.valid());
            REQUIRE(std::string(c.key()) == it->first);
        }
        // A seek from the cursor's own key (the argument aliases its buffer).
        c.seek(c.key());
        REQUIRE(c.valid());
        CHECK(std::string(c.key()) == it->first);
    }
}

TEST_CASE("btree: removeIf removes only the expected mapping") {
    EpochManager epochs;
    BTree tree(epochs);
    CHECK_FALSE(tree.removeIf("x", val(1)));
    tree.insertIfAbsent("x", val(1));
    CHECK_FALSE(tree.removeIf("x", val(2)));
    CHECK(tree.find("x") == val(1));
    CHECK(tree.removeIf("x", val(1)));
    CHECK_FALSE(tree.find("x").has_value());
    CHECK_FALSE(tree.removeIf("x", val(1)));
    // A null value is a value like any other.
    CHECK(tree.insertIfAbsent("n", nullptr).second);
    CHECK(tree.find("n") == std::optional<BTree::Value>(nullptr));
    CHECK(tree.removeIf("n", nullptr));
    CHECK(tree.size() == 0);
}

TEST_CASE("btree: compareExchange swaps only the expected value, inserts only when absent") {
    EpochManager epochs;
    BTree tree(epochs);
    std::optional<BTree::Value> expected;  // nullopt: "absent"
    CHECK(tree.compareExchange("k", expected, val(1)));
    CHECK(tree.find("k") == val(1));
    // Absent expected, but present: fails and reports the value.
    expected = std::nullopt;
    CHECK_FALSE(tree.compareExchange("k", expected, val(9)));
    CHECK(expected == val(1));
    // Wrong value: fails and reports the value; nothing changed.
    expected = val(7);
    CHECK_FALSE(tree.compareExchange("k", expected, val(9)));
    CHECK(expected == val(1));
    CHECK(tree.find("k") == val(1));
    // Right value: swapped.
    CHECK(tree.compareExchange("k", expected, val(2)));
    CHECK(tree.find("k") == val(2));
    // A present value on an absent key: fails, reports absence.
    expected = val(2);
    CHECK_FALSE(tree.compareExchange("other", expected, val(3)));
    CHECK_FALSE(expected.has_value());
    CHECK_FALSE(tree.find("other").has_value());
    CHECK(tree.size() == 1);
}

TEST_CASE("btree: a compareExchange hint is used while fresh and never trusted when stale") {
    EpochManager epochs;
    BTree tree(epochs);
    // Enough keys for several leaves; "m050" sits in the middle of one.
    for (int i = 0; i < 300; i += 2) {
        tree.insertIfAbsent("m" + std::to_string(1000 + i), val(i));
    }
    const std::string key = "m1050";
    BTree::Hint hint;
    REQUIRE(tree.find(key, &hint) == val(50));
    CHECK(hint.slot >= 0);
    std::optional<BTree::Value> expected = val(50);
    CHECK(tree.compareExchange(key, expected, val(51), &hint));  // fresh hint
    CHECK(tree.find(key) == val(51));
    // The hint follows its own swap and stays usable.
    expected = val(51);
    CHECK(tree.compareExchange(key, expected, val(52), &hint));
    // Inserts before the key shift it to another slot: the hint is stale
    // and must not write into the slot it names.
    for (int i = 1; i < 50; i += 2) {
        tree.insertIfAbsent("m" + std::to_string(1000 + i), val(100000 + i));
    }
    expected = val(52);
    CHECK(tree.compareExchange(key, expected, val(53), &hint));
    CHECK(tree.find(key) == val(53));
    for (int i = 0; i < 300; i += 2) {
        if (i != 50) {
            CHECK(tree.find("m" + std::to_string(1000 + i)) == val(i));
        }
    }
    for (int i = 1; i < 50; i += 2) {
        CHECK(tree.find("m" + std::to_string(1000 + i)) == val(100000 + i));
    }
    // A hint of a missed key has no slot; a failed swap refreshes nothing wrong.
    BTree::Hint none;
    CHECK_FALSE(tree.find("zz", &none).has_value());
    CHECK(none.slot < 0);
}

TEST_CASE("btree: a cursor's value is the key's value now, not when the cursor got there") {
    EpochManager epochs;
    BTree tree(epochs);
    for (int i = 0; i < 10; ++i) {
        tree.insertIfAbsent("k" + std::to_string(i), val(i));
    }
    BTree::Cursor c(tree);
    c.seek("k3");
    REQUIRE(c.valid());
    CHECK(c.value() == val(3));
    std::optional<BTree::Value> expected = val(3);
    REQUIRE(tree.compareExchange("k3", expected, val(33)));
    CHECK(c.value() == val(33));  // the leaf changed: looked up again
    c.next();
    CHECK(c.key() == "k4");
    CHECK(c.value() == val(4));
    tree.remove("k4");
    CHECK(c.key() == "k4");
    CHECK(c.value() == nullptr);  // removed since the cursor reached it
    c.next();
    CHECK(c.key() == "k5");
    CHECK(c.value() == val(5));
}

TEST_CASE("btree: removed keys are retired through the epoch manager") {
    EpochManager epochs;
    {
        BTree tree(epochs);
        const std::string longKey(17, 'a');  // past the inline 16 bytes: it has a blob
        tree.insertIfAbsent(longKey, val(1));
        tree.insertIfAbsent("b", val(2));
        auto guard = epochs.pin();
        CHECK(tree.remove("b"));  // a short key lives in its slot: nothing to retire
        CHECK(epochs.pendingCount() == 0);
        CHECK(tree.remove(longKey));
        size_t pending = epochs.pendingCount();
        CHECK(pending == 1);
        epochs.reclaim();
        CHECK(epochs.pendingCount() == pending);  // our guard predates the retire
        guard.release();
        epochs.reclaim();
        CHECK(epochs.pendingCount() == 0);
    }
}

TEST_CASE("node arena: destroyed trees' nodes are reused, memory stays usable") {
    // Build and destroy the same tree twice: the second build reuses the
    // first one's nodes from the free lists instead of taking new chunks.
    auto build = [] {
        EpochManager epochs;
        BTree tree(epochs);
        char buf[32];
        for (int x = 0; x < 20000; ++x) {
            snprintf(buf, sizeof(buf), "arena%08d", x);
            REQUIRE(tree.insertIfAbsent(buf, val(static_cast<uint64_t>(x) + 1)).second);
        }
        for (int x = 0; x < 20000; x += 7) {
            snprintf(buf, sizeof(buf), "arena%08d", x);
            auto got = tree.find(buf);
            REQUIRE(got.has_value());
            CHECK(*got == val(static_cast<uint64_t>(x) + 1));
        }
    };
    build();
    size_t chunks = mvkv::btree_detail::nodeArenaStats().chunks;
    build();
    CHECK(mvkv::btree_detail::nodeArenaStats().chunks == chunks);
}

TEST_CASE("btree: a forward scan follows leaf links, and writes between its steps never make it skip") {
    using namespace mvkv::testing;
    EpochManager epochs;
    BTree tree(epochs);
    constexpr int kKeys = 6000;
    std::map<std::string, uint64_t> model;
    auto put = [&](int i) {
        if (tree.insertIfAbsent(numberedKey(i), val(uint64_t(i) + 1)).second)
            model[numberedKey(i)] = uint64_t(i) + 1;
    };
    auto drop = [&](int i) {
        if (!isStable(i) && tree.remove(numberedKey(i)))
            model.erase(numberedKey(i));
    };
    const uint32_t seed = testSeed();
    std::mt19937_64 rng(seed);
    for (int i = 0; i < kKeys; ++i)
        if (isStable(i) || rng() % 2 == 0)
            put(i);

    SUBCASE("an unchanged tree is scanned with one descent") {
        checkScanDescendsOnce(tree, model);
        // A seek into the middle, then to the end: one descent.
        BTree::Cursor c(tree);
        c.seek(numberedKey(kKeys / 2));
        while (c.valid())
            c.next();
        CHECK(c.descents() == 1);
    }

    SUBCASE("links cross emptied leaves") {
        // Empty long runs: whole leaves keep only stable keys or none.
        for (int i = 1000; i < 3000; ++i)
            drop(i);
        for (int i = 1000; i < 3000; ++i)
            if (isStable(i) && i % 2 == 0 && tree.remove(numberedKey(i)))
                model.erase(numberedKey(i));  // leaves with no key at all
        BTree::Cursor c(tree);
        auto it = model.begin();
        for (c.seekFirst(); c.valid(); c.next(), ++it) {
            REQUIRE(it != model.end());
            REQUIRE(std::string(c.key()) == it->first);
        }
        CHECK(it == model.end());
        CHECK(c.descents() == 1);
    }

    SUBCASE("inserts, removes and splits ahead of and behind the cursor") {
        for (int round = 0; round < 20; ++round) {
            BTree::Cursor c(tree);
            ForwardScanCheck check(kKeys);
            uint64_t steps = 0;
            for (c.seekFirst(); c.valid() && check.ok(); c.next(), ++steps) {
                const int at = keyNumber(c.key());
                check.step(c.key());
                if (c.value() != nullptr && c.value() != val(uint64_t(at) + 1))
                    FAIL("key ", at, " with another key's value");
                // Writes near the cursor: in its leaf, the next ones, behind.
                switch (rng() % 8) {
                    case 0:  // a run of inserts just ahead: splits the next leaves
                        for (int i = at + 1; i < std::min(kKeys, at + 1 + int(rng() % 120)); ++i)
                            put(i);
                        break;
                    case 1:  // a run of removes ahead: empties leaves
                        for (int i = at + 1; i < std::min(kKeys, at + 1 + int(rng() % 200)); ++i)
                            drop(i);
                        break;
                    case 2:  // one key somewhere ahead
                        put(std::min(kKeys - 1, at + 1 + int(rng() % 300)));
                        break;
                    case 3:
                        drop(std::min(kKeys - 1, at + 1 + int(rng() % 300)));
                        break;
                    case 4:  // behind: never seen, never in the way
                        put(std::max(0, at - int(rng() % 100)));
                        drop(std::max(0, at - int(rng() % 100)));
                        break;
                    default:  // no write: the batch or the links go on
                        break;
                }
            }
            check.finish();
            INFO("round ", round, " after ", steps, " steps");
            REQUIRE_MESSAGE(check.ok(), check.what());
        }
        checkIteration(tree, model);
        // After all those splits and emptied leaves the links still chain
        // every leaf: a scan with no writes descends once (key 0, stable,
        // keeps the first leaf non-empty).
        checkScanDescendsOnce(tree, model);
    }
}
