// Isolation under concurrency, through the Session API: many threads, with
// the invariants checked by other threads while they run.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <atomic>
#include <random>
#include <thread>
#include <vector>

#include "tests/engine_test_util.h"

using namespace mvkv;
using namespace mvkv::engine;
using namespace mvkv::engine::testing;
using std::chrono::milliseconds;

namespace {

constexpr int kAccounts = 20;
constexpr int kInitial = 100;

std::string account(int i) {
    return fmt::format("acct{:02}", i);
}

StatusWith<int> readInt(Session& s, std::string_view ns, std::string_view key) {
    auto v = s.get(ns, key);
    if (!v.ok())
        return v.status();
    return std::stoi(v.value());
}

}  // namespace

TEST_CASE("transfers between accounts never change the total any snapshot sees") {
    auto engine = openEngine();
    {
        auto setup = engine->openSession();
        REQUIRE_OK(setup->createCollection("bank.accounts"));
        for (int i = 0; i < kAccounts; ++i)
            REQUIRE_OK(setup->put("bank.accounts", account(i), std::to_string(kInitial)));
    }
    constexpr int kWriters = 4;
    constexpr int kReaders = 2;
    constexpr int kTransfersEach = 300;
    std::atomic<int> writersDone{0};
    std::atomic<int> badTotals{0};
    std::atomic<int> snapshotsChecked{0};
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int w = 0; w < kWriters; ++w) {
        threads.emplace_back([&, w] {
            auto s = engine->openSession();
            s->setRetryTimeout(milliseconds(60000));
            std::mt19937 rng(static_cast<unsigned>(w) + 1);
            std::uniform_int_distribution<int> pick(0, kAccounts - 1);
            for (int i = 0; i < kTransfersEach; ++i) {
                int from = pick(rng), to = pick(rng);
                if (from == to)
                    continue;
                Status st = s->withTransaction([&](Session& t) -> Status {
                    auto a = readInt(t, "bank.accounts", account(from));
                    if (!a.ok())
                        return a.status();
                    auto b = readInt(t, "bank.accounts", account(to));
                    if (!b.ok())
                        return b.status();
                    std::this_thread::yield();  // widen the window for conflicts
                    Status x = t.put("bank.accounts", account(from), std::to_string(a.value() - 1));
                    if (!x.ok())
                        return x;
                    return t.put("bank.accounts", account(to), std::to_string(b.value() + 1));
                });
                if (!st.ok())
                    failures.fetch_add(1);
            }
            writersDone.fetch_add(1);
        });
    }
    for (int r = 0; r < kReaders; ++r) {
        threads.emplace_back([&, r] {
            auto s = engine->openSession();
            bool byCursor = r == 0;
            do {
                long total = 0;
                if (byCursor) {
                    auto c = s->openCursor("bank.accounts");
                    REQUIRE(c.ok());
                    for (mustOk(c.value()->first()); c.value()->valid(); mustOk(c.value()->next()))
                        total += std::stoi(std::string(c.value()->value()));
                } else {
                    REQUIRE(s->begin().ok());
                    for (int i = 0; i < kAccounts; ++i) {
                        auto v = readInt(*s, "bank.accounts", account(i));
                        REQUIRE(v.ok());
                        total += v.value();
                    }
                    REQUIRE(s->commit().ok());
                }
                if (total != long{kAccounts} * kInitial)
                    badTotals.fetch_add(1);
                snapshotsChecked.fetch_add(1);
            } while (writersDone.load() < kWriters);
        });
    }
    for (auto& t : threads)
        t.join();
    CHECK(failures.load() == 0);
    CHECK(badTotals.load() == 0);
    CHECK(snapshotsChecked.load() >= kReaders);
    auto s = engine->openSession();
    long total = 0;
    for (int i = 0; i < kAccounts; ++i)
        total += readInt(*s, "bank.accounts", account(i)).value();
    CHECK(total == long{kAccounts} * kInitial);
    auto st = engine->stats().transactions;
    CHECK(st.active == 0);
    MESSAGE("transfers: writeConflicts=", st.writeConflicts, " retries=", st.retries);
}

