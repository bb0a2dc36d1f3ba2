// Document locks (issue 17 part 2, docs/document-locks.md): acquire,
// release, releaseAll, refresh, inspect and list over `<ns>.lock` and its
// owner index; waits woken by a release, a removal of an expired lock or a
// take-over, and ended by killOp; fencing tokens (increasing, durable,
// replicated) and fenced writes. Time never passes for real: the wall
// clock is injected (EngineOptions::wallClock) and moved by the tests, and
// another thread is waited for by polling currentOp until it shows the
// acquisition asleep. The multi-threaded cases are in doctest's
// "concurrency" suite.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <latch>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "engine/document_locks.h"
#include "replication/replica.h"
#include "tests/engine_test_util.h"
#include "tests/temp_dir.h"
#include "tests/test_seed.h"

using namespace mvkv;
using namespace mvkv::engine;
using namespace mvkv::replication;
using namespace mvkv::engine::testing;
using json = nlohmann::json;
using mvkv::testing::TempDir;
using namespace std::chrono_literals;

namespace {

constexpr const char* kNs = "app.work";
constexpr const char* kLockNs = "app.work.lock";
constexpr const char* kOwnersNs = "app.work.lock.owners";

/// The injected wall clock: any thread reads it, the test moves it.
struct WallClock {
    std::atomic<int64_t> now{1'700'000'000'000};
    std::function<int64_t()> fn() {
        return [this] { return now.load(); };
    }
    void advance(std::chrono::milliseconds d) { now += d.count(); }
};

EngineOptions withClock(WallClock& clock, EngineOptions o = {}) {
    o.wallClock = clock.fn();
    o.historySweepInterval = 0ms;
    o.ttlMonitorSleep = 0ms;  // TTL passes run when a test says (runTtlPass)
    return o;
}

/// An engine with the collection app.work holding item1..item3.
std::unique_ptr<Engine> openWork(WallClock& clock, EngineOptions o = {}) {
    auto engine = openEngine(withClock(clock, std::move(o)));
    auto s = engine->openSession();
    REQUIRE_OK(s->createCollection(kNs));
    for (const char* k : {"item1", "item2", "item3"})
        REQUIRE_OK(s->put(kNs, k, std::string("v-") + k));
    return engine;
}

AcquireOptions as(std::string owner, std::chrono::milliseconds ttl = 30s,
                  std::chrono::milliseconds wait = 0ms) {
    AcquireOptions o;
    o.owner = std::move(owner);
    o.ttl = ttl;
    o.wait = wait;
    return o;
}

LockInfo mustAcquire(Session& s, std::string_view key, const AcquireOptions& o,
                     std::string_view ns = kNs) {
    auto r = DocumentLocks(s).acquire(ns, key, o);
    REQUIRE_MESSAGE(r.ok(), r.status().toString());
    return std::move(r).value();
}

WriteOptions fenced(const LockInfo& l) {
    WriteOptions w;
    w.fence = WriteFence{l.entry.owner, l.entry.token};
    return w;
}

/// Every key=value of `ns` (or "<NamespaceNotFound>").
std::string dumpOr(Session& s, std::string_view ns) {
    std::string out;
    Status st = s.scan(ns, {}, [&](std::string_view k, std::string_view v) {
        if (!out.empty())
            out += ',';
        for (char c : k)
            out += c == '\0' ? '|' : c;  // the owner index's separator, readably
        out += '=';
        out += v;
        return true;
    });
    if (!st.ok())
        return "<" + std::string(statusCodeName(st.code())) + ">";
    return out;
}

/// The owner index's document keys of `owner` in app.work.
std::vector<std::string> indexedKeys(Session& s, std::string_view owner) {
    std::vector<std::string> out;
    const std::string prefix = ownerKeyPrefix(owner);
    REQUIRE_OK(s.scan(kOwnersNs, {}, [&](std::string_view k, std::string_view) {
        if (k.starts_with(prefix))
            out.emplace_back(k.substr(prefix.size()));
        return true;
    }));
    return out;
}

size_t versionsOf(Session& s, std::string_view ns, std::string_view key) {
    auto h = s.keyHistory(ns, key);
    REQUIRE_MESSAGE(h.ok(), h.status().toString());
    return h.value().size();
}

json inprog(Engine& e) {
    json doc = json::parse(e.currentOp());
    REQUIRE(doc["inprog"].is_array());
    return doc["inprog"];
}

/// Polls currentOp until an acquisition of `key` sleeps; returns its entry.
/// The bound is a hang guard, not a timing the test depends on.
json waitForSleeper(Engine& e, std::string_view key) {
    const auto limit = std::chrono::steady_clock::now() + 60s;
    while (std::chrono::steady_clock::now() < limit) {
        for (const json& op : inprog(e))
            if (op.value("waitingForDocumentLock", false) &&
                op["command"].contains("acquireLock") && op["command"].value("key", "") == key)
                return op;
        std::this_thread::sleep_for(1ms);
    }
    FAIL("no acquisition of " << key << " ever slept");
    return nullptr;
}

json documentLocksStatus(Engine& e) {
    auto s = e.serverStatus("documentLocks");
    REQUIRE_OK(s.status());
    return json::parse(s.value())["documentLocks"];
}

}  // namespace

// ---------------------------------------------------------------------------
// Acquire, inspect, list, release
// ---------------------------------------------------------------------------

