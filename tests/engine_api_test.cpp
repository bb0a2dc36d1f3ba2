// Engine / Session / Cursor API: catalog, CRUD, cursors, limits and bad input.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "tests/engine_test_util.h"

using namespace mvkv;
using namespace mvkv::engine;
using namespace mvkv::engine::testing;
using std::chrono::milliseconds;

TEST_CASE("open refuses impossible options with InvalidArgument") {
    EngineOptions o;
    o.maxKeyBytes = 0;
    CHECK(Engine::open(o).status().code() == StatusCode::kInvalidArgument);
    o = {};
    o.maxValueBytes = 0;
    CHECK(Engine::open(o).status().code() == StatusCode::kInvalidArgument);
    o = {};
    o.lockTimeout = milliseconds(-1);
    CHECK(Engine::open(o).status().code() == StatusCode::kInvalidArgument);
    o = {};
    o.writeConflictRetryTimeout = milliseconds(-5);
    CHECK(Engine::open(o).status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("collections are created, listed and dropped; databases exist while they have one") {
    auto e = openEngine();
    auto s = e->openSession();
    REQUIRE_OK(s->createCollection("app.users"));
    REQUIRE_OK(s->createCollection("app.orders"));
    REQUIRE_OK(s->createCollection("shop.items"));
    CHECK(s->createCollection("app.users").code() == StatusCode::kNamespaceExists);
    CHECK(e->listDatabases() == std::vector<std::string>{"app", "shop"});
    CHECK(e->listCollections("app") == std::vector<std::string>{"orders", "users"});
    REQUIRE_OK(s->dropCollection("app.orders"));
    CHECK(s->dropCollection("app.orders").code() == StatusCode::kNamespaceNotFound);
    CHECK(e->listCollections("app") == std::vector<std::string>{"users"});
    REQUIRE_OK(s->dropDatabase("shop"));
    CHECK(e->listDatabases() == std::vector<std::string>{"app"});
    CHECK(s->dropDatabase("shop").code() == StatusCode::kNamespaceNotFound);
}

TEST_CASE("bad names are refused with a clear InvalidArgument and create nothing") {
    auto e = openEngine();
    auto s = e->openSession();
    for (std::string_view bad :
         std::vector<std::string_view>{"nodot", ".coll", "db.", "d b.c", "d$b.c", "db.c$x",
                                       "db.system.x", "a/b.c", std::string_view("db.c\0x", 6)}) {
        Status st = s->createCollection(bad);
        CHECK_MESSAGE(st.code() == StatusCode::kInvalidArgument, bad);
        CHECK(!st.message().empty());
    }
    Status local = s->createCollection("local.mine");
    CHECK(local.code() == StatusCode::kInvalidArgument);
    CHECK(local.message().find("reserved") != std::string::npos);
    CHECK(s->dropDatabase("local").code() == StatusCode::kInvalidArgument);
    CHECK(s->dropDatabase("").code() == StatusCode::kInvalidArgument);
    CHECK(e->listDatabases().empty());
    // Dots are allowed inside the collection part.
    CHECK_OK(s->createCollection("db.a.b"));
    CHECK(e->listCollections("db") == std::vector<std::string>{"a.b"});
}

TEST_CASE("put, insert, update, remove and get behave as upsert and strict variants") {
    auto e = openEngine();
    auto s = e->openSession();
    REQUIRE_OK(s->createCollection("t.c"));
    CHECK(getOr(*s, "t.c", "k") == "<NotFound>");
    CHECK_OK(s->put("t.c", "k", "v1"));
    CHECK(getOr(*s, "t.c", "k") == "v1");
    CHECK_OK(s->put("t.c", "k", "v2"));
    CHECK(getOr(*s, "t.c", "k") == "v2");
    Status dup = s->insert("t.c", "k", "v3");
    CHECK(dup.code() == StatusCode::kDuplicateKey);
    CHECK(dup.message().find("t.c") != std::string::npos);
    CHECK(getOr(*s, "t.c", "k") == "v2");
    CHECK(s->update("t.c", "missing", "x").code() == StatusCode::kNotFound);
    CHECK(s->remove("t.c", "missing").code() == StatusCode::kNotFound);
    CHECK(getOr(*s, "t.c", "missing") == "<NotFound>");
    CHECK_OK(s->update("t.c", "k", "v4"));
    CHECK(getOr(*s, "t.c", "k") == "v4");
    CHECK_OK(s->remove("t.c", "k"));
    CHECK(getOr(*s, "t.c", "k") == "<NotFound>");
    CHECK(s->update("t.c", "k", "x").code() == StatusCode::kNotFound);
    CHECK_OK(s->insert("t.c", "k", "v5"));  // insert after delete is fine
    CHECK(getOr(*s, "t.c", "k") == "v5");
}

TEST_CASE("keys and values are bytes: NUL, 0xff, empty") {
    auto e = openEngine();
    auto s = e->openSession();
    REQUIRE_OK(s->createCollection("t.bin"));
    std::string k1("a\0b", 3), k2("a\0c", 3), v("\0\xff\x01", 3);
    CHECK_OK(s->put("t.bin", k1, v));
    CHECK_OK(s->put("t.bin", k2, ""));
    CHECK_OK(s->put("t.bin", "", "empty key"));
    CHECK(getOr(*s, "t.bin", k1) == v);
    CHECK(getOr(*s, "t.bin", k2) == "");
    CHECK(getOr(*s, "t.bin", "") == "empty key");
    CHECK(getOr(*s, "t.bin", "a") == "<NotFound>");
}

TEST_CASE("operations on a missing or dropped collection fail with NamespaceNotFound") {
    auto e = openEngine();
    auto s = e->openSession();
    CHECK(s->put("t.none", "k", "v").code() == StatusCode::kNamespaceNotFound);
    CHECK(s->get("t.none", "k").status().code() == StatusCode::kNamespaceNotFound);
    CHECK(s->openCursor("t.none").status().code() == StatusCode::kNamespaceNotFound);
    REQUIRE_OK(s->createCollection("t.c"));
    REQUIRE_OK(s->put("t.c", "k", "v"));
    REQUIRE_OK(s->dropCollection("t.c"));
    Status st = s->get("t.c", "k").status();
    CHECK(st.code() == StatusCode::kNamespaceNotFound);
    CHECK(st.message().find("create it first") != std::string::npos);
    CHECK(s->remove("t.c", "k").code() == StatusCode::kNamespaceNotFound);
    // Re-created, it starts empty.
    REQUIRE_OK(s->createCollection("t.c"));
    CHECK(getOr(*s, "t.c", "k") == "<NotFound>");
    CHECK(s->get("bad name", "k").status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("oversized keys and values are refused and nothing is written") {
    EngineOptions o;
    o.maxKeyBytes = 8;
    o.maxValueBytes = 16;
    auto e = openEngine(o);
    auto s = e->openSession();
    REQUIRE_OK(s->createCollection("t.c"));
    Status bigKey = s->put("t.c", "123456789", "v");
    CHECK(bigKey.code() == StatusCode::kInvalidArgument);
    CHECK(bigKey.message().find("limit is 8") != std::string::npos);
    CHECK(s->put("t.c", "k", std::string(17, 'x')).code() == StatusCode::kInvalidArgument);
    CHECK(s->get("t.c", "123456789").status().code() == StatusCode::kInvalidArgument);
    CHECK_OK(s->put("t.c", "12345678", std::string(16, 'x')));
    CHECK(scanAll(*s, "t.c") == "12345678=" + std::string(16, 'x'));
    // Inside a transaction the refusal leaves the transaction usable.
    REQUIRE_OK(s->begin());
    CHECK(s->put("t.c", "k", std::string(17, 'x')).code() == StatusCode::kInvalidArgument);
    CHECK_OK(s->put("t.c", "k", "ok"));
    CHECK_OK(s->commit());
    CHECK(getOr(*s, "t.c", "k") == "ok");

    auto defaults = openEngine();
    auto d = defaults->openSession();
    REQUIRE_OK(d->createCollection("t.c"));
    CHECK(d->put("t.c", std::string(4097, 'k'), "v").code() == StatusCode::kInvalidArgument);
    CHECK_OK(d->put("t.c", std::string(4096, 'k'), "v"));
    CHECK(d->put("t.c", "k", std::string(16 * 1024 * 1024 + 1, 'v')).code() ==
          StatusCode::kInvalidArgument);
}

TEST_CASE("transaction misuse is IllegalOperation and changes nothing") {
    auto e = openEngine();
    auto s = e->openSession();
    REQUIRE_OK(s->createCollection("t.c"));
    CHECK(s->commit().code() == StatusCode::kIllegalOperation);
    CHECK(s->abort().code() == StatusCode::kIllegalOperation);
    CHECK(s->timestampTransaction(5).code() == StatusCode::kIllegalOperation);
    REQUIRE_OK(s->begin());
    CHECK_OK(s->put("t.c", "k", "v"));
    Status second = s->begin();
    CHECK(second.code() == StatusCode::kIllegalOperation);
    CHECK(s->inTransaction());
    CHECK(s->createCollection("t.d").code() == StatusCode::kIllegalOperation);
    CHECK(s->dropCollection("t.c").code() == StatusCode::kIllegalOperation);
    CHECK(s->dropDatabase("t").code() == StatusCode::kIllegalOperation);
    CHECK_OK(s->commit());
    CHECK(getOr(*s, "t.c", "k") == "v");
    CHECK(s->commit().code() == StatusCode::kIllegalOperation);
}

TEST_CASE("cursors iterate live keys in order, both ways, and seek") {
    auto e = openEngine();
    auto s = e->openSession();
    REQUIRE_OK(s->createCollection("t.c"));
    for (const char* k : {"b", "d", "f", "h"})
        REQUIRE_OK(s->put("t.c", k, std::string("v") + k));
    REQUIRE_OK(s->put("t.c", "e", "ve"));
    REQUIRE_OK(s->remove("t.c", "e"));  // a tombstone the cursor must skip
    CHECK(scanAll(*s, "t.c") == "b=vb,d=vd,f=vf,h=vh");
    CHECK(scanAll(*s, "t.c", true) == "h=vh,f=vf,d=vd,b=vb");

    auto c = s->openCursor("t.c");
    REQUIRE(c.ok());
    Cursor& cur = *c.value();
    REQUIRE_OK(cur.seek("c"));
    REQUIRE(cur.valid());
    CHECK(cur.key() == "d");
    REQUIRE_OK(cur.seek("d"));
    CHECK(cur.key() == "d");
    REQUIRE_OK(cur.seek("e"));  // deleted: lands on the next live key
    CHECK(cur.key() == "f");
    REQUIRE_OK(cur.seek("i"));
    CHECK_FALSE(cur.valid());
    REQUIRE_OK(cur.next());  // stays unpositioned
    CHECK_FALSE(cur.valid());
    REQUIRE_OK(cur.seekForPrev("e"));
    CHECK(cur.key() == "d");
    REQUIRE_OK(cur.seekForPrev("a"));
    CHECK_FALSE(cur.valid());
    REQUIRE_OK(cur.seekForPrev("zzz"));
    CHECK(cur.key() == "h");
    REQUIRE_OK(cur.prev());
    CHECK(cur.key() == "f");
    CHECK(cur.value() == "vf");
}

TEST_CASE("a cursor outside a transaction reads one snapshot for its whole life") {
    auto e = openEngine();
    auto s = e->openSession();
    auto w = e->openSession();
    REQUIRE_OK(s->createCollection("t.c"));
    REQUIRE_OK(s->put("t.c", "a", "1"));
    REQUIRE_OK(s->put("t.c", "c", "1"));
    auto c = s->openCursor("t.c");
    REQUIRE(c.ok());
    REQUIRE_OK(w->put("t.c", "b", "new"));  // after the cursor's snapshot
    REQUIRE_OK(w->put("t.c", "c", "2"));
    Cursor& cur = *c.value();
    std::string seen;
    for (mustOk(cur.first()); cur.valid(); mustOk(cur.next()))
        seen += std::string(cur.key()) + "=" + std::string(cur.value()) + ";";
    CHECK(seen == "a=1;c=1;");
    c.value().reset();  // close the cursor
    CHECK(scanAll(*s, "t.c") == "a=1,b=new,c=2");
}

TEST_CASE("a cursor in a transaction sees its own writes, even later ones, and dies with it") {
    auto e = openEngine();
    auto s = e->openSession();
    REQUIRE_OK(s->createCollection("t.c"));
    REQUIRE_OK(s->put("t.c", "a", "1"));
    REQUIRE_OK(s->put("t.c", "b", "1"));
    REQUIRE_OK(s->begin());
    auto c = s->openCursor("t.c");
    REQUIRE(c.ok());
    REQUIRE_OK(s->put("t.c", "aa", "mine"));
    REQUIRE_OK(s->remove("t.c", "b"));
    Cursor& cur = *c.value();
    std::string seen;
    for (mustOk(cur.first()); cur.valid(); mustOk(cur.next()))
        seen += std::string(cur.key()) + "=" + std::string(cur.value()) + ";";
    CHECK(seen == "a=1;aa=mine;");
    mustOk(s->commit());
    CHECK(cur.first().code() == StatusCode::kIllegalOperation);
    CHECK(cur.next().code() == StatusCode::kIllegalOperation);
}

TEST_CASE("cursor steps agree with a model across leaves, tombstones and later own updates") {
    // Steps inside a leaf's batch take the cheap path (engine/cursor.cpp,
    // stepInBatch); refills and runs of removed keys take the full one.
    // Random runs of removed keys put invisible entries at batch ends.
    const uint64_t seed = std::random_device{}();
    INFO("seed " << seed);
    MESSAGE("cursor model seed " << seed);
    std::mt19937_64 rng(seed);
    auto e = openEngine();
    auto s = e->openSession();
    auto w = e->openSession();
    REQUIRE_OK(s->createCollection("t.c"));
    std::map<std::string, std::string> model;
    for (int i = 0; i < 1000; ++i) {
        std::string k = fmt::format("k{:04}", i);
        REQUIRE_OK(s->put("t.c", k, "v" + k));
        model[k] = "v" + k;
    }
    for (int run = 0; run < 12; ++run) {
        int from = int(rng() % 1000), len = 1 + int(rng() % 150);
        for (int i = from; i < std::min(1000, from + len); ++i) {
            std::string k = fmt::format("k{:04}", i);
            if (model.erase(k) == 1)
                REQUIRE_OK(s->remove("t.c", k));
        }
    }
    std::string expectForward, expectBackward;
    for (const auto& [k, v] : model)
        expectForward += k + "=" + v + ",";
    for (auto it = model.rbegin(); it != model.rend(); ++it)
        expectBackward += it->first + "=" + it->second + ",";
    auto walk = [&](bool forward) {
        auto c = s->openCursor("t.c");
        REQUIRE_OK(c.status());
        Cursor& cur = *c.value();
        std::string seen;
        for (mustOk(forward ? cur.first() : cur.last()); cur.valid();
             mustOk(forward ? cur.next() : cur.prev()))
            seen += std::string(cur.key()) + "=" + std::string(cur.value()) + ",";
        return seen;
    };
    CHECK(walk(true) == expectForward);
    CHECK(walk(false) == expectBackward);

    // In a transaction: updates of keys just ahead, made after the cursor
    // was positioned (inside the batch it holds), are read; another
    // session's later commit is not.
    REQUIRE(model.size() > 8);
    auto start = model.begin();
    std::advance(start, model.size() / 2);
    REQUIRE_OK(s->begin());
    auto c = s->openCursor("t.c");
    REQUIRE_OK(c.status());
    Cursor& cur = *c.value();
    REQUIRE_OK(cur.seek(start->first));
    auto ahead = std::next(start);
    REQUIRE_OK(s->put("t.c", ahead->first, "mine"));
    REQUIRE_OK(w->put("t.c", std::next(ahead)->first, "theirs"));
    REQUIRE_OK(cur.next());
    CHECK(cur.key() == ahead->first);
    CHECK(cur.value() == "mine");
    REQUIRE_OK(cur.next());
    CHECK(cur.key() == std::next(ahead)->first);
    CHECK(cur.value() == std::next(ahead)->second);
    c.value().reset();
    REQUIRE_OK(s->abort());
}

TEST_CASE("a cursor sees its transaction's later writes inside the leaf batch it holds") {
    // A cursor copies a leaf's keys at a time (btree/cursor.cpp). Writes of
    // its own transaction made while it stands inside that copy are still
    // read: an update, a removal, and a key inserted between two entries
    // of the copy (engine/cursor.cpp reloads the batch after such a write).
    auto e = openEngine();
    auto s = e->openSession();
    auto w = e->openSession();
    REQUIRE_OK(s->createCollection("t.c"));
    for (int i = 0; i < 40; i += 2)  // k00, k02, ... k38: one leaf
        REQUIRE_OK(s->put("t.c", fmt::format("k{:02}", i), "old"));
    for (bool forward : {true, false}) {
        CAPTURE(forward);
        REQUIRE_OK(s->begin());
        auto c = s->openCursor("t.c");
        REQUIRE_OK(c.status());
        Cursor& cur = *c.value();
        auto step = [&] { mustOk(forward ? cur.next() : cur.prev()); };
        // k10 k12 | k14 ... forward; k30 k28 | k26 ... backward.
        REQUIRE_OK(forward ? cur.seek("k10") : cur.seekForPrev("k30"));
        step();
        REQUIRE(cur.valid());
        CHECK(cur.key() == (forward ? "k12" : "k28"));
        REQUIRE_OK(s->put("t.c", forward ? "k14" : "k26", "mine"));
        REQUIRE_OK(s->remove("t.c", forward ? "k16" : "k24"));
        REQUIRE_OK(s->put("t.c", forward ? "k17" : "k23", "new"));
        REQUIRE_OK(w->put("t.c", forward ? "k18" : "k22", "theirs"));  // after the snapshot
        std::string seen;
        for (int n = 0; n < 4 && cur.valid(); ++n) {
            step();
            seen += std::string(cur.key()) + "=" + std::string(cur.value()) + ",";
        }
        CHECK(seen == (forward ? "k14=mine,k17=new,k18=old,k20=old,"
                               : "k26=mine,k23=new,k22=old,k20=old,"));
        c.value().reset();
        REQUIRE_OK(s->abort());
        REQUIRE_OK(w->put("t.c", forward ? "k18" : "k22", "old"));
    }
}

TEST_CASE("stats count keys and bytes per collection and transactions engine-wide") {
    auto e = openEngine();
    auto s = e->openSession();
    REQUIRE_OK(s->createCollection("t.c"));
    REQUIRE_OK(s->put("t.c", "ab", "1234"));    // 2 + 4
    REQUIRE_OK(s->put("t.c", "cd", "12"));      // 2 + 2
    REQUIRE_OK(s->put("t.c", "ab", "123456"));  // replaces: 2 + 6
    REQUIRE_OK(s->put("t.c", "gone", "x"));
    REQUIRE_OK(s->remove("t.c", "gone"));
    REQUIRE_OK(s->begin());
    REQUIRE_OK(s->put("t.c", "ef", "1"));
    REQUIRE_OK(s->put("t.c", "ef", "12"));  // twice in one txn: counted once
    REQUIRE_OK(s->commit());
    REQUIRE_OK(s->begin());
    REQUIRE_OK(s->put("t.c", "zz", "aborted"));
    REQUIRE_OK(s->abort());
    EngineStats st = e->stats();
    REQUIRE(st.collections.size() == 1);
    const CollectionStats& cs = st.collections[0];
    CHECK(cs.ns == "t.c");
    CHECK(cs.keys == 3);
    CHECK(cs.bytes == (2 + 6) + (2 + 2) + (2 + 2));
    CHECK(cs.chains == 5);  // ab, cd, ef, gone, zz
    CHECK(cs.maxChainLength == 2);
    CHECK(st.maxChainLength == 2);
    CHECK(st.transactions.aborted == 1);
    CHECK(st.transactions.committed >= 6);
    CHECK(st.transactions.active == 0);
    CHECK(st.sessions == 1);
    auto j = nlohmann::json::parse(e->statsJson());
    CHECK(j["collections"]["t.c"]["keys"] == 3);
    CHECK(j["transactions"]["aborted"] == 1);
    CHECK(j.contains("timestamps"));
    CHECK(j["locks"].is_object());
    CHECK(j["updateChains"]["maxLength"] == 2);
}

TEST_CASE("drop waits for a transaction's intent lock and times out with LockTimeout") {
    auto e = openEngine();
    auto a = e->openSession();
    auto b = e->openSession();
    REQUIRE_OK(a->createCollection("t.c"));
    REQUIRE_OK(a->begin());
    REQUIRE_OK(a->put("t.c", "k", "v"));
    b->setLockTimeout(milliseconds(20));
    Status st = b->dropCollection("t.c");
    CHECK(st.code() == StatusCode::kLockTimeout);
    CHECK(getOr(*b, "t.c", "k") == "<NotFound>");  // the collection is still there
    REQUIRE_OK(a->commit());
    CHECK_OK(b->dropCollection("t.c"));
}

TEST_CASE("a session never writes into a collection another session dropped and re-created") {
    auto e = openEngine();
    auto a = e->openSession();
    auto b = e->openSession();
    REQUIRE_OK(a->createCollection("t.c"));
    REQUIRE_OK(a->put("t.c", "old", "1"));  // a now knows t.c
    REQUIRE_OK(b->dropCollection("t.c"));
    CHECK(a->put("t.c", "k", "v").code() == StatusCode::kNamespaceNotFound);
    REQUIRE_OK(b->createCollection("t.c"));
    CHECK(getOr(*a, "t.c", "old") == "<NotFound>");
    REQUIRE_OK(a->put("t.c", "new", "2"));
    CHECK(scanAll(*b, "t.c") == "new=2");
    REQUIRE_OK(b->dropDatabase("t"));
    CHECK(a->get("t.c", "new").status().code() == StatusCode::kNamespaceNotFound);
    CHECK(a->openCursor("t.c").status().code() == StatusCode::kNamespaceNotFound);
}

TEST_CASE("get into a caller's buffer reuses it and leaves it alone on failure") {
    auto e = openEngine();
    auto s = e->openSession();
    REQUIRE_OK(s->createCollection("t.c"));
    REQUIRE_OK(s->put("t.c", "k", "value"));
    std::string buffer = "previous";
    CHECK_OK(s->get("t.c", "k", &buffer));
    CHECK(buffer == "value");
    CHECK(s->get("t.c", "missing", &buffer).code() == StatusCode::kNotFound);
    CHECK(buffer == "value");
    CHECK(s->get("t.none", "k", &buffer).code() == StatusCode::kNamespaceNotFound);
    CHECK(buffer == "value");
}

TEST_CASE("a dropped collection is freed once the sessions that used it move on") {
    auto e = openEngine();
    auto a = e->openSession();
    auto b = e->openSession();
    REQUIRE_OK(a->createCollection("t.big"));
    REQUIRE_OK(a->createCollection("t.other"));
    REQUIRE_OK(a->put("t.big", "k", "v"));
    REQUIRE_OK(b->put("t.big", "k2", "v"));  // both sessions have t.big cached
    std::weak_ptr<Collection> big = e->catalog().lookup("t.big");
    REQUIRE_OK(a->dropCollection("t.big"));
    CHECK_FALSE(big.expired());               // b still holds it in its cache
    REQUIRE_OK(b->put("t.other", "k", "v"));  // any operation of b lets it go
    REQUIRE_OK(a->put("t.other", "k2", "v"));
    CHECK(big.expired());
}
