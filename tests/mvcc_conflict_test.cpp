// Eager write conflicts and snapshot isolation under concurrency, on the MVCC
// layer alone (no engine). A "collection" is a map of update chains created
// before any thread starts; threads only walk and prepend to the chains.
// docs/architecture.md "Write conflicts"; issue 3, point 5 and the isolation tests.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdint>
#include <latch>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "mvcc/timestamp.h"
#include "mvcc/transaction.h"
#include "mvcc/txn_manager.h"
#include "mvcc/update.h"
#include "mvcc/write_conflict_retry.h"
#include "tests/mvcc_test_util.h"
#include "util/deadline.h"
#include "util/status.h"

using namespace mvkv;
using namespace mvkv::mvcc;
using namespace mvkv::mvcc::testing;
using namespace std::chrono_literals;

namespace {

// Sanitized builds do fewer operations (TSan is 5-15x slower) so that every
// case stays around a second or two there too.
#if defined(__SANITIZE_THREAD__)
constexpr int kScale = 1;
#elif defined(__SANITIZE_ADDRESS__)
constexpr int kScale = 2;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
constexpr int kScale = 1;
#elif __has_feature(address_sanitizer)
constexpr int kScale = 2;
#else
constexpr int kScale = 5;
#endif
#else
constexpr int kScale = 5;
#endif

// Backstop for retry loops: far beyond any real run, so it only ends a hang.
constexpr auto kRetryBackstop = 60s;

// A decimal value; nullopt when absent or not a number.
std::optional<int64_t> readInt(const Transaction& txn, const UpdateChain& chain) {
    auto v = read(txn, chain);
    if (!v || v->empty())
        return std::nullopt;
    size_t used = 0;
    int64_t n = std::stoll(*v, &used);
    if (used != v->size())
        return std::nullopt;
    return n;
}

// Failures seen on worker threads, reported by the main thread (doctest
// assertions stay on the thread that runs the test case).
class Failures {
  public:
    void note(std::string what) {
        std::lock_guard lock(mutex_);
        if (list_.size() < 20)
            list_.push_back(std::move(what));
        ++count_;
    }
    void check() const {
        std::lock_guard lock(mutex_);
        for (const std::string& f : list_)
            FAIL_CHECK(f);
        CHECK(count_ == 0);
    }

  private:
    mutable std::mutex mutex_;
    std::vector<std::string> list_;
    uint64_t count_ = 0;
};

// Runs `body` as one explicit transaction with MongoDB's retry loop: begin
// (with the options `makeOptions()` gives for this attempt), body, commit; a
// WriteConflict anywhere aborts and starts over. Returns the final status.
template <typename MakeOptions, typename Body>
Status runTransaction(TransactionManager& mgr, Transaction& txn, RetryCounts& counts,
                      MakeOptions&& makeOptions, Body&& body) {
    return writeConflictRetry(
        Deadline::in(kRetryBackstop), counts,
        [&]() -> Status {
            if (Status s = mgr.begin(txn, makeOptions()); !s.ok())
                return s;
            if (Status s = body(); !s.ok()) {
                mgr.abort(txn);
                return s;
            }
            return mgr.commit(txn);
        },
        [] {});
}

}  // namespace

// ---------------------------------------------------------------------------
// Eager conflicts between two transactions

