// RAII locks: GlobalLock, DBLock, CollectionLock, AutoGetCollection take the
// hierarchy top-down in the modes of seed 002's table, acquire all or
// nothing, and release on destruction (two-phase locking inside a write unit
// of work). A destroyed Locker releases whatever it still holds.
#include <doctest/doctest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "lockmgr/lock_manager.h"
#include "lockmgr/locker.h"
#include "lockmgr/raii_locks.h"

using namespace mvkv;
using namespace mvkv::lockmgr;

namespace {

const ResourceId kGlobal = ResourceId::global();

struct Modes {
    LockMode global, db, coll;
};

Modes modesOf(const Locker& l, std::string_view db, std::string_view ns) {
    return {l.getLockMode(kGlobal), l.getLockMode(ResourceId::database(db)),
            l.getLockMode(ResourceId::collection(ns))};
}

void checkNothingHeld(LockManager& mgr, const Locker& l) {
    CHECK_FALSE(l.isLocked());
    CHECK(l.describe().held.empty());
    CHECK(mgr.dumpLocker(l.id()).empty());
}

void checkClean(LockManager& mgr) {
    CHECK(mgr.dump().empty());
    CHECK(mgr.checkInvariants().empty());
    CHECK(mgr.tickets().read().stats().out == 0);
    CHECK(mgr.tickets().write().stats().out == 0);
}

}  // namespace

TEST_CASE("raii: AutoGetCollection takes the modes of the table") {
    struct Row {
        LockMode coll;
        Modes expected;
    };
    const Row rows[] = {
        {LockMode::kIX, {LockMode::kIX, LockMode::kIX, LockMode::kIX}},
        {LockMode::kX, {LockMode::kIX, LockMode::kIX, LockMode::kX}},
        {LockMode::kIS, {LockMode::kIS, LockMode::kIS, LockMode::kIS}},
        {LockMode::kS, {LockMode::kIS, LockMode::kIS, LockMode::kS}},
    };
    LockManager mgr;
    for (const Row& row : rows) {
        CAPTURE(modeName(row.coll));
        Locker l(mgr);
        {
            AutoGetCollection agc(l, "db.c", row.coll);
            REQUIRE(agc.status().ok());
            CHECK(agc.isLocked());
            CHECK(static_cast<bool>(agc));
            Modes m = modesOf(l, "db", "db.c");
            CHECK(m.global == row.expected.global);
            CHECK(m.db == row.expected.db);
            CHECK(m.coll == row.expected.coll);
            CHECK(l.isLockHeldForMode(ResourceId::collection("db.c"), row.coll));
            // Tickets: read for a shared Global mode, write for IX.
            bool reader = isSharedMode(row.expected.global);
            CHECK(mgr.tickets().read().stats().out == (reader ? 1 : 0));
            CHECK(mgr.tickets().write().stats().out == (reader ? 0 : 1));
        }
        Modes m = modesOf(l, "db", "db.c");
        CHECK(m.global == LockMode::kNone);
        CHECK(m.db == LockMode::kNone);
        CHECK(m.coll == LockMode::kNone);
        checkNothingHeld(mgr, l);
        checkClean(mgr);
    }
}