TEST_CASE("concurrent increments of one counter are all counted (no lost update)") {
    auto engine = openEngine();
    {
        auto setup = engine->openSession();
        REQUIRE_OK(setup->createCollection("t.counters"));
        REQUIRE_OK(setup->put("t.counters", "n", "0"));
    }
    constexpr int kThreads = 4;
    constexpr int kIncrements = 200;
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&] {
            auto s = engine->openSession();
            s->setRetryTimeout(milliseconds(60000));
            for (int i = 0; i < kIncrements; ++i) {
                Status st = s->withTransaction([](Session& x) -> Status {
                    auto n = readInt(x, "t.counters", "n");
                    if (!n.ok())
                        return n.status();
                    std::this_thread::yield();
                    return x.put("t.counters", "n", std::to_string(n.value() + 1));
                });
                if (!st.ok())
                    failures.fetch_add(1);
            }
        });
    }
    for (auto& t : threads)
        t.join();
    CHECK(failures.load() == 0);
    auto s = engine->openSession();
    CHECK(getOr(*s, "t.counters", "n") == std::to_string(kThreads * kIncrements));
}

TEST_CASE("an implicit write waiting on a conflict succeeds once the other transaction ends") {
    auto engine = openEngine();
    auto holder = engine->openSession();
    REQUIRE_OK(holder->createCollection("t.c"));
    REQUIRE_OK(holder->begin());
    REQUIRE_OK(holder->put("t.c", "k", "holder"));
    std::atomic<bool> started{false};
    Status result;
    uint64_t conflicts = 0;
    std::thread writer([&] {
        auto s = engine->openSession();
        s->setRetryTimeout(milliseconds(60000));
        started.store(true);
        result = s->put("t.c", "k", "writer");
        conflicts = s->lastOpWriteConflicts();
    });
    while (!started.load())
        std::this_thread::yield();
    // Let the writer meet the conflict at least once before the commit.
    while (engine->stats().transactions.writeConflicts == 0)
        std::this_thread::yield();
    REQUIRE_OK(holder->commit());
    writer.join();
    CHECK(result.ok());
    CHECK(conflicts >= 1);
    CHECK(getOr(*holder, "t.c", "k") == "writer");
}

TEST_CASE("concurrent inserts of the same keys: exactly one wins each key") {
    auto engine = openEngine();
    {
        auto setup = engine->openSession();
        REQUIRE_OK(setup->createCollection("t.c"));
    }
    constexpr int kThreads = 4;
    constexpr int kKeys = 300;
    std::atomic<int> wins{0};
    std::atomic<int> duplicates{0};
    std::atomic<int> other{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            auto s = engine->openSession();
            s->setRetryTimeout(milliseconds(60000));
            for (int i = 0; i < kKeys; ++i) {
                Status st = s->insert("t.c", fmt::format("k{}", i), std::to_string(t));
                if (st.ok())
                    wins.fetch_add(1);
                else if (st.code() == StatusCode::kDuplicateKey)
                    duplicates.fetch_add(1);
                else
                    other.fetch_add(1);
            }
        });
    }
    for (auto& t : threads)
        t.join();
    CHECK(wins.load() == kKeys);
    CHECK(duplicates.load() == kKeys * (kThreads - 1));
    CHECK(other.load() == 0);
    CHECK(engine->stats().collections[0].keys == kKeys);
}