TEST_CASE("conflict: the second writer of a key gets WriteConflict at once, naming the first") {
    TransactionManager mgr;
    Collection c;
    commitValue(mgr, c["k"], "base");
    c.create("other");

    Transaction first, second;
    REQUIRE_OK(mgr.begin(first));
    REQUIRE_OK(put(mgr, first, c["k"], "first"));
    REQUIRE_OK(mgr.begin(second));

    // From another thread too: the write must return, not wait for `first`.
    Status fromThread;
    std::thread([&] { fromThread = put(mgr, second, c.at("k"), "second"); }).join();
    CHECK_CODE(fromThread, StatusCode::kWriteConflict);
    CAPTURE(fromThread.message());
    CHECK(contains(fromThread.message(), "transaction " + std::to_string(first.id())));
    CHECK(contains(fromThread.message(), "has not finished"));

    Status again = mgr.write(second, c["k"], WriteKind::kTombstone, {}, 0);
    CHECK_CODE(again, StatusCode::kWriteConflict);
    CHECK(mgr.wouldConflict(second, c["k"]));
    CHECK_FALSE(mgr.wouldConflict(first, c["k"]));
    // Nothing of `second` reached the chain; it can still write elsewhere.
    CHECK(c["k"].length() == 2);
    CHECK(second.writes().empty());
    CHECK(read(second, c["k"]) == "base");
    CHECK_OK(put(mgr, second, c["other"], "fine"));
    REQUIRE_OK(mgr.commit(second));
    REQUIRE_OK(mgr.commit(first));

    Transaction r;
    REQUIRE_OK(mgr.begin(r));
    CHECK(read(r, c["k"]) == "first");
    CHECK(read(r, c["other"]) == "fine");
    REQUIRE_OK(mgr.commit(r));
}

TEST_CASE("conflict: a writer whose snapshot predates a committed update of the key conflicts") {
    TransactionManager mgr;
    Collection c;
    commitValue(mgr, c["k"], "base");

    Transaction old;
    REQUIRE_OK(mgr.begin(old));
    CHECK(read(old, c["k"]) == "base");

    Transaction w;
    REQUIRE_OK(mgr.begin(w));
    REQUIRE_OK(put(mgr, w, c["k"], "newer"));
    REQUIRE_OK(mgr.commit(w, 77));

    for (WriteKind kind : {WriteKind::kValue, WriteKind::kTombstone}) {
        Status s = mgr.write(old, c["k"], kind, "stale", 0);
        CHECK_CODE(s, StatusCode::kWriteConflict);
        CAPTURE(s.message());
        CHECK(contains(s.message(), "snapshot"));
        CHECK(contains(s.message(), std::to_string(w.id())));
        CHECK(contains(s.message(), "77"));
    }
    CHECK(mgr.wouldConflict(old, c["k"]));
    mgr.abort(old);

    // Starting again gives a snapshot that includes the commit: no conflict.
    REQUIRE_OK(mgr.begin(old));
    CHECK_FALSE(mgr.wouldConflict(old, c["k"]));
    CHECK_OK(put(mgr, old, c["k"], "fresh"));
    REQUIRE_OK(mgr.commit(old));
}

TEST_CASE("conflict: a writer whose read timestamp is older than a committed update conflicts") {
    TransactionManager mgr;
    Collection c;
    commitValue(mgr, c["k"], "at20", 20);
    commitValue(mgr, c["k"], "at58", 58);

    // The commit at 58 is in the snapshot but above the read timestamp 37.
    Transaction t;
    REQUIRE_OK(mgr.begin(t, at(37)));
    CHECK(read(t, c["k"]) == "at20");
    Status s = put(mgr, t, c["k"], "x");
    CHECK_CODE(s, StatusCode::kWriteConflict);
    CAPTURE(s.message());
    CHECK(contains(s.message(), "37"));
    CHECK(contains(s.message(), "58"));
    CHECK(contains(s.message(), "read timestamp"));
    mgr.abort(t);

    // At or above the newest commit there is no conflict.
    REQUIRE_OK(mgr.begin(t, at(58)));
    CHECK_OK(put(mgr, t, c["k"], "y"));
    REQUIRE_OK(mgr.commit(t));
}