TEST_CASE("raii: GlobalLock and DBLock modes") {
    LockManager mgr;
    Locker l(mgr);
    const ResourceId db = ResourceId::database("db");
    SUBCASE("GlobalLock") {
        for (LockMode mode : {LockMode::kIS, LockMode::kIX, LockMode::kS, LockMode::kX}) {
            CAPTURE(modeName(mode));
            {
                GlobalLock g(l, mode);
                REQUIRE(g.status().ok());
                CHECK(g.isLocked());
                CHECK(l.globalMode() == mode);
            }
            CHECK(l.globalMode() == LockMode::kNone);
        }
    }
    SUBCASE("DBLock") {
        const std::pair<LockMode, LockMode> rows[] = {
            {LockMode::kIS, LockMode::kIS},
            {LockMode::kIX, LockMode::kIX},
            {LockMode::kS, LockMode::kIS},
            {LockMode::kX, LockMode::kIX},
        };
        for (auto [mode, global] : rows) {
            CAPTURE(modeName(mode));
            {
                DBLock d(l, "db", mode);
                REQUIRE(d.status().ok());
                CHECK(d.isLocked());
                CHECK(l.getLockMode(db) == mode);
                CHECK(l.globalMode() == global);
            }
            CHECK(l.getLockMode(db) == LockMode::kNone);
            CHECK(l.globalMode() == LockMode::kNone);
        }
    }
    SUBCASE("DBLock refuses a bad name") {
        for (const char* name : {"", "a.b"}) {
            CAPTURE(name);
            DBLock d(l, name, LockMode::kIX);
            CHECK(d.status().code() == StatusCode::kInvalidArgument);
            CHECK_FALSE(d.isLocked());
            CHECK_FALSE(l.isLocked());
        }
    }
    checkNothingHeld(mgr, l);
    checkClean(mgr);
}

TEST_CASE("raii: CollectionLock needs the database lock") {
    LockManager mgr;
    Locker l(mgr);
    const ResourceId c = ResourceId::collection("db.c");
    SUBCASE("without any lock") {
        CollectionLock cl(l, "db.c", LockMode::kIS);
        CHECK(cl.status().code() == StatusCode::kInvalidArgument);
        CHECK_FALSE(cl.isLocked());
        CHECK(l.getLockMode(c) == LockMode::kNone);
    }
    SUBCASE("with the database in too weak a mode") {
        DBLock d(l, "db", LockMode::kIS);
        REQUIRE(d.status().ok());
        CollectionLock cl(l, "db.c", LockMode::kX);  // needs IX on the database
        CHECK(cl.status().code() == StatusCode::kInvalidArgument);
        CHECK_FALSE(cl.isLocked());
        CHECK(l.getLockMode(c) == LockMode::kNone);
    }
    SUBCASE("with another database locked") {
        DBLock d(l, "other", LockMode::kIX);
        REQUIRE(d.status().ok());
        CollectionLock cl(l, "db.c", LockMode::kIX);
        CHECK(cl.status().code() == StatusCode::kInvalidArgument);
        CHECK(l.getLockMode(c) == LockMode::kNone);
    }
    SUBCASE("with the database lock") {
        DBLock d(l, "db", LockMode::kIX);
        REQUIRE(d.status().ok());
        {
            CollectionLock cl(l, "db.c", LockMode::kX);
            CHECK(cl.status().ok());
            CHECK(l.getLockMode(c) == LockMode::kX);
        }
        CHECK(l.getLockMode(c) == LockMode::kNone);
        CHECK(l.getLockMode(ResourceId::database("db")) == LockMode::kIX);
    }
    SUBCASE("database X covers a collection IX") {
        DBLock d(l, "db", LockMode::kX);
        REQUIRE(d.status().ok());
        CollectionLock cl(l, "db.c", LockMode::kIX);
        CHECK(cl.status().ok());
        CHECK(l.getLockMode(c) == LockMode::kIX);
    }
    SUBCASE("bad namespace") {
        DBLock d(l, "db", LockMode::kIX);
        REQUIRE(d.status().ok());
        CollectionLock cl(l, "db.", LockMode::kIX);
        CHECK(cl.status().code() == StatusCode::kInvalidArgument);
        CHECK_FALSE(cl.isLocked());
    }
    checkNothingHeld(mgr, l);
    checkClean(mgr);
}

TEST_CASE("raii: AutoGetCollection refuses a bad namespace and holds nothing") {
    LockManager mgr;
    Locker l(mgr);
    for (const char* ns : {"nodot", ".c", "db.", "", "."}) {
        for (LockMode mode : {LockMode::kIS, LockMode::kX}) {
            CAPTURE(ns);
            CAPTURE(modeName(mode));
            AutoGetCollection agc(l, ns, mode);
            CHECK(agc.status().code() == StatusCode::kInvalidArgument);
            CHECK_FALSE(agc.isLocked());
            checkNothingHeld(mgr, l);
            checkClean(mgr);
        }
    }
    // The first dot splits: "db.c.d" is collection "c.d" of "db".
    AutoGetCollection agc(l, "db.c.d", LockMode::kIX);
    CHECK(agc.status().ok());
    CHECK(l.getLockMode(ResourceId::database("db")) == LockMode::kIX);
    CHECK(l.getLockMode(ResourceId::collection("db.c.d")) == LockMode::kIX);
}