TEST_CASE("writers on distinct keys never conflict; readers of a growing tree see every commit") {
    auto engine = openEngine();
    {
        auto setup = engine->openSession();
        REQUIRE_OK(setup->createCollection("t.c"));
    }
    constexpr int kThreads = 3;
    constexpr int kKeys = 2000;
    std::atomic<int> committed[kThreads] = {};
    std::atomic<int> missing{0};
    std::atomic<bool> done{false};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            auto s = engine->openSession();
            for (int i = 0; i < kKeys; ++i) {
                REQUIRE(s->put("t.c", fmt::format("{}-{:05}", t, i), "v").ok());
                committed[t].store(i + 1);
            }
        });
    }
    std::thread reader([&] {
        auto s = engine->openSession();
        std::mt19937 rng(7);
        while (!done.load()) {
            int t = static_cast<int>(rng() % kThreads);
            int n = committed[t].load();
            if (n == 0)
                continue;
            int i = static_cast<int>(rng() % static_cast<unsigned>(n));
            if (!s->get("t.c", fmt::format("{}-{:05}", t, i)).ok())
                missing.fetch_add(1);
        }
    });
    for (auto& t : threads)
        t.join();
    done.store(true);
    reader.join();
    CHECK(missing.load() == 0);
    CHECK(engine->stats().transactions.writeConflicts == 0);
    CHECK(engine->stats().collections[0].keys == kThreads * kKeys);
}

TEST_CASE("collections created and dropped while others write: clean errors, no crash") {
    auto engine = openEngine();
    std::atomic<bool> stop{false};
    std::atomic<int> unexpected{0};
    std::thread ddl([&] {
        auto s = engine->openSession();
        for (int i = 0; i < 200; ++i) {
            Status c = s->createCollection("t.flux");
            Status d = s->dropCollection("t.flux");
            if (!c.ok() || !d.ok())
                unexpected.fetch_add(1);
        }
        stop.store(true);
    });
    std::vector<std::thread> writers;
    for (int w = 0; w < 2; ++w) {
        writers.emplace_back([&, w] {
            auto s = engine->openSession();
            int i = 0;
            while (!stop.load()) {
                Status st = s->put("t.flux", fmt::format("{}-{}", w, i++), "v");
                if (!st.ok() && st.code() != StatusCode::kNamespaceNotFound)
                    unexpected.fetch_add(1);
                auto r = s->get("t.flux", "0-0");
                if (!r.ok() && r.status().code() != StatusCode::kNamespaceNotFound &&
                    r.status().code() != StatusCode::kNotFound)
                    unexpected.fetch_add(1);
            }
        });
    }
    ddl.join();
    for (auto& w : writers)
        w.join();
    CHECK(unexpected.load() == 0);
    CHECK(engine->listDatabases().empty());
}

TEST_CASE("interrupt() stops a lock wait and a write-conflict retry loop with Interrupted") {
    auto engine = openEngine();
    auto holder = engine->openSession();
    REQUIRE_OK(holder->createCollection("t.c"));
    REQUIRE_OK(holder->begin());
    REQUIRE_OK(holder->put("t.c", "k", "held"));  // IX on t.c and the key, until commit

    auto victim = engine->openSession();
    victim->setRetryTimeout(milliseconds(600000));
    Status dropResult, putResult;
    std::atomic<int> phase{0};
    std::thread t([&] {
        phase.store(1);
        dropResult = victim->dropCollection("t.c");  // waits for X behind the IX: no timeout
        phase.store(2);
        putResult = victim->put("t.c", "k", "blocked");  // conflicts, retries forever
        phase.store(3);
    });
    // Interrupt until each blocking call returns; a retry loop sleeps between
    // attempts, so keep interrupting rather than relying on one call.
    while (phase.load() < 3) {
        victim->interrupt();
        std::this_thread::yield();
    }
    t.join();
    CHECK(dropResult.code() == StatusCode::kInterrupted);
    CHECK(putResult.code() == StatusCode::kInterrupted);
    REQUIRE_OK(holder->commit());
    // The next operation starts clean.
    CHECK_OK(victim->put("t.c", "k", "after"));
    CHECK(getOr(*holder, "t.c", "k") == "after");
}
