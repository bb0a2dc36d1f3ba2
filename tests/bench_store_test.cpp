// The conformance test of mvkv-bench's engine adapters (bench/store.h): the
// same checks run against every available factory of storeFactories(), each
// in a fresh temporary directory. An engine the build did not find is skipped
// with a message.
//
// Each StoreThread lives on a thread of its own (Handle below) because the
// contract binds a handle to the thread that made it (LMDB and WiredTiger
// need that); the test's steps still run one at a time, in program order, so
// nothing depends on timing.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <stdlib.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "bench/store.h"
#include "tests/status_check.h"

using namespace mvkv;
using namespace mvkv::bench;

namespace {

/// A StoreThread made on, used on and destroyed on its own thread. call()
/// runs one step there and waits for it.
class Handle {
  public:
    explicit Handle(Store& store) {
        thread_ = std::thread([this, &store] {
            auto made = store.thread();
            {
                std::lock_guard lock(mutex_);
                made_ = made.status();
                if (made.ok())
                    handle_ = std::move(made).value();
                ready_ = true;
            }
            cv_.notify_all();
            loop();
            handle_.reset();  // on this thread, as it was made
        });
        std::unique_lock lock(mutex_);
        cv_.wait(lock, [this] { return ready_; });
    }
    ~Handle() {
        {
            std::lock_guard lock(mutex_);
            stop_ = true;
        }
        cv_.notify_all();
        thread_.join();
    }
    Handle(const Handle&) = delete;
    Handle& operator=(const Handle&) = delete;

    const Status& made() const { return made_; }

    Status call(const std::function<Status(StoreThread&)>& step) {
        if (!made_.ok())
            return made_;
        Status result;
        std::unique_lock lock(mutex_);
        job_ = [&] { result = step(*handle_); };
        cv_.notify_all();
        cv_.wait(lock, [this] { return !job_; });
        return result;
    }

    Status put(std::string_view k, std::string_view v) {
        return call([&](StoreThread& t) { return t.put(k, v); });
    }
    Status remove(std::string_view k) {
        return call([&](StoreThread& t) { return t.remove(k); });
    }
    Status begin(TxnKind kind) {
        return call([&](StoreThread& t) { return t.begin(kind); });
    }
    Status commit() {
        return call([](StoreThread& t) { return t.commit(); });
    }
    Status abort() {
        return call([](StoreThread& t) { return t.abort(); });
    }
    /// The value, or the status (NotFound, ...) as a string starting with its code name.
    std::string get(std::string_view k) {
        std::string value;
        Status s = call([&](StoreThread& t) { return t.get(k, &value); });
        return s.ok() ? value : "<" + s.toString() + ">";
    }
    Status getStatus(std::string_view k) {
        std::string value;
        return call([&](StoreThread& t) { return t.get(k, &value); });
    }
    std::vector<std::pair<std::string, std::string>> scan(std::string_view start, uint64_t limit,
                                                          ScanResult* result = nullptr) {
        std::vector<std::pair<std::string, std::string>> entries;
        ScanResult local;
        ScanResult* r = result != nullptr ? result : &local;
        r->collect = &entries;
        CHECK_OK(call([&](StoreThread& t) { return t.scan(start, limit, r); }));
        r->collect = nullptr;
        return entries;
    }

  private:
    void loop() {
        std::unique_lock lock(mutex_);
        for (;;) {
            cv_.wait(lock, [this] { return stop_ || job_; });
            if (stop_)
                return;
            job_();
            job_ = nullptr;
            cv_.notify_all();
        }
    }

    std::mutex mutex_;
    std::condition_variable cv_;
    bool ready_ = false;
    bool stop_ = false;
    std::function<void()> job_;
    Status made_;
    std::unique_ptr<StoreThread> handle_;
    std::thread thread_;
};

/// A store in a fresh directory under /tmp, removed with it.
struct TempStore {
    std::string dir;
    std::unique_ptr<Store> store;