TEST_CASE("raii: AutoGetCollection timing out on the collection releases the rest") {
    LockManager mgr;
    Locker other(mgr), l(mgr);
    AutoGetCollection held(other, "db.c", LockMode::kX);
    REQUIRE(held.status().ok());

    for (LockMode mode : {LockMode::kIS, LockMode::kIX, LockMode::kS, LockMode::kX}) {
        CAPTURE(modeName(mode));
        AutoGetCollection agc(l, "db.c", mode, Deadline::now());
        CHECK(agc.status().code() == StatusCode::kLockTimeout);
        CHECK_FALSE(agc.isLocked());
        Modes m = modesOf(l, "db", "db.c");
        CHECK(m.global == LockMode::kNone);
        CHECK(m.db == LockMode::kNone);
        CHECK(m.coll == LockMode::kNone);
        checkNothingHeld(mgr, l);
        CHECK(mgr.tickets().read().stats().out == 0);
        CHECK(mgr.tickets().write().stats().out == 1);  // other's
        CHECK(mgr.checkInvariants().empty());
    }
    // A timeout on the database lock releases the Global lock.
    Locker dbHolder(mgr);
    {
        DBLock dx(dbHolder, "db2", LockMode::kX);
        REQUIRE(dx.status().ok());
        AutoGetCollection agc(l, "db2.c", LockMode::kIS, Deadline::now());
        CHECK(agc.status().code() == StatusCode::kLockTimeout);
        checkNothingHeld(mgr, l);
    }
}

TEST_CASE("raii: two-phase locking inside a write unit of work") {
    LockManager mgr;
    Locker l(mgr);
    const ResourceId db = ResourceId::database("db"), c = ResourceId::collection("db.c");
    const ResourceId db2 = ResourceId::database("db2"), c2 = ResourceId::collection("db2.c");

    l.beginWriteUnitOfWork();
    CHECK(l.inWriteUnitOfWork());
    {
        AutoGetCollection w(l, "db.c", LockMode::kIX);
        REQUIRE(w.status().ok());
    }
    // IX locks outlive the RAII object.
    CHECK(l.globalMode() == LockMode::kIX);
    CHECK(l.getLockMode(db) == LockMode::kIX);
    CHECK(l.getLockMode(c) == LockMode::kIX);
    {
        AutoGetCollection x(l, "db.d", LockMode::kX);
        REQUIRE(x.status().ok());
    }
    CHECK(l.getLockMode(ResourceId::collection("db.d")) == LockMode::kX);
    {
        // A shared access in another database is released at once (the Global
        // lock stays, held in IX for the unit of work).
        AutoGetCollection r(l, "db2.c", LockMode::kIS);
        REQUIRE(r.status().ok());
        CHECK(l.getLockMode(db2) == LockMode::kIS);
    }
    CHECK(l.getLockMode(db2) == LockMode::kNone);
    CHECK(l.getLockMode(c2) == LockMode::kNone);
    {
        // A reader elsewhere sees db.c still locked (IX blocks S).
        Locker reader(mgr);
        AutoGetCollection r(reader, "db.c", LockMode::kS, Deadline::now());
        CHECK(r.status().code() == StatusCode::kLockTimeout);
    }
    // Nested units: only the outermost end releases.
    l.beginWriteUnitOfWork();
    CHECK(l.endWriteUnitOfWork().ok());
    CHECK(l.getLockMode(c) == LockMode::kIX);

    CHECK(l.endWriteUnitOfWork().ok());
    CHECK_FALSE(l.inWriteUnitOfWork());
    CHECK(l.getLockMode(c) == LockMode::kNone);
    CHECK(l.getLockMode(ResourceId::collection("db.d")) == LockMode::kNone);
    CHECK(l.getLockMode(db) == LockMode::kNone);
    CHECK(l.globalMode() == LockMode::kNone);
    CHECK(l.endWriteUnitOfWork().code() == StatusCode::kIllegalOperation);
    checkNothingHeld(mgr, l);
    checkClean(mgr);
}