TEST_CASE("acquire writes a lock entry and an owner index entry; the document is untouched") {
    WallClock clock;
    auto engine = openWork(clock);
    auto s = engine->openSession();
    const size_t before = versionsOf(*s, kNs, "item1");
    CHECK_FALSE(engine->catalog().lookup(kLockNs));

    LockInfo l = mustAcquire(*s, "item1", as("alice", 30s));
    CHECK(l.ns == kNs);
    CHECK(l.key == "item1");
    CHECK(l.entry.owner == "alice");
    CHECK(l.entry.token >= 1);
    CHECK(l.entry.acquiredAtMs == clock.now.load());
    CHECK(l.entry.expiresAtMs == clock.now.load() + 30000);
    CHECK(l.remainingMs == 30000);
    CHECK_FALSE(l.expired);
    CHECK_FALSE(l.tookOver);

    // The collections, created by the first acquisition, hold the entry.
    CHECK(engine->catalog().lookup(kLockNs));
    CHECK(engine->catalog().lookup(kOwnersNs));
    const std::string entry =
        fmt::format(R"({{"owner":"alice","token":{},"acquiredAt":{},"expiresAt":{}}})",
                    l.entry.token, l.entry.acquiredAtMs, l.entry.expiresAtMs);
    CHECK(getOr(*s, kLockNs, "item1") == entry);
    CHECK(getOr(*s, kOwnersNs, ownerKey("alice", "item1")) == entry);
    CHECK(indexedKeys(*s, "alice") == std::vector<std::string>{"item1"});

    // Locking never writes the locked document.
    CHECK(versionsOf(*s, kNs, "item1") == before);
    CHECK(getOr(*s, kNs, "item1") == "v-item1");

    // inspect and list show it with its remaining time, as the clock moves.
    clock.advance(10s);
    auto seen = DocumentLocks(*s).inspect(kNs, "item1");
    REQUIRE_OK(seen.status());
    CHECK(seen.value().entry == l.entry);
    CHECK(seen.value().remainingMs == 20000);
    CHECK_CODE(DocumentLocks(*s).inspect(kNs, "item2").status(), StatusCode::kNotFound);
    mustAcquire(*s, "item2", as("bob", 5s));
    auto all = DocumentLocks(*s).list(kNs);
    REQUIRE_OK(all.status());
    REQUIRE(all.value().size() == 2);
    CHECK(all.value()[0].key == "item1");
    CHECK(all.value()[0].remainingMs == 20000);
    CHECK(all.value()[1].key == "item2");
    CHECK(all.value()[1].entry.owner == "bob");
    CHECK(all.value()[1].remainingMs == 5000);
    clock.advance(6s);
    all = DocumentLocks(*s).list(kNs);
    REQUIRE(all.value().size() == 2);
    CHECK(all.value()[1].expired);  // still present until removed or taken over
    CHECK(all.value()[1].remainingMs == 0);
}

TEST_CASE(
    "locking never writes the locked document: every lock call leaves its history as it was") {
    WallClock clock;
    auto engine = openWork(clock);
    auto s = engine->openSession();
    DocumentLocks locks(*s);
    auto before = s->keyHistory(kNs, "item1");
    REQUIRE_OK(before.status());
    mustAcquire(*s, "item1", as("alice", 10s));
    REQUIRE_OK(locks.refresh(kNs, "item1", "alice", 10s).status());
    REQUIRE_OK(locks.inspect(kNs, "item1").status());
    REQUIRE_OK(locks.list(kNs).status());
    CHECK_CODE(locks.acquire(kNs, "item1", as("bob")).status(), StatusCode::kDocumentLocked);
    clock.advance(11s);
    LockInfo b = mustAcquire(*s, "item1", as("bob", 10s));  // a take-over
    REQUIRE(b.tookOver);
    REQUIRE_OK(locks.release(kNs, "item1", "bob"));
    mustAcquire(*s, "item1", as("carol"));
    REQUIRE(locks.releaseAll("carol").value() == 1);
    auto after = s->keyHistory(kNs, "item1");
    REQUIRE_OK(after.status());
    REQUIRE(after.value().size() == before.value().size());
    for (size_t i = 0; i < before.value().size(); ++i) {
        CHECK(after.value()[i].value == before.value()[i].value);
        CHECK(after.value()[i].startTs == before.value()[i].startTs);
    }
    CHECK(getOr(*s, kNs, "item1") == "v-item1");
}

TEST_CASE("a held lock: DocumentLocked says when it expires, and names the owner only to it") {
    WallClock clock;
    auto engine = openWork(clock);
    auto s = engine->openSession();
    LockInfo l = mustAcquire(*s, "item1", as("alice", 30s));
    clock.advance(1s);
    const std::string lockBefore = dumpOr(*s, kLockNs);
    const std::string indexBefore = dumpOr(*s, kOwnersNs);

    auto other = DocumentLocks(*s).acquire(kNs, "item1", as("bob"));
    CHECK_CODE(other.status(), StatusCode::kDocumentLocked);
    const std::string& m = other.status().message();
    CHECK(m.find("item1") != std::string::npos);
    CHECK(m.find("2023-11-14T22:13:50.000+00:00") != std::string::npos);  // its expiry
    CHECK(m.find("29000 ms") != std::string::npos);
    CHECK(m.find("alice") == std::string::npos);  // not to someone else

    auto own = DocumentLocks(*s).acquire(kNs, "item1", as("alice"));
    CHECK_CODE(own.status(), StatusCode::kDocumentLocked);  // not reentrant
    CHECK(own.status().message().find("alice") != std::string::npos);
    CHECK(own.status().message().find("refresh") != std::string::npos);

    // An owner-less acquisition gets a generated owner: never the holder.
    auto anon = DocumentLocks(*s).acquire(kNs, "item1", {});
    CHECK_CODE(anon.status(), StatusCode::kDocumentLocked);

    // Nothing changed.
    CHECK(dumpOr(*s, kLockNs) == lockBefore);
    CHECK(dumpOr(*s, kOwnersNs) == indexBefore);
    CHECK(DocumentLocks(*s).inspect(kNs, "item1").value().entry == l.entry);
    CHECK(documentLocksStatus(*engine)["denied"] == 3);
}