TEST_CASE("conflict: after the first writer aborts, the second may write the key") {
    TransactionManager mgr;
    Collection c;
    commitValue(mgr, c["k"], "base");

    Transaction first, second;
    REQUIRE_OK(mgr.begin(first));
    REQUIRE_OK(mgr.begin(second));
    REQUIRE_OK(put(mgr, first, c["k"], "first"));
    CHECK_CODE(put(mgr, second, c["k"], "second"), StatusCode::kWriteConflict);
    mgr.abort(first);

    // The same transaction retries the write: the aborted version is ignored.
    CHECK_FALSE(mgr.wouldConflict(second, c["k"]));
    REQUIRE_OK(put(mgr, second, c["k"], "second"));
    REQUIRE_OK(mgr.commit(second));
    Transaction r;
    REQUIRE_OK(mgr.begin(r));
    CHECK(read(r, c["k"]) == "second");
    REQUIRE_OK(mgr.commit(r));
}

TEST_CASE("conflict: after the first writer commits, only a newer snapshot may write the key") {
    TransactionManager mgr;
    Collection c;
    commitValue(mgr, c["k"], "base");
    Transaction first, second;
    REQUIRE_OK(mgr.begin(first));
    REQUIRE_OK(mgr.begin(second));
    REQUIRE_OK(put(mgr, first, c["k"], "first"));
    REQUIRE_OK(mgr.commit(first));
    // first committed after second's snapshot: still a conflict (no lost update).
    CHECK_CODE(put(mgr, second, c["k"], "second"), StatusCode::kWriteConflict);
    mgr.abort(second);
    REQUIRE_OK(mgr.begin(second));
    CHECK_OK(put(mgr, second, c["k"], "second"));
    REQUIRE_OK(mgr.commit(second));
}

TEST_CASE("conflict: a retried write succeeds once the other transaction ends") {
    bool commitOther = true;
    SUBCASE("the other commits") {
        commitOther = true;
    }
    SUBCASE("the other aborts") {
        commitOther = false;
    }

    TransactionManager mgr;
    Collection c;
    commitValue(mgr, c["k"], "base");
    UpdateChain& k = c["k"];

    Transaction other;
    REQUIRE_OK(mgr.begin(other));
    REQUIRE_OK(put(mgr, other, k, "other"));

    // The other transaction ends on its own thread, some time after the
    // retrying writer has met at least one conflict.
    std::atomic<bool> sawConflict{false};
    std::thread ender([&] {
        while (!sawConflict.load())
            std::this_thread::yield();
        std::this_thread::sleep_for(20ms);
        if (commitOther)
            mgr.commit(other).ignore();
        else
            mgr.abort(other);
    });

    Transaction mine;
    RetryCounts counts;
    Status s = writeConflictRetry(
        Deadline::in(kRetryBackstop), counts,
        [&]() -> Status {
            if (Status b = mgr.begin(mine); !b.ok())
                return b;
            if (Status w = put(mgr, mine, k, "mine"); !w.ok())
                return w;
            return mgr.commit(mine);
        },
        [&] {
            mgr.abort(mine);
            sawConflict.store(true);
        });
    ender.join();
    CHECK_OK(s);
    CHECK(counts.writeConflicts >= 1);
    CHECK(counts.attempts == counts.writeConflicts + 1);
    CHECK(other.state() == (commitOther ? TxnState::kCommitted : TxnState::kAborted));

    Transaction r;
    REQUIRE_OK(mgr.begin(r));
    CHECK(read(r, k) == "mine");
    REQUIRE_OK(mgr.commit(r));
    // Under "mine": the other's version, committed or aborted.
    const Update* below = k.head()->next();
    REQUIRE(below != nullptr);
    CHECK(below->value() == "other");
    CHECK(below->state() == (commitOther ? UpdateState::kCommitted : UpdateState::kAborted));
}

// ---------------------------------------------------------------------------
// Isolation under concurrency