TEST_CASE("raii: IS-only accesses in a unit of work are released at once") {
    LockManager mgr;
    Locker l(mgr);
    l.beginWriteUnitOfWork();
    {
        AutoGetCollection r(l, "db.c", LockMode::kIS);
        REQUIRE(r.status().ok());
    }
    CHECK_FALSE(l.isLocked());
    CHECK(l.getLockMode(ResourceId::database("db")) == LockMode::kNone);
    CHECK(mgr.tickets().read().stats().out == 0);
    CHECK(l.endWriteUnitOfWork().ok());
    checkClean(mgr);
}

TEST_CASE("raii: a destroyed Locker releases everything") {
    LockManager mgr;
    {
        Locker l(mgr);
        CHECK(l.lockGlobal(LockMode::kIX).ok());
        CHECK(l.lock(ResourceId::database("db"), LockMode::kIX).ok());
        CHECK(l.lock(ResourceId::collection("db.c"), LockMode::kX).ok());
        CHECK(l.lock(ResourceId::collection("db.d"), LockMode::kIS).ok());
        CHECK(l.lock(ResourceId::collection("db.d"), LockMode::kIS).ok());  // recursive
        l.beginWriteUnitOfWork();
        CHECK(l.lock(ResourceId::collection("db.e"), LockMode::kIX).ok());
        CHECK(l.unlock(ResourceId::collection("db.e")).ok());  // deferred
        CHECK(l.getLockMode(ResourceId::collection("db.e")) == LockMode::kIX);
        CHECK_FALSE(mgr.dump().empty());
    }
    checkClean(mgr);
    CHECK(mgr.lockHeadCount() == 5);  // global, db, db.c, db.d, db.e: kept, empty
    CHECK(mgr.dump().empty());
}

TEST_CASE("raii: a destroyed Locker withdraws its pending request") {
    LockManager mgr;
    const ResourceId c = ResourceId::collection("db.c");
    Locker holder(mgr);
    std::optional<AutoGetCollection> held;
    held.emplace(holder, "db.c", LockMode::kX);
    REQUIRE(held->status().ok());
    {
        Locker l(mgr);
        CHECK(l.lockGlobal(LockMode::kIX).ok());
        CHECK(l.lock(ResourceId::database("db"), LockMode::kIX).ok());
        auto r = l.lockBegin(c, LockMode::kX);
        REQUIRE(r.ok());
        CHECK(r.value() == LockResult::kWaiting);
    }
    // Only the holder is left in the table.
    for (const LockHeadInfo& info : mgr.dump()) {
        CHECK(info.waiting.empty());
        for (const auto& e : info.granted)
            CHECK(e.locker == holder.id());
    }
    CHECK(mgr.checkInvariants().empty());
    CHECK(mgr.queuedWriters() == 0);
    held.reset();
    checkClean(mgr);
}

TEST_CASE("raii: moved ResourceLock releases once") {
    LockManager mgr;
    Locker l(mgr);
    {
        GlobalLock g(l, LockMode::kIX);
        REQUIRE(g.status().ok());
        ResourceLock a(l, ResourceId::database("db"), LockMode::kIX, Deadline::now(), "db");
        REQUIRE(a.status().ok());
        ResourceLock b(std::move(a));
        CHECK(b.isLocked());
        CHECK_FALSE(a.isLocked());  // NOLINT(bugprone-use-after-move): moved-from state
        ResourceLock c;
        c = std::move(b);
        CHECK(c.isLocked());
        CHECK(l.getLockMode(ResourceId::database("db")) == LockMode::kIX);
        c.release();
        CHECK(l.getLockMode(ResourceId::database("db")) == LockMode::kNone);
    }
    checkNothingHeld(mgr, l);
    checkClean(mgr);
}