    ~TempStore() {
        store.reset();
        if (!dir.empty()) {
            std::error_code ec;
            std::filesystem::remove_all(dir, ec);
        }
    }
};

Status openTemp(const StoreFactory& factory, SyncMode sync, TempStore* out) {
    char pattern[] = "/tmp/bench_store_test.XXXXXX";
    if (mkdtemp(pattern) == nullptr)
        return Status::IOError(fmt::format("mkdtemp: {}", strerror(errno)));
    out->dir = pattern;
    StoreOptions options;
    options.dir = out->dir;
    options.sync = sync;
    options.expectedKeys = 1000;
    options.maxThreads = 8;
    auto opened = factory.open(options);
    if (!opened.ok())
        return opened.status();
    out->store = std::move(opened).value();
    return Status::OK();
}

/// Runs `check` once per available engine, on a store of its own.
void forEachStore(const std::function<void(const StoreFactory&, Store&)>& check) {
    for (const StoreFactory& factory : storeFactories()) {
        if (!factory.available) {
            MESSAGE("skipping " << factory.name << ": " << factory.why);
            continue;
        }
        INFO("engine: " << factory.name);
        TempStore temp;
        Status opened = openTemp(factory, SyncMode::kNone, &temp);
        CHECK_MESSAGE(opened.ok(), opened.toString());
        if (opened.ok())
            check(factory, *temp.store);
    }
}

using Entries = std::vector<std::pair<std::string, std::string>>;

/// Whether Handle::get's answer is NotFound.
bool isNotFound(const std::string& got) {
    return got.rfind("<" + std::string(statusCodeName(StatusCode::kNotFound)), 0) == 0;
}

}  // namespace

TEST_CASE("every factory names itself, and available ones say their version") {
    const auto& factories = storeFactories();
    REQUIRE(factories.size() == 4);
    std::vector<std::string> names;
    for (const StoreFactory& f : factories) {
        names.push_back(f.name);
        if (f.available) {
            CHECK(!f.version.empty());
            CHECK(!f.syncModes.empty());
            CHECK(bool(f.open));
        } else {
            CHECK(!f.why.empty());
        }
        CHECK(findStoreFactory(f.name) == &f);
    }
    CHECK(names == std::vector<std::string>{"mvkv", "lmdb", "wiredtiger", "rocksdb"});
}

TEST_CASE("every supported durable sync mode opens a store that keeps a write") {
    for (const StoreFactory& factory : storeFactories()) {
        if (!factory.available)
            continue;
        for (SyncMode mode : factory.syncModes) {
            if (mode == SyncMode::kNone)
                continue;  // every other test case runs kNone
            INFO("engine: " << factory.name << ", sync " << syncModeName(mode));
            TempStore temp;
            Status opened = openTemp(factory, mode, &temp);
            CHECK_MESSAGE(opened.ok(), opened.toString());
            if (!opened.ok())
                continue;
            Handle h(*temp.store);
            REQUIRE_OK(h.made());
            CHECK_OK(h.put("k", "v"));
            CHECK_OK(h.begin(TxnKind::kReadWrite));
            CHECK_OK(h.put("t", "w"));
            CHECK_OK(h.commit());
            CHECK(h.get("k") == "v");
            CHECK(h.get("t") == "w");
        }
    }
}

TEST_CASE("point operations: get, put, overwrite, remove") {
    forEachStore([](const StoreFactory&, Store& store) {
        Handle h(store);
        REQUIRE_OK(h.made());
        CHECK_CODE(h.getStatus("missing"), StatusCode::kNotFound);
        CHECK_OK(h.put("alpha", "one"));
        CHECK(h.get("alpha") == "one");
        CHECK_OK(h.put("alpha", "a longer second value"));
        CHECK(h.get("alpha") == "a longer second value");
        CHECK_OK(h.put("alpha", ""));  // an empty value is a value
        CHECK(h.get("alpha") == "");
        CHECK_OK(h.remove("alpha"));
        CHECK_CODE(h.getStatus("alpha"), StatusCode::kNotFound);
        CHECK_CODE(h.remove("alpha"), StatusCode::kNotFound);
        CHECK_CODE(h.remove("never-there"), StatusCode::kNotFound);
        CHECK_OK(h.put("alpha", "back"));  // a removed key can come back
        CHECK(h.get("alpha") == "back");
    });
}

