// The history horizon against running readers, on the MVCC layer alone: a
// registered reader without a read timestamp (on a reader shard, and on the
// active list too once it writes) holds the horizon back by its snapshot
// and read bound until it ends or is prepared; and no horizon given out is
// past a reader running after it, however the reader's begin and the
// horizon interleave (docs/mvcc.md, on reader shards; docs/history.md).
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "mvcc/timestamp.h"
#include "mvcc/transaction.h"
#include "mvcc/txn_manager.h"
#include "tests/mvcc_test_util.h"
#include "tests/test_seed.h"
#include "util/status.h"

namespace mvkv::mvcc {
namespace {

using testing::Collection;
using testing::put;

// The horizon with no unregistered readers to vouch for: horizon() reads
// the floor and read point of the moment itself.
Horizon horizonNow(const TransactionManager& mgr) { return mgr.horizon(~TxnId{0}); }

TEST_CASE("horizon: an untimestamped reader holds it back until it ends") {
    TransactionManager mgr;
    mgr.requireOrderedCommits();
    Collection c;
    testing::commitValue(mgr, c["a"], "v1");
    REQUIRE_OK(mgr.setStable(mgr.readPoint()));
    REQUIRE_OK(mgr.setOldest(mgr.readPoint()));

    Transaction writer;
    REQUIRE_OK(mgr.begin(writer));
    REQUIRE_OK(put(mgr, writer, c["a"], "v2"));  // running: in every snapshot from here
    Transaction reader;
    REQUIRE_OK(mgr.begin(reader));
    const TxnId readerFloor = reader.snapshot().snapMin;
    CHECK(readerFloor == writer.id());
    REQUIRE_OK(mgr.commit(writer));
    // The writer has ended, but the reader's snapshot does not see it.
    testing::commitValue(mgr, c["a"], "v3");
    REQUIRE_OK(mgr.setStable(mgr.readPoint()));
    REQUIRE_OK(mgr.setOldest(mgr.readPoint()));
    Horizon h = horizonNow(mgr);
    CHECK(h.oldestId <= readerFloor);
    CHECK(h.pinnedTs <= reader.readBound());
    CHECK(testing::read(reader, c["a"]) == "v1");

    SUBCASE("also after a write puts it on the active list") {
        REQUIRE_OK(put(mgr, reader, c["b"], "mine"));
        h = horizonNow(mgr);
        CHECK(h.oldestId <= readerFloor);
        CHECK(h.pinnedTs <= reader.readBound());
        REQUIRE_OK(mgr.commit(reader));
    }
    SUBCASE("not once prepared: a prepared transaction reads nothing more") {
        REQUIRE_OK(put(mgr, reader, c["b"], "mine"));
        REQUIRE_OK(mgr.prepare(reader, mgr.timestamps().clock + 1));
        h = horizonNow(mgr);
        CHECK(h.oldestId > readerFloor);
        mgr.abort(reader);
    }
    SUBCASE("not once it ends") {
        REQUIRE_OK(mgr.commit(reader));
    }
    h = horizonNow(mgr);
    CHECK(h.oldestId > readerFloor);
    CHECK(h.pinnedTs >= mgr.timestamps().oldest);
}

TEST_CASE("concurrency: no horizon is past a reader that runs after it is taken") {
    // Readers begin and end on several threads (so on several shards)
    // while writers keep transactions with ids running and ending and move
    // oldest; one thread takes horizons. Each reader keeps its snapshot
    // while writers commit past it. Every reader publishes its
    // snapshot floor and read bound after its begin returns and withdraws
    // them before it ends, so a value the checking thread finds after a
    // horizon returned belongs to a reader running then, which the horizon
    // must not have passed.
    const uint32_t seed = mvkv::testing::testSeed();
    TransactionManager mgr;
    mgr.requireOrderedCommits();
    Collection c;
    constexpr int kWriters = 2, kReaders = 3, kReaderRounds = 5000;
    for (int w = 0; w < kWriters; ++w)
        c.create("key" + std::to_string(w));
    struct alignas(64) Published {
        std::atomic<TxnId> floor{kNoTxnId};
        std::atomic<Timestamp> bound{kNoTimestamp};
    };
    std::vector<Published> published(kReaders);
    std::atomic<bool> done{false};
    std::atomic<int> readersLeft{kReaders};
    std::atomic<uint64_t> commits{0};

    std::vector<std::thread> threads;
    for (int w = 0; w < kWriters; ++w)
        threads.emplace_back([&, w] {
            UpdateChain& chain = c.at("key" + std::to_string(w));
            std::mt19937 rng(seed + w);
            while (!done.load(std::memory_order_relaxed)) {
                Transaction t;
                CHECK_OK(mgr.begin(t));
                CHECK_OK(put(mgr, t, chain, "v"));
                for (int spin = rng() % 16; spin > 0; --spin)
                    std::this_thread::yield();
                CHECK_OK(mgr.commit(t));
                commits.fetch_add(1, std::memory_order_release);
                if (w == 0) {  // oldest follows the read point (stable first)
                    const Timestamp rp = mgr.readPoint();
                    if (mgr.setStable(rp).ok())
                        mgr.setOldest(rp).ignore();
                }
            }
        });
    for (int r = 0; r < kReaders; ++r)
        threads.emplace_back([&, r] {
            std::mt19937 rng(seed + 100 + r);
            for (int round = 0; round < kReaderRounds; ++round) {
                Transaction t;
                CHECK_OK(mgr.begin(t));
                published[r].bound.store(t.readBound(), std::memory_order_release);
                published[r].floor.store(t.snapshot().snapMin, std::memory_order_release);
                // Held while a writer or two commit: the horizon moves on
                // past every writer this snapshot saw running.
                const uint64_t seen = commits.load(std::memory_order_acquire);
                const uint64_t until = seen + 1 + rng() % 2;
                while (commits.load(std::memory_order_acquire) < until)
                    std::this_thread::yield();
                published[r].floor.store(kNoTxnId, std::memory_order_release);
                published[r].bound.store(kNoTimestamp, std::memory_order_release);
                CHECK_OK(mgr.commit(t));
            }
            readersLeft.fetch_sub(1, std::memory_order_release);
        });

    uint64_t horizons = 0, floorsChecked = 0, past = 0;
    for (; readersLeft.load(std::memory_order_acquire) > 0; ++horizons) {
        const Horizon h = horizonNow(mgr);
        for (Published& p : published) {
            const TxnId floor = p.floor.load(std::memory_order_acquire);
            const Timestamp bound = p.bound.load(std::memory_order_acquire);
            if (floor != kNoTxnId) {
                ++floorsChecked;
                past += floor < h.oldestId;
            }
            if (bound != kNoTimestamp)
                past += bound < h.pinnedTs;
        }
        if (horizons % 16 == 0)
            std::this_thread::yield();  // on few cores, let the writers run
    }
    done = true;
    for (std::thread& t : threads)
        t.join();
    CHECK(past == 0);
    CHECK(floorsChecked > 0);  // the check met running readers
    MESSAGE(horizons << " horizons, " << floorsChecked << " reader floors checked");
}

}  // namespace
}  // namespace mvkv::mvcc