TEST_CASE("raii: AutoGetCollection with a parsed LockNamespace takes the same modes") {
    auto bad = LockNamespace::parse("nodot");
    CHECK(bad.status().code() == StatusCode::kInvalidArgument);
    auto ns = LockNamespace::parse("shop.orders");
    REQUIRE(ns.ok());
    CHECK(ns.value().db() == "shop");
    CHECK(ns.value().dbId() == ResourceId::database("shop"));
    CHECK(ns.value().collectionId() == ResourceId::collection("shop.orders"));

    LockManager mgr;
    {
        Locker l(mgr);
        {
            AutoGetCollection coll(l, ns.value(), LockMode::kX);
            REQUIRE(coll.status().ok());
            Modes m = modesOf(l, "shop", "shop.orders");
            CHECK(m.global == LockMode::kIX);
            CHECK(m.db == LockMode::kIX);
            CHECK(m.coll == LockMode::kX);
            // The lock table shows the names, not hashes.
            auto held = l.describe().held;
            CHECK(std::any_of(held.begin(), held.end(),
                              [](const LockerInfo::Held& h) { return h.name == "shop.orders"; }));
        }
        checkNothingHeld(mgr, l);
        AutoGetCollection empty(l, LockNamespace(), LockMode::kIS);
        CHECK(empty.status().code() == StatusCode::kInvalidArgument);
        checkNothingHeld(mgr, l);
    }
    checkClean(mgr);
}

TEST_CASE("raii: a lock timeout names the locker holding the resource") {
    LockManager mgr;
    {
        Locker holder(mgr), l(mgr);
        AutoGetCollection held(holder, "db.c", LockMode::kX);
        REQUIRE(held.status().ok());
        AutoGetCollection late(l, "db.c", LockMode::kIS, Deadline::now());
        CHECK(late.status().code() == StatusCode::kLockTimeout);
        CHECK(late.status().message().find("locker " + std::to_string(holder.id()) + " (X)") !=
              std::string::npos);
        CHECK(late.status().message().find("db.c") != std::string::npos);
        checkNothingHeld(mgr, l);
    }
    checkClean(mgr);
}

// The fast path (a first-time intent lock on an open partition slot) hands
// over to the general path whenever anything is unusual; these are the
// hand-over points.
TEST_CASE("raii: fast path hand-over: Global blocked after the ticket was taken") {
    LockManager mgr;
    Locker warm(mgr);
    { AutoGetCollection coll(warm, "db.c", LockMode::kIS); }  // the LockHeads exist now
    Locker holder(mgr);
    REQUIRE(holder.lockGlobal(LockMode::kX).ok());  // closes the Global slots
    Locker reader(mgr);
    AutoGetCollection coll(reader, "db.c", LockMode::kIS, Deadline::now());
    CHECK(coll.status().code() == StatusCode::kLockTimeout);
    CHECK_FALSE(coll.isLocked());
    // The read ticket the fast path took before finding the slot closed went back.
    CHECK(mgr.tickets().read().stats().out == 0);
    checkNothingHeld(mgr, reader);
    REQUIRE(holder.unlockGlobal().ok());
    {
        AutoGetCollection again(reader, "db.c", LockMode::kIS);
        CHECK(again.isLocked());
        CHECK(mgr.tickets().read().stats().out == 1);
    }
    checkClean(mgr);
}