TEST_CASE("scan returns keys in order from a start key, up to a limit, counting bytes") {
    forEachStore([](const StoreFactory&, Store& store) {
        Handle h(store);
        REQUIRE_OK(h.made());
        Entries all;
        for (int i = 0; i < 10; ++i)
            all.emplace_back(fmt::format("k{:02}", i * 10), fmt::format("value-{}", i));
        Entries shuffled = all;
        std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(42));
        for (const auto& [k, v] : shuffled)
            REQUIRE_OK(h.put(k, v));
        uint64_t allBytes = 0;
        for (const auto& [k, v] : all)
            allBytes += k.size() + v.size();

        ScanResult r;
        CHECK(h.scan("", 100, &r) == all);
        CHECK(r.count == 10);
        CHECK(r.bytes == allBytes);

        // From an existing key, from between two keys, limited.
        CHECK(h.scan("k50", 3) == Entries(all.begin() + 5, all.begin() + 8));
        CHECK(h.scan("k45", 2) == Entries(all.begin() + 5, all.begin() + 7));
        CHECK(h.scan("k", 1) == Entries(all.begin(), all.begin() + 1));
        CHECK(h.scan("k90", 5) == Entries(all.begin() + 9, all.end()));
        CHECK(h.scan("k91", 5).empty());
        CHECK(h.scan("", 0).empty());

        // scan adds to what the result already holds; no collect: counts only.
        ScanResult sum;
        sum.count = 1;
        sum.bytes = 7;
        CHECK_OK(h.call([&](StoreThread& t) { return t.scan("k80", 10, &sum); }));
        CHECK(sum.count == 1 + 2);
        CHECK(sum.bytes == 7 + (3 + 7) * 2);

        // A removed key disappears from scans.
        REQUIRE_OK(h.remove("k50"));
        Entries expected = all;
        expected.erase(expected.begin() + 5);
        CHECK(h.scan("k40", 3) == Entries(expected.begin() + 4, expected.begin() + 7));
    });
}

TEST_CASE("binary keys with 0x00 and 0xff and different lengths order by memcmp") {
    forEachStore([](const StoreFactory&, Store& store) {
        Handle h(store);
        REQUIRE_OK(h.made());
        using namespace std::string_literals;
        std::vector<std::string> keys = {
            "\x00"s,  "\x00\x00"s, "\x00\x01"s,     "\x01"s, "\x7f"s,  "\x80"s,   "\xfe\xff"s,
            "\xff"s,  "\xff\x00"s, "\xff\xff"s,     "a"s,    "a\x00"s, "a\x00b"s, "ab"s,
            "a\xff"s, "b"s,        "\xff\xff\xff"s,
        };
        Entries expected;
        for (const std::string& k : keys)
            expected.emplace_back(k, "v\x00"s + k);   // values with a NUL too
        std::sort(expected.begin(), expected.end());  // char_traits<char>: unsigned, as memcmp
        std::shuffle(keys.begin(), keys.end(), std::mt19937(7));
        for (const std::string& k : keys)
            REQUIRE_OK(h.put(k, "v\x00"s + k));

        CHECK(h.scan("", 100) == expected);
        CHECK(h.scan("\x00\x00"s, 2) == Entries(expected.begin() + 1, expected.begin() + 3));
        auto afterA = std::find_if(expected.begin(), expected.end(),
                                   [](const auto& e) { return e.first > "a"; });
        CHECK(h.scan("a\x00\x00"s, 1) == Entries(afterA + 1, afterA + 2));  // between a\0 and a\0b
        CHECK(h.scan("\xff"s, 10) == Entries(expected.end() - 4, expected.end()));
        for (const auto& [k, v] : expected)
            CHECK(h.get(k) == v);
        CHECK_CODE(h.getStatus("\x00\x00\x00"s), StatusCode::kNotFound);
    });
}