TEST_CASE("a generated owner is 32 hex digits from the OS, new each time, and returned") {
    WallClock clock;
    auto engine = openWork(clock);
    auto s = engine->openSession();
    std::set<std::string> owners;
    for (const char* key : {"item1", "item2", "item3"}) {
        LockInfo l = mustAcquire(*s, key, {});
        CHECK(l.entry.owner.size() == 32);
        CHECK(l.entry.owner.find_first_not_of("0123456789abcdef") == std::string::npos);
        owners.insert(l.entry.owner);
        // The returned owner is the one that releases it.
        CHECK(DocumentLocks(*s).inspect(kNs, key).value().entry.owner == l.entry.owner);
    }
    CHECK(owners.size() == 3);
    auto g = DocumentLocks::generateOwner();
    REQUIRE_OK(g.status());
    CHECK(owners.count(g.value()) == 0);
}

TEST_CASE("release: only by the holder; NotFound when not locked; both entries go") {
    WallClock clock;
    auto engine = openWork(clock);
    auto s = engine->openSession();
    DocumentLocks locks(*s);
    LockInfo l = mustAcquire(*s, "item1", as("alice"));
    const std::string lockBefore = dumpOr(*s, kLockNs);
    const std::string indexBefore = dumpOr(*s, kOwnersNs);

    Status wrong = locks.release(kNs, "item1", "bob");
    CHECK_CODE(wrong, StatusCode::kNotLockOwner);
    CHECK(wrong.message().find("alice") == std::string::npos);
    CHECK(dumpOr(*s, kLockNs) == lockBefore);  // nothing changed
    CHECK(dumpOr(*s, kOwnersNs) == indexBefore);

    CHECK_CODE(locks.release(kNs, "item2", "alice"), StatusCode::kNotFound);
    REQUIRE_OK(locks.release(kNs, "item1", "alice"));
    CHECK(getOr(*s, kLockNs, "item1") == "<NotFound>");
    CHECK(indexedKeys(*s, "alice").empty());
    CHECK_CODE(locks.release(kNs, "item1", "alice"), StatusCode::kNotFound);
    // Free again: another owner takes it, with a larger token.
    LockInfo next = mustAcquire(*s, "item1", as("bob"));
    CHECK(next.entry.token > l.entry.token);
    CHECK(documentLocksStatus(*engine)["released"] == 1);
}

TEST_CASE("releaseAll goes through the owner indexes of every collection: exactly that owner's") {
    WallClock clock;
    auto engine = openWork(clock);
    auto s = engine->openSession();
    REQUIRE_OK(s->createCollection("app.other"));
    REQUIRE_OK(s->createCollection("shop.orders"));
    DocumentLocks locks(*s);
    mustAcquire(*s, "item1", as("session-x"));
    mustAcquire(*s, "item2", as("session-y"));
    mustAcquire(*s, "item3", as("session-x"));
    mustAcquire(*s, "a", as("session-x"), "app.other");
    mustAcquire(*s, "o1", as("session-x"), "shop.orders");
    mustAcquire(*s, "o2", as("session-y"), "shop.orders");
    // An owner whose name extends session-x's is another owner.
    mustAcquire(*s, "b", as("session-x2"), "app.other");
    // A stale index entry (its lock was removed without it, as the TTL
    // monitor may do): removed, not counted.
    mustAcquire(*s, "c", as("session-x"), "app.other");
    REQUIRE_OK(s->remove("app.other.lock", "c"));

    auto n = locks.releaseAll("session-x");
    REQUIRE_OK(n.status());
    CHECK(n.value() == 4);
    CHECK(dumpOr(*s, kLockNs).find("session-x\"") == std::string::npos);
    CHECK(getOr(*s, kLockNs, "item2").find("session-y") != std::string::npos);
    CHECK(getOr(*s, "shop.orders.lock", "o2").find("session-y") != std::string::npos);
    CHECK(getOr(*s, "app.other.lock", "b").find("session-x2") != std::string::npos);
    CHECK(getOr(*s, "app.other.lock", "a") == "<NotFound>");
    CHECK(getOr(*s, "shop.orders.lock", "o1") == "<NotFound>");
    CHECK(getOr(*s, "app.other.lock.owners", ownerKey("session-x", "c")) == "<NotFound>");
    CHECK(indexedKeys(*s, "session-x").empty());
    CHECK(indexedKeys(*s, "session-y") == std::vector<std::string>{"item2"});

    CHECK(locks.releaseAll("session-x").value() == 0);
    CHECK(locks.releaseAll("nobody").value() == 0);
    CHECK(locks.releaseAll("session-y").value() == 2);
    CHECK(locks.releaseAll("session-x2").value() == 1);
    CHECK(dumpOr(*s, kLockNs).empty());
    CHECK(documentLocksStatus(*engine)["released"] == 7);
}

// ---------------------------------------------------------------------------
// Expiry: take-over, refresh
// ---------------------------------------------------------------------------

TEST_CASE("an expired lock not yet removed is taken over in one transaction") {
    WallClock clock;
    auto engine = openWork(clock);
    auto s = engine->openSession();
    DocumentLocks locks(*s);
    LockInfo a = mustAcquire(*s, "item1", as("alice", 10s));
    clock.advance(10s);  // expiresAt == now: expired
    LockInfo b = mustAcquire(*s, "item1", as("bob", 30s));
    CHECK(b.tookOver);
    CHECK(b.entry.token > a.entry.token);
    CHECK(b.entry.acquiredAtMs == clock.now.load());
    CHECK(indexedKeys(*s, "alice").empty());  // the old owner's index entry went with it
    CHECK(indexedKeys(*s, "bob") == std::vector<std::string>{"item1"});
    CHECK(locks.inspect(kNs, "item1").value().entry == b.entry);

    // The old holder can neither release nor refresh it now.
    CHECK_CODE(locks.release(kNs, "item1", "alice"), StatusCode::kNotLockOwner);
    CHECK_CODE(locks.refresh(kNs, "item1", "alice", 30s).status(), StatusCode::kNotLockOwner);
    CHECK(locks.inspect(kNs, "item1").value().entry == b.entry);

    // An owner may take over its own expired lock: a new token.
    clock.advance(31s);
    LockInfo b2 = mustAcquire(*s, "item1", as("bob", 30s));
    CHECK(b2.tookOver);
    CHECK(b2.entry.token > b.entry.token);
    CHECK(indexedKeys(*s, "bob") == std::vector<std::string>{"item1"});
    json st = documentLocksStatus(*engine);
    CHECK(st["takeovers"] == 2);
    CHECK(st["acquired"] == 3);
}