TEST_CASE("isolation: concurrent transfers keep the total constant in every snapshot") {
    constexpr int kAccounts = 8;
    constexpr int64_t kInitial = 1000;
    constexpr int kWriters = 4;
    constexpr int kReaders = 2;
    const int transfersPerWriter = 400 * kScale;

    TransactionManager mgr;
    Collection c;
    std::vector<UpdateChain*> accounts;
    for (int i = 0; i < kAccounts; ++i) {
        accounts.push_back(&c.create("acct" + std::to_string(i)));
        commitValue(mgr, *accounts.back(), std::to_string(kInitial));
    }
    const int64_t total = kInitial * kAccounts;

    Failures failures;
    std::atomic<int> writersLeft{kWriters};
    std::atomic<uint64_t> conflicts{0}, snapshots{0};

    std::latch start(kWriters + kReaders);
    auto writer = [&](int w) {
        std::mt19937 rng(static_cast<uint32_t>(1000 + w));
        Transaction txn;
        start.arrive_and_wait();
        for (int i = 0; i < transfersPerWriter; ++i) {
            int from = static_cast<int>(rng() % kAccounts);
            int to = static_cast<int>((from + 1 + rng() % (kAccounts - 1)) % kAccounts);
            int64_t amount = static_cast<int64_t>(rng() % 50) + 1;
            // Odd writers read at the no-holes point: stale reads there must
            // turn into conflicts, never into lost money.
            auto options = [&] {
                return w % 2 == 1 ? at(mgr.timestamps().allDurable) : BeginOptions{};
            };
            RetryCounts counts;
            Status s = runTransaction(mgr, txn, counts, options, [&]() -> Status {
                auto a = readInt(txn, *accounts[static_cast<size_t>(from)]);
                auto b = readInt(txn, *accounts[static_cast<size_t>(to)]);
                if (!a || !b)
                    return Status::Internal("an account is missing from the snapshot");
                std::this_thread::yield();             // let others interleave with the transaction
                int64_t moved = std::min(amount, *a);  // never below zero
                if (Status p = put(mgr, txn, *accounts[static_cast<size_t>(from)],
                                   std::to_string(*a - moved));
                    !p.ok())
                    return p;
                return put(mgr, txn, *accounts[static_cast<size_t>(to)],
                           std::to_string(*b + moved));
            });
            conflicts.fetch_add(counts.writeConflicts);
            if (!s.ok())
                failures.note("transfer failed: " + s.toString());
        }
        writersLeft.fetch_sub(1);
    };

    auto reader = [&](int r) {
        Transaction txn;
        start.arrive_and_wait();
        int round = 0;
        do {
            BeginOptions options;
            if ((r + round++) % 2 == 1)
                options = at(mgr.timestamps().allDurable);
            if (Status s = mgr.begin(txn, options); !s.ok()) {
                failures.note("reader begin: " + s.toString());
                return;
            }
            int64_t sum = 0;
            for (UpdateChain* a : accounts) {
                auto v = readInt(txn, *a);
                if (!v) {
                    failures.note("an account is missing from a snapshot");
                    break;
                }
                if (*v < 0)
                    failures.note("negative balance " + std::to_string(*v));
                sum += *v;
            }
            if (sum != total)
                failures.note("snapshot total " + std::to_string(sum) +
                              " != " + std::to_string(total));
            if (Status s = mgr.commit(txn); !s.ok())
                failures.note("reader commit: " + s.toString());
            snapshots.fetch_add(1);
            std::this_thread::yield();  // leave the writers some CPU on small machines
        } while (writersLeft.load() > 0);
    };

    std::vector<std::thread> threads;
    for (int w = 0; w < kWriters; ++w)
        threads.emplace_back(writer, w);
    for (int r = 0; r < kReaders; ++r)
        threads.emplace_back(reader, r);
    for (auto& t : threads)
        t.join();
    failures.check();

    Transaction txn;
    REQUIRE_OK(mgr.begin(txn));
    int64_t sum = 0;
    for (UpdateChain* a : accounts)
        sum += readInt(txn, *a).value_or(-1'000'000);
    CHECK(sum == total);
    REQUIRE_OK(mgr.commit(txn));
    MvccStats st = mgr.stats();
    CHECK(st.active == 0);
    CHECK(st.committed >= static_cast<uint64_t>(kAccounts + kWriters * transfersPerWriter));
    CHECK(snapshots.load() >= static_cast<uint64_t>(kReaders));
    MESSAGE("transfers: ", kWriters * transfersPerWriter,
            ", write conflicts retried: ", conflicts.load(),
            ", snapshots checked: ", snapshots.load());
}