TEST_CASE("raii: fast path hand-over: recursion, out-of-order release, manual unlock") {
    LockManager mgr;
    Locker l(mgr);
    {
        auto outer = std::make_optional<AutoGetCollection>(l, "db.c", LockMode::kIS);
        AutoGetCollection inner(l, "db.c", LockMode::kIS);  // recursive: general path
        AutoGetCollection other(l, "db.d", LockMode::kIS);
        CHECK(l.describe().held.size() == 4);
        outer.reset();  // not the newest requests: released through the general path
        CHECK(modesOf(l, "db", "db.c").coll == LockMode::kIS);
        CHECK(modesOf(l, "db", "db.d").coll == LockMode::kIS);
    }
    checkNothingHeld(mgr, l);
    {
        // A lock released by id behind the RAII object's back: the object's
        // release finds nothing held and leaves the table alone.
        CollectionLock* dangling = nullptr;
        DBLock db(l, "db", LockMode::kIS);
        CollectionLock coll(l, "db.c", LockMode::kIS);
        dangling = &coll;
        REQUIRE(l.unlock(ResourceId::collection("db.c")).ok());
        CHECK(l.getLockMode(ResourceId::collection("db.c")) == LockMode::kNone);
        CHECK(dangling->isLocked());  // it does not know
    }
    checkNothingHeld(mgr, l);
    auto stats = l.stats();
    CHECK(stats.get(ResourceType::kCollection, LockMode::kIS, LockStatKind::kAcquireCount) == 4);
    CHECK(stats.get(ResourceType::kGlobal, LockMode::kIS, LockStatKind::kAcquireCount) == 4);
    CHECK(stats.get(ResourceType::kDatabase, LockMode::kIS, LockStatKind::kAcquireCount) == 4);
    checkClean(mgr);
}

TEST_CASE("raii: AutoGetCollection's one-call fast path: stats, tickets, S/X arriving, release") {
    LockManager mgr;
    Locker a(mgr), b(mgr);
    const ResourceId db = ResourceId::database("db"), coll = ResourceId::collection("db.c");
    auto ns = LockNamespace::parse("db.c");
    REQUIRE(ns.ok());
    { AutoGetCollection warm(a, ns.value(), LockMode::kIS); }  // first use makes the LockHeads
    for (LockMode mode : {LockMode::kIS, LockMode::kIX}) {
        CAPTURE(modeName(mode));
        TicketHolder* holder = mgr.tickets().forMode(mode);
        {
            AutoGetCollection agc(a, ns.value(), mode);
            REQUIRE(agc.isLocked());
            CHECK(a.getLockMode(coll) == mode);
            CHECK(a.getLockMode(kGlobal) == mode);
            CHECK(a.getLockMode(db) == mode);
            CHECK(holder->stats().out == 1);
            // Another locker's X on the collection must see the partitioned
            // holder (and time out), after which the holder's requests live in
            // the LockHead: its release takes the general path.
            AutoGetCollection x(b, "db.c", LockMode::kX, Deadline::now());
            CHECK(x.status().code() == StatusCode::kLockTimeout);
            CHECK_FALSE(x.isLocked());
            CHECK(mgr.checkInvariants().empty());
        }
        checkNothingHeld(mgr, a);
        checkNothingHeld(mgr, b);
        checkClean(mgr);
        // The slots reopen for the next intent holder; a plain IS/IX round again.
        { AutoGetCollection again(a, ns.value(), mode); CHECK(again.isLocked()); }
        { AutoGetCollection again(a, ns.value(), mode); CHECK(again.isLocked()); }
        checkClean(mgr);
    }
    LockStats s = a.stats();
    // warm + (1 + 2) per mode; the timed-out X of b is b's.
    CHECK(s.get(ResourceType::kGlobal, LockMode::kIS, LockStatKind::kAcquireCount) == 4);
    CHECK(s.get(ResourceType::kDatabase, LockMode::kIS, LockStatKind::kAcquireCount) == 4);
    CHECK(s.get(ResourceType::kCollection, LockMode::kIS, LockStatKind::kAcquireCount) == 4);
    CHECK(s.get(ResourceType::kGlobal, LockMode::kIX, LockStatKind::kAcquireCount) == 3);
    CHECK(s.get(ResourceType::kCollection, LockMode::kIX, LockStatKind::kAcquireCount) == 3);
}