TEST_CASE("refresh extends the holder's lock and keeps its token; an expired one is lost") {
    WallClock clock;
    auto engine = openWork(clock);
    auto s = engine->openSession();
    DocumentLocks locks(*s);
    LockInfo a = mustAcquire(*s, "item1", as("alice", 10s));
    clock.advance(8s);
    auto r = locks.refresh(kNs, "item1", "alice", 60s);
    REQUIRE_OK(r.status());
    CHECK(r.value().entry.token == a.entry.token);
    CHECK(r.value().entry.acquiredAtMs == a.entry.acquiredAtMs);
    CHECK(r.value().entry.expiresAtMs == clock.now.load() + 60000);
    CHECK(r.value().remainingMs == 60000);
    CHECK(getOr(*s, kOwnersNs, ownerKey("alice", "item1")) == getOr(*s, kLockNs, "item1"));
    clock.advance(59s);
    CHECK_CODE(locks.acquire(kNs, "item1", as("bob")).status(), StatusCode::kDocumentLocked);

    CHECK_CODE(locks.refresh(kNs, "item1", "bob", 60s).status(), StatusCode::kNotLockOwner);
    CHECK_CODE(locks.refresh(kNs, "item2", "alice", 60s).status(), StatusCode::kNotFound);
    clock.advance(1s);  // expired, not taken over
    const std::string before = dumpOr(*s, kLockNs);
    auto lost = locks.refresh(kNs, "item1", "alice", 60s);
    CHECK_CODE(lost.status(), StatusCode::kLockLost);
    CHECK(lost.status().message().find("acquire it again") != std::string::npos);
    CHECK(dumpOr(*s, kLockNs) == before);
    CHECK(documentLocksStatus(*engine)["refreshed"] == 1);
}

// ---------------------------------------------------------------------------
// Fenced writes
// ---------------------------------------------------------------------------

TEST_CASE("fenced writes by the holder succeed; the check rewrites the lock unchanged") {
    WallClock clock;
    auto engine = openWork(clock);
    auto s = engine->openSession();
    LockInfo l = mustAcquire(*s, "item1", as("alice"));
    const std::string lockValue = getOr(*s, kLockNs, "item1");
    REQUIRE_OK(s->put(kNs, "item1", "p", fenced(l)));
    CHECK(getOr(*s, kNs, "item1") == "p");
    REQUIRE_OK(s->update(kNs, "item1", "u", fenced(l)));
    CHECK(getOr(*s, kNs, "item1") == "u");
    REQUIRE_OK(s->remove(kNs, "item1", fenced(l)));
    CHECK(getOr(*s, kNs, "item1") == "<NotFound>");
    REQUIRE_OK(s->insert(kNs, "item1", "i", fenced(l)));
    CHECK(getOr(*s, kNs, "item1") == "i");
    CHECK(getOr(*s, kLockNs, "item1") == lockValue);
    // The write's own errors come through, and nothing is written.
    CHECK_CODE(s->insert(kNs, "item1", "dup", fenced(l)), StatusCode::kDuplicateKey);
    CHECK(getOr(*s, kNs, "item1") == "i");

    // Inside a transaction the check joins it.
    REQUIRE_OK(s->begin());
    REQUIRE_OK(s->put(kNs, "item1", "t1", fenced(l)));
    CHECK(getOr(*s, kNs, "item1") == "t1");
    REQUIRE_OK(s->commit());
    CHECK(getOr(*s, kNs, "item1") == "t1");
}

TEST_CASE(
    "a fenced write by a holder whose lock expired and was taken over: LockLost, nothing written") {
    WallClock clock;
    auto engine = openWork(clock);
    auto s = engine->openSession();
    LockInfo a = mustAcquire(*s, "item1", as("alice", 10s));
    clock.advance(11s);
    // Expired, not taken over yet: already lost.
    const size_t versions = versionsOf(*s, kNs, "item1");
    Status expired = s->put(kNs, "item1", "late", fenced(a));
    CHECK_CODE(expired, StatusCode::kLockLost);
    CHECK(expired.message().find("expired") != std::string::npos);

    LockInfo b = mustAcquire(*s, "item1", as("bob", 10s));
    REQUIRE(b.tookOver);
    for (auto write : std::vector<std::function<Status()>>{
             [&] { return s->put(kNs, "item1", "late", fenced(a)); },
             [&] { return s->update(kNs, "item1", "late", fenced(a)); },
             [&] { return s->remove(kNs, "item1", fenced(a)); },
             [&] { return s->insert(kNs, "item1", "late", fenced(a)); }}) {
        Status st = write();
        CHECK_CODE(st, StatusCode::kLockLost);
        CHECK(st.message().find("another owner holds it now") != std::string::npos);
    }
    CHECK(getOr(*s, kNs, "item1") == "v-item1");
    CHECK(versionsOf(*s, kNs, "item1") == versions);  // not even an aborted version

    // The same owner's older token is fenced off by its newer acquisition.
    REQUIRE_OK(DocumentLocks(*s).release(kNs, "item1", "bob"));
    LockInfo a2 = mustAcquire(*s, "item1", as("alice", 10s));
    Status stale = s->put(kNs, "item1", "late", fenced(a));
    CHECK_CODE(stale, StatusCode::kLockLost);
    CHECK(stale.message().find("later acquisition") != std::string::npos);
    REQUIRE_OK(DocumentLocks(*s).release(kNs, "item1", "alice"));
    Status released = s->put(kNs, "item1", "late", fenced(a2));
    CHECK_CODE(released, StatusCode::kLockLost);
    CHECK(released.message().find("not locked") != std::string::npos);
    CHECK(getOr(*s, kNs, "item1") == "v-item1");

    // Inside a transaction a failed check writes nothing and the
    // transaction goes on.
    mustAcquire(*s, "item1", as("bob", 10s));
    REQUIRE_OK(s->begin());
    CHECK_CODE(s->put(kNs, "item1", "late", fenced(a2)), StatusCode::kLockLost);
    REQUIRE_OK(s->put(kNs, "item2", "other"));
    REQUIRE_OK(s->commit());
    CHECK(getOr(*s, kNs, "item1") == "v-item1");
    CHECK(getOr(*s, kNs, "item2") == "other");
    CHECK(documentLocksStatus(*engine)["lockLost"] == 8);
}