TEST_CASE("isolation: concurrent increments of one counter are all counted (no lost update)") {
    constexpr int kThreads = 6;
    const int incrementsPerThread = 150 * kScale;
    TransactionManager mgr;
    Collection c;
    UpdateChain& counter = c.create("counter");
    commitValue(mgr, counter, "0");

    Failures failures;
    std::atomic<uint64_t> conflicts{0};
    std::latch start(kThreads);
    std::vector<std::thread> threads;
    for (int i = 0; i < kThreads; ++i) {
        threads.emplace_back([&] {
            Transaction txn;
            start.arrive_and_wait();
            for (int n = 0; n < incrementsPerThread; ++n) {
                RetryCounts counts;
                Status s = runTransaction(
                    mgr, txn, counts, [] { return BeginOptions{}; },
                    [&]() -> Status {
                        auto v = readInt(txn, counter);
                        if (!v)
                            return Status::Internal("the counter is missing");
                        std::this_thread::yield();  // widen the read-to-write window
                        return put(mgr, txn, counter, std::to_string(*v + 1));
                    });
                conflicts.fetch_add(counts.writeConflicts);
                if (!s.ok())
                    failures.note("increment failed: " + s.toString());
            }
        });
    }
    for (auto& t : threads)
        t.join();
    failures.check();

    Transaction r;
    REQUIRE_OK(mgr.begin(r));
    CHECK(readInt(r, counter) == kThreads * incrementsPerThread);
    REQUIRE_OK(mgr.commit(r));
    // Every committed version on the chain is exactly one more than the one below.
    int64_t expect = kThreads * incrementsPerThread;
    for (const Update* u = counter.head(); u; u = u->next()) {
        if (u->state() != UpdateState::kCommitted)
            continue;
        CHECK(std::stoll(std::string(u->value())) == expect);
        --expect;
    }
    CHECK(expect == -1);
    MESSAGE("increments: ", kThreads * incrementsPerThread,
            ", write conflicts retried: ", conflicts.load());
}

TEST_CASE("isolation: snapshot isolation allows write skew") {
    // The constraint "x + y >= 1" holds before, each transaction checks it
    // on its snapshot and zeroes a different key; both commit, and the
    // constraint is broken. Serializable isolation would refuse one of them;
    // snapshot isolation (WiredTiger's, and mvkv's) does not.
    TransactionManager mgr;
    Collection c;
    UpdateChain& x = c.create("x");
    UpdateChain& y = c.create("y");
    commitValue(mgr, x, "1");
    commitValue(mgr, y, "1");

    std::barrier bothRead(2);
    Status results[2];
    auto doctor = [&](int who) {
        Transaction txn;
        Status s = mgr.begin(txn);
        auto vx = readInt(txn, x);
        auto vy = readInt(txn, y);
        bothRead.arrive_and_wait();  // each has read before either writes
        if (s.ok() && vx && vy && *vx + *vy >= 2)
            s = put(mgr, txn, who == 0 ? x : y, "0");
        else if (s.ok())
            s = Status::Internal("the snapshot did not show both keys at 1");
        if (s.ok())
            s = mgr.commit(txn);
        else
            mgr.abort(txn);
        results[who] = s;
    };
    std::thread a(doctor, 0), b(doctor, 1);
    a.join();
    b.join();
    CHECK_OK(results[0]);
    CHECK_OK(results[1]);

    Transaction r;
    REQUIRE_OK(mgr.begin(r));
    CHECK(readInt(r, x) == 0);
    CHECK(readInt(r, y) == 0);  // x + y == 0: the skew
    REQUIRE_OK(mgr.commit(r));
}