TEST_CASE("a transaction's writes are invisible to another handle until commit, gone after abort") {
    forEachStore([](const StoreFactory&, Store& store) {
        Handle a(store);
        Handle b(store);
        REQUIRE_OK(a.made());
        REQUIRE_OK(b.made());
        REQUIRE_OK(a.put("x", "0"));
        REQUIRE_OK(a.put("gone", "0"));

        REQUIRE_OK(a.begin(TxnKind::kReadWrite));
        CHECK_OK(a.put("x", "1"));
        CHECK_OK(a.put("new", "n"));
        CHECK_OK(a.remove("gone"));
        CHECK_CODE(a.remove("never"), StatusCode::kNotFound);
        // The transaction reads its own writes, in gets and scans.
        CHECK(a.get("x") == "1");
        CHECK(a.get("new") == "n");
        CHECK(isNotFound(a.get("gone")));
        CHECK(a.scan("", 10) == Entries{{"new", "n"}, {"x", "1"}});
        // Nobody else does.
        CHECK(b.get("x") == "0");
        CHECK(isNotFound(b.get("new")));
        CHECK(b.get("gone") == "0");
        CHECK(b.scan("", 10) == Entries{{"gone", "0"}, {"x", "0"}});
        CHECK_OK(a.commit());
        CHECK(b.get("x") == "1");
        CHECK(b.get("new") == "n");
        CHECK(isNotFound(b.get("gone")));

        REQUIRE_OK(a.begin(TxnKind::kReadWrite));
        CHECK_OK(a.put("x", "2"));
        CHECK_OK(a.put("aborted", "a"));
        CHECK_OK(a.remove("new"));
        CHECK(a.get("x") == "2");
        CHECK_OK(a.abort());
        for (Handle* h : {&a, &b}) {
            CHECK(h->get("x") == "1");
            CHECK(isNotFound(h->get("aborted")));
            CHECK(h->get("new") == "n");
        }
        // The handle is usable for autocommit work and new transactions after both.
        CHECK_OK(a.put("x", "3"));
        CHECK(b.get("x") == "3");
        CHECK_OK(a.begin(TxnKind::kReadOnly));
        CHECK(a.get("x") == "3");
        CHECK_OK(a.commit());
    });
}

TEST_CASE("a read-only transaction keeps its snapshot while another handle commits") {
    forEachStore([](const StoreFactory&, Store& store) {
        Handle reader(store);
        Handle writer(store);
        REQUIRE_OK(reader.made());
        REQUIRE_OK(writer.made());
        REQUIRE_OK(writer.put("x", "old"));
        REQUIRE_OK(writer.put("y", "old"));

        REQUIRE_OK(reader.begin(TxnKind::kReadOnly));
        CHECK(reader.get("x") == "old");  // WiredTiger takes the snapshot at the first read

        REQUIRE_OK(writer.begin(TxnKind::kReadWrite));
        CHECK_OK(writer.put("x", "new"));
        CHECK_OK(writer.put("z", "new"));
        CHECK_OK(writer.remove("y"));
        CHECK_OK(writer.commit());
        CHECK_OK(writer.put("x", "newer"));  // and an autocommit write

        CHECK(reader.get("x") == "old");
        CHECK(reader.get("y") == "old");
        CHECK(isNotFound(reader.get("z")));
        CHECK(reader.scan("", 10) == Entries{{"x", "old"}, {"y", "old"}});
        CHECK_OK(reader.commit());

        CHECK(reader.get("x") == "newer");
        CHECK(isNotFound(reader.get("y")));
        CHECK(reader.get("z") == "new");
    });
}

TEST_CASE("abort with no open transaction is a no-op that changes nothing") {
    forEachStore([](const StoreFactory&, Store& store) {
        Handle h(store);
        REQUIRE_OK(h.made());
        CHECK_OK(h.abort());  // nothing was ever opened
        REQUIRE_OK(h.begin(TxnKind::kReadWrite));
        CHECK_OK(h.put("kept", "1"));
        REQUIRE_OK(h.commit());
        CHECK_OK(h.abort());  // after a commit: the commit stays
        CHECK(h.get("kept") == "1");
        // And a later transaction still works.
        REQUIRE_OK(h.begin(TxnKind::kReadWrite));
        CHECK_OK(h.put("kept", "2"));
        CHECK_OK(h.commit());
        CHECK(h.get("kept") == "2");
    });
}