TEST_CASE("a release committed after a fenced transaction's snapshot makes it conflict") {
    WallClock clock;
    auto engine = openWork(clock);
    auto holder = engine->openSession();
    auto other = engine->openSession();
    LockInfo l = mustAcquire(*holder, "item1", as("alice"));
    REQUIRE_OK(holder->begin());
    REQUIRE_OK(holder->put(kNs, "item2", "first"));  // the snapshot is taken
    // The lock goes (the same owner, elsewhere) after that snapshot.
    REQUIRE_OK(DocumentLocks(*other).release(kNs, "item1", "alice"));
    // The snapshot still shows the lock held, but the write cannot commit.
    CHECK_CODE(holder->put(kNs, "item1", "stale", fenced(l)), StatusCode::kWriteConflict);
    CHECK_FALSE(holder->inTransaction());
    CHECK(getOr(*other, kNs, "item1") == "v-item1");
    CHECK(getOr(*other, kNs, "item2") == "v-item2");
    // Outside a transaction the retry reads the new state: LockLost.
    CHECK_CODE(holder->put(kNs, "item1", "stale", fenced(l)), StatusCode::kLockLost);
}

// ---------------------------------------------------------------------------
// Tokens across a restart, a replica
// ---------------------------------------------------------------------------

TEST_CASE("tokens keep increasing across a restart; locks survive it") {
    WallClock clock;
    TempDir dir("mvkv-doclock");
    uint64_t maxToken = 0;
    LockInfo kept;
    {
        auto engine = openWork(clock, onDisk(dir.path, oplog::SyncMode::kNone));
        auto s = engine->openSession();
        DocumentLocks locks(*s);
        for (int i = 0; i < 5; ++i) {
            LockInfo l = mustAcquire(*s, "item1", as("alice"));
            CHECK(l.entry.token > maxToken);
            maxToken = l.entry.token;
            REQUIRE_OK(locks.release(kNs, "item1", "alice"));
        }
        kept = mustAcquire(*s, "item2", as("bob", 60s));
        CHECK(kept.entry.token > maxToken);
        maxToken = kept.entry.token;
        // The high-water mark is stored above every token handed out.
        auto mark = s->get(kOwnersNs, kFencingMarkKey);
        REQUIRE_OK(mark.status());
        CHECK(std::stoull(mark.value()) >= maxToken);
    }
    {
        auto engine = openEngine(withClock(clock, onDisk(dir.path, oplog::SyncMode::kNone)));
        auto s = engine->openSession();
        DocumentLocks locks(*s);
        auto seen = locks.inspect(kNs, "item2");
        REQUIRE_OK(seen.status());
        CHECK(seen.value().entry == kept.entry);
        CHECK_CODE(locks.acquire(kNs, "item2", as("carol")).status(), StatusCode::kDocumentLocked);
        LockInfo l = mustAcquire(*s, "item1", as("alice"));
        CHECK(l.entry.token > maxToken);
        maxToken = l.entry.token;
        REQUIRE_OK(locks.release(kNs, "item2", "bob"));
        LockInfo c = mustAcquire(*s, "item2", as("carol"));
        CHECK(c.entry.token > maxToken);
        REQUIRE_OK(engine->checkpoint());  // and from a checkpoint too
        maxToken = c.entry.token;
    }
    {
        auto engine = openEngine(withClock(clock, onDisk(dir.path, oplog::SyncMode::kNone)));
        auto s = engine->openSession();
        CHECK(DocumentLocks(*s).inspect(kNs, "item2").value().entry.owner == "carol");
        LockInfo l = mustAcquire(*s, "item3", as("dave"));
        CHECK(l.entry.token > maxToken);
    }
}

TEST_CASE("tokens go on increasing past a block of the high-water mark") {
    WallClock clock;
    auto engine = openWork(clock);
    auto s = engine->openSession();
    DocumentLocks locks(*s);
    uint64_t last = 0;
    const uint64_t rounds = FencingTokens::kBlock + 10;
    for (uint64_t i = 0; i < rounds; ++i) {
        LockInfo l = mustAcquire(*s, "item1", as("alice"));
        REQUIRE(l.entry.token > last);
        last = l.entry.token;
        REQUIRE_OK(locks.release(kNs, "item1", "alice"));
    }
    CHECK(last == rounds);
    CHECK(getOr(*s, kOwnersNs, kFencingMarkKey) == std::to_string(2 * FencingTokens::kBlock));
    CHECK(documentLocksStatus(*engine)["fencingMarksWritten"] == 2);
}

// ---------------------------------------------------------------------------
// Bad input
// ---------------------------------------------------------------------------