TEST_CASE("isolation: concurrent writers on distinct keys never conflict") {
    constexpr int kThreads = 8;
    constexpr int kKeysPerThread = 4;
    const int txnsPerThread = 100 * kScale;
    TransactionManager mgr;
    Collection c;
    std::vector<std::vector<UpdateChain*>> keys(kThreads);
    for (int t = 0; t < kThreads; ++t) {
        for (int k = 0; k < kKeysPerThread; ++k)
            keys[static_cast<size_t>(t)].push_back(
                &c.create("t" + std::to_string(t) + "k" + std::to_string(k)));
    }
    // Half of the keys start out committed; the rest are inserted by the threads.
    for (int t = 0; t < kThreads; t += 2) {
        for (UpdateChain* k : keys[static_cast<size_t>(t)])
            commitValue(mgr, *k, "0");
    }

    Failures failures;
    std::latch start(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            Transaction txn;
            start.arrive_and_wait();
            const auto& mine = keys[static_cast<size_t>(t)];
            for (int n = 1; n <= txnsPerThread; ++n) {
                if (Status s = mgr.begin(txn); !s.ok()) {
                    failures.note("begin: " + s.toString());
                    return;
                }
                for (UpdateChain* k : mine) {
                    if (Status s = put(mgr, txn, *k, std::to_string(n)); !s.ok())
                        failures.note("write: " + s.toString());
                }
                if (n % 10 == 0) {
                    mgr.abort(txn);  // some roll back; the next must not conflict
                    continue;
                }
                if (Status s = mgr.commit(txn); !s.ok())
                    failures.note("commit: " + s.toString());
            }
        });
    }
    for (auto& t : threads)
        t.join();
    failures.check();

    // The last committed n is txnsPerThread, or the one before when that aborted.
    const int lastCommitted = txnsPerThread % 10 == 0 ? txnsPerThread - 1 : txnsPerThread;
    Transaction r;
    REQUIRE_OK(mgr.begin(r));
    for (const auto& mine : keys) {
        for (UpdateChain* k : mine)
            CHECK(read(r, *k) == std::to_string(lastCommitted));
    }
    REQUIRE_OK(mgr.commit(r));
    CHECK(mgr.stats().active == 0);
}