TEST_CASE("two transactions writing one key: one gets WriteConflict, the retry succeeds") {
    forEachStore([](const StoreFactory& factory, Store& store) {
        if (factory.name == "lmdb") {
            MESSAGE("lmdb has one writer: its write transactions never conflict");
            return;
        }
        Handle a(store);
        Handle b(store);
        REQUIRE_OK(a.made());
        REQUIRE_OK(b.made());
        REQUIRE_OK(a.put("x", "0"));

        // Both write before either commits.
        REQUIRE_OK(a.begin(TxnKind::kReadWrite));
        REQUIRE_OK(b.begin(TxnKind::kReadWrite));
        CHECK(b.get("x") == "0");  // both have a snapshot before any write
        CHECK_OK(a.put("x", "a"));
        Status bPut = b.put("x", "b");
        CHECK_MESSAGE((bPut.ok() || bPut.code() == StatusCode::kWriteConflict), bPut.toString());
        Status aCommit = a.commit();
        Status bCommit = bPut.ok() ? b.commit() : bPut;
        // Exactly one wins; the other reports WriteConflict (at its put or its commit).
        CHECK_MESSAGE(aCommit.ok() != bCommit.ok(), aCommit.toString()
                                                        << " / " << bCommit.toString());
        Handle& loser = aCommit.ok() ? b : a;
        const Status& lost = aCommit.ok() ? bCommit : aCommit;
        CHECK_CODE(lost, StatusCode::kWriteConflict);
        CHECK_OK(loser.abort());
        CHECK(b.get("x") == (aCommit.ok() ? "a" : "b"));
        REQUIRE_OK(loser.begin(TxnKind::kReadWrite));
        CHECK_OK(loser.put("x", "retried"));
        CHECK_OK(loser.commit());
        CHECK(a.get("x") == "retried");

        // The first committer wins against a transaction with an older snapshot.
        REQUIRE_OK(a.put("y", "0"));
        REQUIRE_OK(a.begin(TxnKind::kReadWrite));
        REQUIRE_OK(b.begin(TxnKind::kReadWrite));
        CHECK(b.get("y") == "0");  // b's snapshot is older than a's commit
        CHECK_OK(a.put("y", "a"));
        CHECK_OK(a.commit());
        Status bLate = b.put("y", "b");
        if (bLate.ok())
            bLate = b.commit();
        CHECK_CODE(bLate, StatusCode::kWriteConflict);
        CHECK_OK(b.abort());
        CHECK(b.get("y") == "a");
        REQUIRE_OK(b.begin(TxnKind::kReadWrite));
        CHECK(b.get("y") == "a");
        CHECK_OK(b.put("y", "b"));
        CHECK_OK(b.commit());
        CHECK(a.get("y") == "b");
    });
}

TEST_CASE("concurrent autocommit puts on the same keys all succeed") {
    forEachStore([](const StoreFactory&, Store& store) {
        constexpr int kThreads = 4;
        constexpr int kPutsPerThread = 200;
        const std::vector<std::string> keys = {"hot0", "hot1", "hot2"};
        std::vector<Status> firstError(kThreads);
        std::vector<int> failures(kThreads, 0);
        std::vector<uint64_t> conflicts(kThreads, 0);
        std::vector<std::thread> threads;
        for (int t = 0; t < kThreads; ++t) {
            threads.emplace_back([&, t] {
                auto made = store.thread();
                if (!made.ok()) {
                    firstError[t] = made.status();
                    ++failures[t];
                    return;
                }
                std::unique_ptr<StoreThread> h = std::move(made).value();
                for (int i = 0; i < kPutsPerThread; ++i) {
                    const std::string& key = keys[size_t(i + t) % keys.size()];
                    Status s = h->put(key, fmt::format("{}:{}:{}", key, t, i));
                    if (!s.ok() && failures[t]++ == 0)
                        firstError[t] = s;
                }
                conflicts[t] = h->conflicts();
            });
        }
        for (std::thread& th : threads)
            th.join();
        uint64_t retried = 0;
        for (int t = 0; t < kThreads; ++t) {
            CHECK_MESSAGE(failures[t] == 0,
                          "thread " << t << ": " << failures[t]
                                    << " failed puts, first: " << firstError[t].toString());
            retried += conflicts[t];
        }
        MESSAGE("autocommit write conflicts retried: " << retried);

        Handle h(store);
        REQUIRE_OK(h.made());
        for (const std::string& key : keys) {
            std::string v = h.get(key);
            // key:thread:i, with i one this thread wrote to this key.
            int t = -1, i = -1;
            char name[16] = {};
            CHECK_MESSAGE(std::sscanf(v.c_str(), "%15[^:]:%d:%d", name, &t, &i) == 3, v);
            CHECK(name == key);
            CHECK((t >= 0 && t < kThreads && i >= 0 && i < kPutsPerThread));
            CHECK(keys[size_t(i + t) % keys.size()] == key);
        }
    });
}