TEST_CASE("raii: AutoGetCollection's fast path with no ticket free waits and times out") {
    LockManager mgr(LockManagerOptions{.readTickets = 0});
    Locker a(mgr);
    {
        Locker w(mgr);
        AutoGetCollection warmIx(w, "db.c", LockMode::kIX);  // makes the LockHeads
        REQUIRE(warmIx.isLocked());
    }
    AutoGetCollection agc(a, "db.c", LockMode::kIS, Deadline::now());
    CHECK(agc.status().code() == StatusCode::kLockTimeout);
    CHECK_FALSE(agc.isLocked());
    checkNothingHeld(mgr, a);
    checkClean(mgr);
}

TEST_CASE("raii: AutoGetCollection's fast path inside a unit of work keeps IX until its end") {
    LockManager mgr;
    Locker a(mgr), b(mgr);
    { AutoGetCollection warm(a, "db.c", LockMode::kIX); }
    a.beginWriteUnitOfWork();
    { AutoGetCollection agc(a, "db.c", LockMode::kIX); REQUIRE(agc.isLocked()); }
    CHECK(a.getLockMode(ResourceId::collection("db.c")) == LockMode::kIX);  // two-phase
    AutoGetCollection x(b, "db.c", LockMode::kX, Deadline::now());
    CHECK(x.status().code() == StatusCode::kLockTimeout);
    CHECK(a.endWriteUnitOfWork().ok());
    checkNothingHeld(mgr, a);
    checkClean(mgr);
}

TEST_CASE("raii: AutoGetCollection's namespace memo compares every byte") {
    LockManager mgr;
    Locker l(mgr);
    // Same length, differing in one byte at each position (the dot moves
    // with it): each must lock its own resources, not the previous ones'.
    const std::vector<std::string> names = {"db.aaaa", "db.aaab", "dc.aaaa", "d.baaaa",
                                            "db.aaaa", "xb.aaaa", "db.aaaa"};
    for (int round = 0; round < 2; ++round) {
        for (const std::string& ns : names) {
            CAPTURE(ns);
            std::string_view db = std::string_view(ns).substr(0, ns.find('.'));
            {
                AutoGetCollection coll(l, ns, LockMode::kIS);
                REQUIRE(coll.isLocked());
                Modes m = modesOf(l, db, ns);
                CHECK(m.global == LockMode::kIS);
                CHECK(m.db == LockMode::kIS);
                CHECK(m.coll == LockMode::kIS);
                CHECK(l.describe().held.size() == 3);
            }
            checkNothingHeld(mgr, l);
        }
    }
    // Longer than the memo keeps, and a bad name between good ones.
    const std::string longNs = "a_database_with_a_long_name." + std::string(60, 'c');
    for (int i = 0; i < 2; ++i) {
        {
            AutoGetCollection coll(l, longNs, LockMode::kIX);
            REQUIRE(coll.isLocked());
            CHECK(l.getLockMode(ResourceId::collection(longNs)) == LockMode::kIX);
            CHECK(l.getLockMode(ResourceId::database("a_database_with_a_long_name")) ==
                  LockMode::kIX);
        }
        AutoGetCollection bad(l, "nodot", LockMode::kIS);
        CHECK(bad.status().code() == StatusCode::kInvalidArgument);
        CHECK_FALSE(bad.isLocked());
        AutoGetCollection empty(l, "", LockMode::kIS);
        CHECK(empty.status().code() == StatusCode::kInvalidArgument);
    }
    checkNothingHeld(mgr, l);
    checkClean(mgr);
}

TEST_CASE("raii: NamespaceMemo::sameBytes finds a difference at any position") {
    char a[NamespaceMemo::kMaxBytes];
    char b[NamespaceMemo::kMaxBytes];
    for (size_t n = 0; n <= NamespaceMemo::kMaxBytes; ++n) {
        CAPTURE(n);
        for (size_t i = 0; i < n; ++i)
            a[i] = b[i] = char('a' + i % 26);
        CHECK(NamespaceMemo::sameBytes(a, b, n));
        for (size_t at = 0; at < n; ++at) {
            CAPTURE(at);
            b[at] ^= 0x20;
            CHECK_FALSE(NamespaceMemo::sameBytes(a, b, n));
            b[at] ^= 0x20;
        }
    }
}