TEST_CASE("isolation: a snapshot taken without a lock sees every commit that returned before it") {
    // Readers without a read timestamp copy the running ids with no lock
    // (TransactionManager's sequence lock). More writers than the table's
    // first size hold their transactions open at once in the first round,
    // so it is also replaced by a bigger one while readers copy it.
    constexpr int kWriters = 24;
    constexpr int kReaders = 2;
    const int txnsPerWriter = 60 * kScale;
    TransactionManager mgr;
    Collection c;
    std::vector<UpdateChain*> keys;
    for (int w = 0; w < kWriters; ++w)
        keys.push_back(&c.create("w" + std::to_string(w)));
    // The newest n each writer's commit of had returned.
    std::vector<std::atomic<int>> done(kWriters);
    std::atomic<int> writersLeft{kWriters};
    std::atomic<uint64_t> snapshots{0};

    Failures failures;
    std::barrier firstRound(kWriters);
    std::latch start(kWriters + kReaders);
    std::vector<std::thread> threads;
    for (int w = 0; w < kWriters; ++w) {
        threads.emplace_back([&, w] {
            Transaction txn;
            start.arrive_and_wait();
            for (int n = 1; n <= txnsPerWriter; ++n) {
                if (Status s = mgr.begin(txn); !s.ok()) {
                    failures.note("begin: " + s.toString());
                    break;
                }
                if (Status s = put(mgr, txn, *keys[static_cast<size_t>(w)], std::to_string(n));
                    !s.ok())
                    failures.note("write: " + s.toString());
                if (n == 1)
                    firstRound.arrive_and_wait();  // every writer running at once
                if (Status s = mgr.commit(txn); !s.ok())
                    failures.note("commit: " + s.toString());
                done[static_cast<size_t>(w)].store(n, std::memory_order_release);
            }
            writersLeft.fetch_sub(1);
        });
    }
    for (int r = 0; r < kReaders; ++r) {
        threads.emplace_back([&] {
            Transaction txn;
            BeginOptions unlocked;
            unlocked.unregistered = true;
            std::vector<int> seen(kWriters);
            start.arrive_and_wait();
            do {
                for (size_t w = 0; w < seen.size(); ++w)
                    seen[w] = done[w].load(std::memory_order_acquire);
                if (Status s = mgr.begin(txn, unlocked); !s.ok()) {
                    failures.note("reader begin: " + s.toString());
                    return;
                }
                const Snapshot& snap = txn.snapshot();
                if (!std::is_sorted(snap.concurrent.begin(), snap.concurrent.end()) ||
                    (!snap.concurrent.empty() && snap.concurrent.back() >= snap.snapMax))
                    failures.note("a snapshot's running ids are out of order or past snapMax");
                for (size_t w = 0; w < seen.size(); ++w) {
                    auto v = read(txn, *keys[w]);
                    int got = v ? std::stoi(*v) : 0;
                    if (got < seen[w])
                        failures.note("writer " + std::to_string(w) + " committed " +
                                      std::to_string(seen[w]) + " before the snapshot, which saw " +
                                      std::to_string(got));
                }
                if (Status s = mgr.commit(txn); !s.ok())
                    failures.note("reader commit: " + s.toString());
                snapshots.fetch_add(1);
                std::this_thread::yield();
            } while (writersLeft.load() > 0);
        });
    }
    for (auto& t : threads)
        t.join();
    failures.check();
    CHECK(snapshots.load() > 0);
    CHECK(mgr.stats().active == 0);
}