TEST_CASE("bad input: a clear error and nothing changed") {
    WallClock clock;
    auto engine = openWork(clock);
    auto s = engine->openSession();
    DocumentLocks locks(*s);
    auto code = [&](std::string_view ns, std::string_view key, const AcquireOptions& o) {
        return locks.acquire(ns, key, o).status();
    };
    // Before any lock: no lock collection may appear.
    CHECK_CODE(code(kNs, "item1", as("alice", 0ms)), StatusCode::kInvalidArgument);
    CHECK_CODE(code(kNs, "item1", as("alice", -5s)), StatusCode::kInvalidArgument);
    CHECK_CODE(code(kNs, "item1", as("alice", kMaxLockTtl + 1ms)), StatusCode::kInvalidArgument);
    CHECK_CODE(code(kNs, "item1", as("alice", 30s, -1ms)), StatusCode::kInvalidArgument);
    CHECK_CODE(code(kNs, "item1", as("alice", 30s, std::chrono::hours(24 * 366))),
               StatusCode::kInvalidArgument);
    CHECK_CODE(code(kNs, "item1", as("")), StatusCode::kInvalidArgument);
    CHECK_CODE(code(kNs, "item1", as(std::string("al\0ce", 5))), StatusCode::kInvalidArgument);
    CHECK_CODE(code(kNs, "item1", as("\xff\xfe")), StatusCode::kInvalidArgument);
    CHECK_CODE(code(kNs, "item1", as(std::string(kMaxOwnerBytes + 1, 'o'))),
               StatusCode::kInvalidArgument);
    CHECK_CODE(code(kNs, std::string(engine->options().maxKeyBytes - 2, 'k'), as("alice")),
               StatusCode::kInvalidArgument);  // owner + NUL + key over the key limit
    Status missing = code("app.nope", "item1", as("alice"));
    CHECK_CODE(missing, StatusCode::kNamespaceNotFound);
    CHECK(missing.message().find("app.nope") != std::string::npos);
    CHECK_CODE(code("bad name", "item1", as("alice")), StatusCode::kInvalidArgument);
    CHECK_CODE(code("app.x.lock", "k", as("alice")), StatusCode::kInvalidArgument);
    CHECK_CODE(code("app.x.lock.owners", "k", as("alice")), StatusCode::kInvalidArgument);
    REQUIRE_OK(s->begin());
    CHECK_CODE(code(kNs, "item1", as("alice")), StatusCode::kIllegalOperation);
    CHECK_CODE(locks.release(kNs, "item1", "alice"), StatusCode::kIllegalOperation);
    CHECK_CODE(locks.releaseAll("alice").status(), StatusCode::kIllegalOperation);
    REQUIRE_OK(s->abort());
    CHECK(engine->listCollections("app") == std::vector<std::string>{"work"});

    // With a lock in place: refused calls change nothing.
    mustAcquire(*s, "item1", as("alice"));
    const std::string lockBefore = dumpOr(*s, kLockNs);
    const std::string indexBefore = dumpOr(*s, kOwnersNs);
    CHECK_CODE(locks.refresh(kNs, "item1", "alice", 0ms).status(), StatusCode::kInvalidArgument);
    CHECK_CODE(locks.refresh(kNs, "item1", "alice", -1s).status(), StatusCode::kInvalidArgument);
    CHECK_CODE(locks.refresh(kNs, "item1", "", 1s).status(), StatusCode::kInvalidArgument);
    CHECK_CODE(locks.release(kNs, "item1", ""), StatusCode::kInvalidArgument);
    CHECK_CODE(locks.releaseAll("").status(), StatusCode::kInvalidArgument);
    CHECK_CODE(locks.releaseAll(std::string("a\0", 2)).status(), StatusCode::kInvalidArgument);
    CHECK_CODE(locks.release("app.nope", "item1", "alice"), StatusCode::kNamespaceNotFound);
    CHECK_CODE(locks.inspect("app.nope", "item1").status(), StatusCode::kNamespaceNotFound);
    CHECK_CODE(locks.list("app.nope").status(), StatusCode::kNamespaceNotFound);
    WriteOptions zero;
    zero.fence = WriteFence{"alice", 0};
    CHECK_CODE(s->put(kNs, "item1", "x", zero), StatusCode::kInvalidArgument);
    WriteOptions noOwner;
    noOwner.fence = WriteFence{"", 1};
    CHECK_CODE(s->put(kNs, "item1", "x", noOwner), StatusCode::kInvalidArgument);
    WriteOptions elsewhere;
    elsewhere.fence = WriteFence{"alice", 1};
    CHECK_CODE(s->put("app.nope", "item1", "x", elsewhere), StatusCode::kNamespaceNotFound);
    CHECK(dumpOr(*s, kLockNs) == lockBefore);
    CHECK(dumpOr(*s, kOwnersNs) == indexBefore);
    CHECK(getOr(*s, kNs, "item1") == "v-item1");
    CHECK(engine->listCollections("app") ==
          std::vector<std::string>{"work", "work.lock", "work.lock.owners"});

    // A lock entry written by hand that is not one: Corruption, not a crash.
    REQUIRE_OK(s->put(kLockNs, "item3", "not json"));
    CHECK_CODE(locks.acquire(kNs, "item3", as("alice")).status(), StatusCode::kCorruption);
    CHECK_CODE(locks.inspect(kNs, "item3").status(), StatusCode::kCorruption);
    CHECK_CODE(locks.list(kNs).status(), StatusCode::kCorruption);
}

TEST_CASE("a wait with a deadline that passes: DocumentLocked saying how long it waited") {
    WallClock clock;
    auto engine = openWork(clock);
    auto s = engine->openSession();
    mustAcquire(*s, "item1", as("alice"));
    auto r = DocumentLocks(*s).acquire(kNs, "item1", as("bob", 30s, 1ms));
    CHECK_CODE(r.status(), StatusCode::kDocumentLocked);
    CHECK(r.status().message().find("waited") != std::string::npos);
    json st = documentLocksStatus(*engine);
    CHECK(st["waits"] == 1);
    CHECK(st["denied"] == 1);
}

// ---------------------------------------------------------------------------
// Many threads (TSan runs these)
// ---------------------------------------------------------------------------