TEST_CASE("an autocommit write on a key an open transaction wrote waits it out, never conflicts") {
    forEachStore([](const StoreFactory& factory, Store& store) {
        Handle a(store);
        Handle b(store);
        REQUIRE_OK(a.made());
        REQUIRE_OK(b.made());
        REQUIRE_OK(a.put("x", "0"));
        REQUIRE_OK(a.begin(TxnKind::kReadWrite));
        REQUIRE_OK(a.put("x", "a"));

        // b's put runs while a's write is uncommitted (unless this thread is
        // slow to commit, which changes nothing below): WiredTiger and mvkv
        // retry it, LMDB queues it on the writer lock, RocksDB lets it through
        // and fails a's commit instead.
        Status bPut;
        uint64_t bConflicts = 0;
        std::thread writer([&] {
            bPut = b.call([&](StoreThread& t) {
                Status s = t.put("x", "b");
                bConflicts = t.conflicts();
                return s;
            });
        });
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        Status aCommit = a.commit();
        writer.join();
        CHECK_OK(bPut);
        if (factory.name == "rocksdb") {
            CHECK_MESSAGE((aCommit.ok() || aCommit.code() == StatusCode::kWriteConflict),
                          aCommit.toString());
        } else {
            CHECK_OK(aCommit);
        }
        if (!aCommit.ok())
            CHECK_OK(a.abort());
        CHECK(a.get("x") == "b");
        MESSAGE("autocommit retries while the transaction was open: " << bConflicts);
    });
}

TEST_CASE("settle() after a load keeps every entry; a handle's scans see later writes") {
    forEachStore([](const StoreFactory& factory, Store& store) {
        Handle h(store);
        REQUIRE_OK(h.made());
        Entries all;
        for (int i = 0; i < 1000; ++i)
            all.emplace_back(fmt::format("k{:04}", i), fmt::format("value-{}", i));
        REQUIRE_OK(h.begin(TxnKind::kReadWrite));
        for (const auto& [k, v] : all)
            REQUIRE_OK(h.put(k, v));
        REQUIRE_OK(h.commit());
        CHECK(h.scan("", 5) == Entries(all.begin(), all.begin() + 5));  // before settle

        REQUIRE_OK(store.settle());
        CHECK(h.scan("", 2000) == all);
        CHECK(h.get("k0500") == "value-500");
        if (factory.name == "rocksdb") {
            // Flushed and compacted: the memtable holds nothing of the load
            // and no L0 file is left for a read to probe.
            for (const auto& [name, value] : store.engineMetrics()) {
                CAPTURE(name);
                if (name == "l0_files")
                    CHECK(value == 0);
                if (name == "sst_bytes")
                    CHECK(value > 0);
            }
        }

        // The same handle's next scans see what was written and removed since.
        REQUIRE_OK(h.put("k0500a", "new"));
        REQUIRE_OK(h.remove("k0501"));
        CHECK(h.scan("k0500", 3) ==
              Entries{{"k0500", "value-500"}, {"k0500a", "new"}, {"k0502", "value-502"}});
    });
}