TEST_CASE("isolation: timestamps and stats stay consistent while other threads commit") {
    constexpr int kWriters = 3;
    const int txnsPerWriter = 100 * kScale;
    TransactionManager mgr;
    Collection c;
    std::vector<UpdateChain*> keys;
    for (int w = 0; w < kWriters; ++w)
        keys.push_back(&c.create("w" + std::to_string(w)));

    Failures failures;
    std::atomic<int> busy{kWriters + 1};
    std::vector<std::thread> threads;
    // Writers: clock-assigned commits.
    for (int w = 0; w < kWriters; ++w) {
        threads.emplace_back([&, w] {
            Transaction txn;
            for (int n = 0; n < txnsPerWriter; ++n) {
                Status s = mgr.begin(txn);
                if (s.ok())
                    s = put(mgr, txn, *keys[static_cast<size_t>(w)], std::to_string(n));
                if (s.ok())
                    s = mgr.commit(txn);
                if (!s.ok())
                    failures.note("writer: " + s.toString());
            }
            busy.fetch_sub(1);
        });
    }
    // Read-only transactions that commit with a timestamp, reading at the
    // no-holes point (rounded up to oldest, which keeps moving).
    threads.emplace_back([&] {
        Transaction txn;
        for (int n = 0; n < txnsPerWriter; ++n) {
            Status s = mgr.begin(txn, at(mgr.timestamps().allDurable, /*roundUp=*/true));
            if (s.ok())
                s = mgr.commit(txn, kMaxTimestamp / 2 + static_cast<Timestamp>(n));
            if (!s.ok())
                failures.note("read-only: " + s.toString());
        }
        busy.fetch_sub(1);
    });
    // Moves stable and oldest up to all_durable, as a replication layer would.
    threads.emplace_back([&] {
        while (busy.load() > 0) {
            Timestamp d = mgr.timestamps().allDurable;
            if (Status s = mgr.setStable(d); !s.ok())
                failures.note("setStable: " + s.toString());
            if (Status s = mgr.setOldest(d); !s.ok())
                failures.note("setOldest: " + s.toString());
            std::this_thread::yield();
        }
    });
    // Watches: every view is consistent and nothing goes backwards.
    threads.emplace_back([&] {
        Timestamps prev;
        do {
            Timestamps now = mgr.timestamps();
            MvccStats st = mgr.stats();
            if (now.oldest > now.stable)
                failures.note("oldest passed stable");
            if (now.stable > now.allDurable)
                failures.note("stable passed all_durable");
            if (now.allDurable > now.clock)
                failures.note("all_durable passed the clock");
            if (now.clock < prev.clock || now.oldest < prev.oldest || now.stable < prev.stable ||
                now.allDurable < prev.allDurable)
                failures.note("a timestamp went backwards: all_durable " +
                              std::to_string(prev.allDurable) + " -> " +
                              std::to_string(now.allDurable));
            if (now.oldestReader != kNoTimestamp && now.pinned > now.oldestReader)
                failures.note("pinned above the oldest reader");
            if (st.active > kWriters + 1)
                failures.note("more active transactions than threads");
            prev = now;
        } while (busy.load() > 0);
    });
    for (auto& t : threads)
        t.join();
    failures.check();
    Timestamps end = mgr.timestamps();
    CHECK(end.allDurable == end.clock);
    CHECK(mgr.stats().active == 0);
    CHECK(mgr.stats().committed == static_cast<uint64_t>((kWriters + 1) * txnsPerWriter));
}

TEST_CASE("updates: an owner's state changes and sweeps' depth and history marks on one word lose nothing") {
    // The owner commits or aborts each version while two sweep-like threads
    // set depths and history marks on the same versions: each is a
    // read-modify-write of the shared word, so none may undo another's
    // field or the id.
    constexpr int kVersions = 2000;
    std::vector<Update*> versions;
    for (int i = 0; i < kVersions; ++i)
        versions.push_back(Update::make(Update::kMaxTxnId - TxnId(i), i % 5 == 0, "value"));
    std::latch start(3);
    std::thread owner([&] {
        start.arrive_and_wait();
        for (int i = 0; i < kVersions; ++i) {
            if (i % 3 == 0) {
                versions[size_t(i)]->markAborted();
                continue;
            }
            versions[size_t(i)]->markPrepared(10);
            versions[size_t(i)]->markCommitted(20 + uint64_t(i));
        }
    });
    std::vector<std::thread> sweeps;
    for (int t = 0; t < 2; ++t)
        sweeps.emplace_back([&, t] {
            start.arrive_and_wait();
            for (int round = 0; round < 4; ++round)
                for (int i = 0; i < kVersions; ++i) {
                    Update* u = versions[size_t(i)];
                    if (t == 0)
                        u->setDepth(unsigned(i % 200) + 2);
                    else if (i % 2 == 0)
                        u->truncateBelow(true);
                }
        });
    owner.join();
    for (std::thread& s : sweeps)
        s.join();
    for (int i = 0; i < kVersions; ++i) {
        const Update* u = versions[size_t(i)];
        CAPTURE(i);
        CHECK(u->txnId() == Update::kMaxTxnId - TxnId(i));
        CHECK(u->isTombstone() == (i % 5 == 0));
        CHECK(u->state() == (i % 3 == 0 ? UpdateState::kAborted : UpdateState::kCommitted));
        CHECK(u->olderInHistory() == (i % 2 == 0));
        CHECK((u->depth() == 1 || u->depth() == unsigned(i % 200) + 2));
    }
    for (Update* u : versions)
        Update::destroy(u);
}