TEST_SUITE("concurrency") {
    TEST_CASE("8 threads race to lock one key: exactly one wins, the others get DocumentLocked") {
        WallClock clock;
        auto engine = openWork(clock);
        constexpr int kThreads = 8;
        std::vector<std::unique_ptr<Session>> sessions;
        for (int i = 0; i < kThreads; ++i)
            sessions.push_back(engine->openSession());
        std::vector<Status> results(kThreads);
        std::vector<uint64_t> tokens(kThreads, 0);
        std::latch start(kThreads);
        std::vector<std::thread> threads;
        for (int i = 0; i < kThreads; ++i)
            threads.emplace_back([&, i] {
                start.arrive_and_wait();
                auto r = DocumentLocks(*sessions[i])
                             .acquire(kNs, "item1", as(fmt::format("owner{}", i)));
                results[i] = r.status();
                if (r.ok())
                    tokens[i] = r.value().entry.token;
            });
        for (auto& t : threads)
            t.join();
        int winners = 0, locked = 0, winner = -1;
        for (int i = 0; i < kThreads; ++i) {
            INFO("thread " << i << ": " << results[i].toString());
            if (results[i].ok()) {
                ++winners;
                winner = i;
            } else {
                CHECK(results[i].code() == StatusCode::kDocumentLocked);
                locked += results[i].code() == StatusCode::kDocumentLocked;
            }
        }
        CHECK(winners == 1);
        CHECK(locked == kThreads - 1);
        REQUIRE(winner >= 0);
        auto s = engine->openSession();
        CHECK(DocumentLocks(*s).inspect(kNs, "item1").value().entry.owner ==
              fmt::format("owner{}", winner));
        // One lock entry and one index entry (and the fencing mark).
        CHECK(s->count(kLockNs).value() == 1);
        CHECK(s->count(kOwnersNs).value() == 2);
    }

    TEST_CASE("a waiter sleeps (currentOp shows it) and is woken by the release") {
        WallClock clock;
        auto engine = openWork(clock);
        auto holder = engine->openSession();
        auto waiter = engine->openSession();
        // An hour's lock: only the release's wake-up can end the wait in time.
        LockInfo a = mustAcquire(*holder, "item1", as("alice", 1h));
        StatusWith<LockInfo> got = Status::Internal("not run");
        std::thread t(
            [&] { got = DocumentLocks(*waiter).acquire(kNs, "item1", as("bob", 30s, 60s)); });
        json op = waitForSleeper(*engine, "item1");
        CHECK(op["ns"] == kNs);
        CHECK(op["op"] == "command");
        CHECK(op["waitingForLock"] == false);  // no lock-manager lock: a document lock
        REQUIRE_OK(DocumentLocks(*holder).release(kNs, "item1", "alice"));
        t.join();
        REQUIRE_OK(got.status());
        CHECK(got.value().entry.owner == "bob");
        CHECK(got.value().entry.token > a.entry.token);
        CHECK_FALSE(got.value().tookOver);
        CHECK(documentLocksStatus(*engine)["waits"] == 1);
    }

    TEST_CASE(
        "a waiter is woken by expiry: the clock passes it, then the TTL monitor removes it") {
        WallClock clock;
        auto engine = openWork(clock);
        auto holder = engine->openSession();
        auto waiter = engine->openSession();
        mustAcquire(*holder, "item1", as("alice", 1h));
        StatusWith<LockInfo> got = Status::Internal("not run");
        std::thread t(
            [&] { got = DocumentLocks(*waiter).acquire(kNs, "item1", as("bob", 30s, 60s)); });
        waitForSleeper(*engine, "item1");
        clock.advance(1h);
        // The lock collections are TTL collections: a pass deletes the
        // forgotten lock and its owner index entry, and that commit wakes
        // the waiter.
        auto pass = engine->runTtlPass();
        REQUIRE_OK(pass.status());
        CHECK(pass.value().deleted == 2);
        t.join();
        REQUIRE_OK(got.status());
        CHECK(got.value().entry.owner == "bob");
        CHECK_FALSE(got.value().tookOver);
    }

    TEST_CASE("a waiter is woken by a take-over, sleeps on, and gets the lock at its release") {
        WallClock clock;
        auto engine = openWork(clock);
        auto holder = engine->openSession();
        auto waiter = engine->openSession();
        auto third = engine->openSession();
        LockInfo a = mustAcquire(*holder, "item1", as("alice", 30s));
        StatusWith<LockInfo> got = Status::Internal("not run");
        std::thread t(
            [&] { got = DocumentLocks(*waiter).acquire(kNs, "item1", as("bob", 30s, 60s)); });
        waitForSleeper(*engine, "item1");
        clock.advance(30s);
        // Before the waiter's attempt or after: either it takes the expired
        // lock over itself, or carol does and it waits for her.
        auto c = DocumentLocks(*third).acquire(kNs, "item1", as("carol", 30s));
        if (c.ok()) {
            CHECK(c.value().tookOver);
            waitForSleeper(*engine, "item1");
            REQUIRE_OK(DocumentLocks(*third).release(kNs, "item1", "carol"));
            t.join();
            REQUIRE_OK(got.status());
            CHECK(got.value().entry.token > c.value().entry.token);
            CHECK_FALSE(got.value().tookOver);
        } else {
            CHECK_CODE(c.status(), StatusCode::kDocumentLocked);
            t.join();
            REQUIRE_OK(got.status());
            CHECK(got.value().tookOver);
        }
        CHECK(got.value().entry.owner == "bob");
        CHECK(got.value().entry.token > a.entry.token);
    }

    TEST_CASE("killOp ends a wait with Interrupted; Session::interrupt too; nothing changed") {
        WallClock clock;
        auto engine = openWork(clock);
        auto holder = engine->openSession();
        auto waiter = engine->openSession();
        LockInfo a = mustAcquire(*holder, "item1", as("alice"));
        const std::string lockBefore = dumpOr(*holder, kLockNs);
        const std::string indexBefore = dumpOr(*holder, kOwnersNs);

        StatusWith<LockInfo> got = Status::Internal("not run");
        std::thread t(
            [&] { got = DocumentLocks(*waiter).acquire(kNs, "item1", as("bob", 30s, 600s)); });
        json op = waitForSleeper(*engine, "item1");
        REQUIRE_OK(engine->killOp(op["opid"].get<uint64_t>()));
        t.join();
        CHECK_CODE(got.status(), StatusCode::kInterrupted);
        CHECK(got.status().message().find("item1") != std::string::npos);

        std::thread t2(
            [&] { got = DocumentLocks(*waiter).acquire(kNs, "item1", as("bob", 30s, 600s)); });
        waitForSleeper(*engine, "item1");
        waiter->interrupt();
        t2.join();
        CHECK_CODE(got.status(), StatusCode::kInterrupted);

        CHECK(dumpOr(*holder, kLockNs) == lockBefore);
        CHECK(dumpOr(*holder, kOwnersNs) == indexBefore);
        CHECK(DocumentLocks(*holder).inspect(kNs, "item1").value().entry == a.entry);
        // The interrupt is forgotten: the waiter's next operation runs.
        CHECK(DocumentLocks(*waiter).acquire(kNs, "item2", as("bob")).ok());
        auto metrics = json::parse(engine->serverStatus("metrics").value());
        CHECK(metrics["metrics"]["operation"]["killed"] == 1);
    }

    TEST_CASE("4 threads take turns through waits: fenced increments are never lost") {
        const uint32_t seed = mvkv::testing::testSeed();
        WallClock clock;
        auto engine = openWork(clock);
        {
            auto s = engine->openSession();
            REQUIRE_OK(s->put(kNs, "counter", "0"));
        }
        constexpr int kThreads = 4;
        constexpr int kRounds = 50;
        std::vector<std::string> errors(kThreads);
        std::vector<std::vector<uint64_t>> tokens(kThreads);
        std::vector<std::thread> threads;
        for (int i = 0; i < kThreads; ++i)
            threads.emplace_back([&, i] {
                auto s = engine->openSession();
                std::mt19937 rng(seed + i);
                DocumentLocks locks(*s);
                for (int r = 0; r < kRounds; ++r) {
                    auto l = locks.acquire(kNs, "counter", as(fmt::format("t{}", i), 60s, 60s));
                    if (!l.ok()) {
                        errors[i] = l.status().toString();
                        return;
                    }
                    tokens[i].push_back(l.value().entry.token);
                    auto v = s->get(kNs, "counter");
                    Status w =
                        v.ok() ? s->put(kNs, "counter", std::to_string(std::stoi(v.value()) + 1),
                                        fenced(l.value()))
                               : v.status();
                    // Sometimes a release, sometimes releaseAll: both wake.
                    Status u = rng() % 2 ? locks.release(kNs, "counter", l.value().entry.owner)
                                         : locks.releaseAll(l.value().entry.owner).status();
                    if (!w.ok() || !u.ok()) {
                        errors[i] = w.ok() ? u.toString() : w.toString();
                        return;
                    }
                }
            });
        for (auto& t : threads)
            t.join();
        for (int i = 0; i < kThreads; ++i) {
            CHECK_MESSAGE(errors[i].empty(), errors[i]);
            for (size_t j = 1; j < tokens[i].size(); ++j)
                CHECK(tokens[i][j] > tokens[i][j - 1]);
        }
        auto s = engine->openSession();
        CHECK(getOr(*s, kNs, "counter") == std::to_string(kThreads * kRounds));
        std::set<uint64_t> all;
        for (const auto& v : tokens)
            all.insert(v.begin(), v.end());
        CHECK(all.size() == size_t(kThreads * kRounds));  // every grant its own token
        CHECK(dumpOr(*s, kLockNs).empty());
    }

    TEST_CASE("locks reach a replica through the oplog, and their release too") {
        WallClock clock;
        TempDir dir("mvkv-doclock-replica");
        auto primary = openWork(clock, onDisk(dir.path, oplog::SyncMode::kNone));
        auto secondary = openEngine(withClock(clock));
        ReplicaOptions r;
        r.workers = 2;
        r.pollWait = 10ms;
        auto applier = ReplicaApplier::start(*primary, *secondary, r);
        REQUIRE_OK(applier.status());
        auto p = primary->openSession();
        LockInfo l = mustAcquire(*p, "item1", as("alice", 60s));
        LockInfo m = mustAcquire(*p, "item2", as("bob", 60s));
        REQUIRE_OK(applier.value()->waitApplied(p->lastCommitTs(), 30s));
        auto s = secondary->openSession();
        auto seen = DocumentLocks(*s).list(kNs);
        REQUIRE_OK(seen.status());
        REQUIRE(seen.value().size() == 2);
        CHECK(seen.value()[0].entry == l.entry);
        CHECK(seen.value()[1].entry == m.entry);
        CHECK(getOr(*s, kOwnersNs, ownerKey("alice", "item1")) == getOr(*p, kLockNs, "item1"));
        CHECK(getOr(*s, kOwnersNs, kFencingMarkKey) == getOr(*p, kOwnersNs, kFencingMarkKey));

        REQUIRE_OK(DocumentLocks(*p).release(kNs, "item1", "alice"));
        REQUIRE_OK(applier.value()->waitApplied(p->lastCommitTs(), 30s));
        CHECK_CODE(DocumentLocks(*s).inspect(kNs, "item1").status(), StatusCode::kNotFound);
        CHECK(DocumentLocks(*s).inspect(kNs, "item2").value().entry == m.entry);

        // bob forgets item2: the primary's TTL monitor removes it, and the
        // replica learns it from the oplog (its own engine never deletes).
        clock.advance(61s);
        auto pass = primary->runTtlPass();
        REQUIRE_OK(pass.status());
        CHECK(pass.value().deleted == 2);  // the lock entry and its owner index entry
        REQUIRE_OK(applier.value()->waitApplied(primary->timestamps().allDurable, 30s));
        CHECK_CODE(DocumentLocks(*s).inspect(kNs, "item2").status(), StatusCode::kNotFound);
        CHECK(getOr(*s, kOwnersNs, kFencingMarkKey) == getOr(*p, kOwnersNs, kFencingMarkKey));
        applier.value()->stop();
    }

}  // TEST_SUITE("concurrency")
