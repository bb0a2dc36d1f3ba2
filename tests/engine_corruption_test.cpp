// Recovery under damage (docs/oplog.md, "Recovery"): a small data directory
// of several oplog segments and two checkpoints, every byte of every
// segment and checkpoint flipped in turn and every file truncated at every
// offset (every third under AddressSanitizer), each opened and classified. The rules checked: never a crash;
// an open that succeeds has every acknowledged commit, except that a torn
// tail (the newest segment ending inside a record, after a crash: no
// clean-shutdown note) may be cut and is then reported; an open refused
// for corruption changes nothing on disk; a repair (EngineOptions::repair)
// always opens, keeps a prefix of the commits, lists the ones it lost and
// is reported by every later open until cleared.
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "recovery/log_repair.h"
#include "oplog/log_format.h"
#include "tests/engine_test_util.h"
#include "tests/temp_dir.h"

using namespace mvkv;
using namespace mvkv::engine;
using namespace mvkv::engine::testing;
using mvkv::testing::TempDir;
namespace fs = std::filesystem;

namespace {

using State = std::map<std::string, std::string>;

// Every offset in a plain build; under AddressSanitizer (several times
// slower) every third, so the suite stays within seconds.
#if defined(__SANITIZE_ADDRESS__)
constexpr size_t kStride = 3;
#else
constexpr size_t kStride = 1;
#endif
constexpr const char* kNs = "a.b";

// Scratch directories live in memory where the machine has /dev/shm: the
// sweep opens thousands of engines and each open syncs a few files.
struct ScratchDir {
    ScratchDir() {
        std::error_code ec;
        base = fs::is_directory("/dev/shm", ec) ? fs::path("/dev/shm") : fs::temp_directory_path();
        std::string templ = (base / "mvkv-corruption-XXXXXX").string();
        REQUIRE(mkdtemp(templ.data()) != nullptr);
        path = templ;
    }
    ~ScratchDir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
    fs::path base;
    std::string path;
};

EngineOptions options(const std::string& path) {
    EngineOptions o = onDisk(path, oplog::SyncMode::kWrite);
    o.oplogSegmentBytes = 4096;
    return o;
}

// The pristine directory: four opens (four segments), a checkpoint in the
// second and third; `states[i]` is the collection after the i-th commit.
struct Pristine {
    std::string dir;
    std::vector<State> states;
};

void build(Pristine* p, uint32_t seed) {
    std::mt19937 rng(seed);
    State state;
    for (int run = 0; run < 4; ++run) {
        auto engine = openEngine(options(p->dir));
        auto s = engine->openSession();
        if (run == 0) {
            mustOk(s->createCollection(kNs));
            p->states.push_back(state);
        }
        for (int op = 0; op < 10; ++op) {
            const std::string key = "k" + std::to_string(rng() % 24);
            if (state.count(key) && rng() % 3 == 0) {
                mustOk(s->remove(kNs, key));
                state.erase(key);
            } else {
                const std::string value = std::string(1 + rng() % 12, static_cast<char>('a' + run)) +
                                          std::to_string(op);
                mustOk(s->put(kNs, key, value));
                state[key] = value;
            }
            p->states.push_back(state);
        }
        if (run == 1 || run == 2)
            mustOk(engine->checkpoint());
    }
}

std::string readAll(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void writeAll(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// Every file of a data directory (but the lock), by name.
std::map<std::string, std::string> snapshotFiles(const std::string& dir) {
    std::map<std::string, std::string> out;
    for (const auto& e : fs::directory_iterator(dir))
        if (e.is_regular_file() && e.path().filename() != "mvkv.lock")
            out[e.path().filename().string()] = readAll(e.path().string());
    return out;
}

void restore(const std::string& dir, const std::map<std::string, std::string>& files) {
    std::error_code ec;
    fs::remove_all(dir, ec);
    fs::create_directories(dir);
    for (const auto& [name, bytes] : files)
        writeAll(dir + "/" + name, bytes);
}

State readState(Engine& engine) {
    State out;
    auto s = engine.openSession();
    auto c = s->openCursor(kNs);
    if (!c.ok())
        return {{"<no collection>", c.status().toString()}};
    Cursor& cur = *c.value();
    for (Status st = cur.first(); cur.valid(); st = cur.next())
        out[std::string(cur.key())] = std::string(cur.value());
    return out;
}

// The commit count whose state `state` is (the newest such), or -1.
int whichState(const std::vector<State>& states, const State& state) {
    for (int i = static_cast<int>(states.size()) - 1; i >= 0; --i)
        if (states[i] == state)
            return i;
    return -1;
}

struct Outcomes {
    std::map<std::string, int> counts;  // "<file kind> <damage> <outcome>"
    void add(const std::string& kind, const std::string& damage, const std::string& outcome) {
        ++counts[kind + " " + damage + " " + outcome];
    }
    std::string table() const {
        std::string out;
        for (const auto& [k, n] : counts)
            out += k + ": " + std::to_string(n) + "\n";
        return out;
    }
};

// One damaged directory opened: the rules above, and the outcome's name.
std::string openAndJudge(const std::string& dir, const Pristine& p, bool crashed, bool flipped,
                         bool truncatedNewest, bool tryRepair) {
    const auto before = snapshotFiles(dir);
    auto opened = Engine::open(options(dir));
    if (!opened.ok()) {
        // Refused: clearly, and nothing changed.
        const Status& s = opened.status();
        CHECK_MESSAGE((s.code() == StatusCode::kCorruption || s.code() == StatusCode::kInvalidArgument),
                      s.toString());
        CHECK(snapshotFiles(dir) == before);
        if (!tryRepair || s.code() != StatusCode::kCorruption)
            return "refused";
        EngineOptions o = options(dir);
        o.repair = true;
        auto repaired = Engine::open(o);
        REQUIRE_MESSAGE(repaired.ok(), repaired.status().toString());
        const RecoveryStats r = repaired.value()->recovery();
        CHECK(r.repaired);
        CHECK(r.repairs == 1);
        const int at = whichState(p.states, readState(*repaired.value()));
        CHECK_MESSAGE(at >= 0, "a repair must keep a prefix of the commits");
        // After a flip every commit past the kept prefix is listed as lost,
        // but the damaged record itself (unreadable); a truncation can list
        // only what is left after it.
        auto record = nlohmann::json::parse(r.repairsJson);
        const int lostListed = record[0]["lostCommitCount"].get<int>();
        const int lost = static_cast<int>(p.states.size()) - 1 - at;
        CHECK(lostListed <= lost);
        if (flipped)
            CHECK(lostListed + 1 >= lost);
        CHECK(fs::is_directory(r.salvageDir));
        repaired.value().reset();
        // Every later open reports it, until cleared.
        auto again = openEngine(options(dir));
        CHECK(again->recovery().repairs == 1);
        CHECK_FALSE(again->recovery().repaired);
        CHECK(whichState(p.states, readState(*again)) == at);
        mustOk(again->clearRepairRecord());
        again.reset();
        CHECK(openEngine(options(dir))->recovery().repairs == 0);
        return "refused, repaired";
    }
    auto engine = std::move(opened).value();
    const RecoveryStats r = engine->recovery();
    const int at = whichState(p.states, readState(*engine));
    const int last = static_cast<int>(p.states.size()) - 1;
    if (at == last) {
        CHECK_FALSE(r.damage == "corruption");
        return r.tailCut ? "intact, torn tail cut" : "intact";
    }
    // Commits missing: only the newest segment cut short after a crash may
    // do that, as a crash before those commits' writes would have.
    CHECK_MESSAGE(at >= 0, "an open must never show a state that never was");
    CHECK_MESSAGE(crashed, "after a clean close no acknowledged commit may go missing");
    CHECK(truncatedNewest);
    if (!r.tailCut)
        return "cut at a record boundary (as a crash before them), commits lost";
    CHECK(r.damage == "torn tail");
    return "torn tail cut, commits lost";
}

void sweep(const Pristine& p, bool crashed, bool tryRepairEvery, Outcomes* out) {
    auto files = snapshotFiles(p.dir);
    if (crashed)
        files.erase("clean-shutdown");
    else
        REQUIRE(files.count("clean-shutdown") == 1);
    uint64_t newest = 0;
    for (const auto& [name, bytes] : files) {
        uint64_t n;
        if (oplog::parseSegmentFileName(name, &n))
            newest = std::max(newest, n);
    }
    ScratchDir scratch;
    const std::string dir = scratch.path + "/d";
    int trial = 0;
    for (const auto& [name, bytes] : files) {
        if (name == "clean-shutdown" || name == "MVKV")
            continue;  // the notes are covered in their own test cases
        uint64_t n = 0;
        const bool segment = oplog::parseSegmentFileName(name, &n);
        const std::string kind = segment ? (n == newest ? "newest segment" : "older segment")
                                         : "checkpoint";
        for (size_t at = 0; at < bytes.size(); at += kStride) {
            for (int damage = 0; damage < 2; ++damage) {
                CAPTURE(name);
                CAPTURE(at);
                CAPTURE(damage);
                auto damaged = files;
                if (damage == 0)
                    damaged[name][at] = static_cast<char>(damaged[name][at] ^ 0x5a);
                else
                    damaged[name].resize(at);
                restore(dir, damaged);
                // A repair on a sample of the refusals (each costs four opens).
                const bool tryRepair = tryRepairEvery && (++trial % 5 == 0);
                out->add(kind, damage == 0 ? "flip" : "truncate",
                         openAndJudge(dir, p, crashed, damage == 0,
                                      damage == 1 && segment && n == newest,
                                      tryRepair));
            }
        }
    }
}

}  // namespace

TEST_CASE("corruption sweep: after a clean close, every flip and truncation is refused or intact") {
    TempDir tmp("mvkv-corruption-test");
    Pristine p{tmp.path + "/pristine", {}};
    build(&p, 7);
    Outcomes out;
    sweep(p, /*crashed=*/false, /*tryRepairEvery=*/true, &out);
    MESSAGE("after a clean close:\n" << out.table());
    CHECK(out.counts.count("newest segment truncate refused") == 1);
    CHECK(out.counts.count("older segment flip refused") == 1);
}

TEST_CASE("corruption sweep: after a crash, only a torn newest segment is cut, and reported") {
    TempDir tmp("mvkv-corruption-test");
    Pristine p{tmp.path + "/pristine", {}};
    build(&p, 11);
    Outcomes out;
    sweep(p, /*crashed=*/true, /*tryRepairEvery=*/false, &out);
    MESSAGE("after a crash:\n" << out.table());
    CHECK(out.counts.count("newest segment truncate torn tail cut, commits lost") == 1);
    CHECK(out.counts.count("newest segment flip refused") == 1);
}

TEST_CASE("corruption: a repair that cuts before the checkpoint's segment keeps later commits") {
    // Segments 1..3, a checkpoint whose position is in segment 3; a flip in
    // segment 1; the repair cuts segments 1.. and new records go past the
    // checkpoint's segment: the numbers between are filled, so a commit
    // acknowledged after the repair is there on every later open.
    TempDir tmp("mvkv-corruption-test");
    const std::string dir = tmp.path + "/d";
    for (int run = 0; run < 3; ++run) {
        auto engine = openEngine(options(dir));
        auto s = engine->openSession();
        if (run == 0)
            mustOk(s->createCollection(kNs));
        for (int i = 0; i < 5; ++i)
            mustOk(s->put(kNs, "r" + std::to_string(run) + "k" + std::to_string(i), "v"));
        if (run == 2)
            mustOk(engine->checkpoint());
    }
    const std::string first = dir + "/" + oplog::segmentFileName(1);
    std::string bytes = readAll(first);
    bytes[bytes.size() - 3] ^= 0x20;
    writeAll(first, bytes);
    REQUIRE(Engine::open(options(dir)).status().code() == StatusCode::kCorruption);
    EngineOptions o = options(dir);
    o.repair = true;
    {
        auto engine = openEngine(o);
        CHECK(engine->recovery().repaired);
        auto s = engine->openSession();
        CHECK(getOr(*s, kNs, "r2k4") == "v");  // the checkpoint holds it
        mustOk(s->put(kNs, "after", "repair"));
    }
    for (int i = 0; i < 2; ++i) {
        auto engine = openEngine(options(dir));
        CHECK(engine->recovery().damage == "none");
        CHECK(getOr(*engine->openSession(), kNs, "after") == "repair");
    }
}

TEST_CASE("corruption: a damaged clean-shutdown note is ignored, not believed") {
    TempDir tmp("mvkv-corruption-test");
    const std::string dir = tmp.path + "/d";
    {
        auto engine = openEngine(options(dir));
        auto s = engine->openSession();
        mustOk(s->createCollection(kNs));
        mustOk(s->put(kNs, "k", "v"));
    }
    const std::string note = readAll(dir + "/clean-shutdown");
    for (size_t at = 0; at < note.size(); ++at) {
        CAPTURE(at);
        std::string damaged = note;
        damaged[at] ^= 0x04;
        writeAll(dir + "/clean-shutdown", damaged);
        auto engine = openEngine(options(dir));
        CHECK_FALSE(engine->recovery().cleanShutdown);
        CHECK(getOr(*engine->openSession(), kNs, "k") == "v");
    }
}

TEST_CASE("corruption: the oldest segments gone is refused, with or without a checkpoint") {
    TempDir tmp("mvkv-corruption-test");
    SUBCASE("no checkpoint: the log must start at segment 1") {
        const std::string dir = tmp.path + "/d";
        {
            auto e = openEngine(options(dir));
            mustOk(e->openSession()->createCollection(kNs));
        }
        {
            auto e = openEngine(options(dir));
            mustOk(e->openSession()->put(kNs, "k", "v"));
        }
        fs::remove(dir + "/" + oplog::segmentFileName(1));
        auto refused = Engine::open(options(dir));
        REQUIRE_FALSE(refused.ok());
        CHECK(refused.status().code() == StatusCode::kCorruption);
        CHECK(refused.status().message().find("segment 1 is missing") != std::string::npos);
        // A repair keeps nothing after the gap, lists it, and opens from then on.
        EngineOptions o = options(dir);
        o.repair = true;
        {
            auto e = openEngine(o);
            CHECK(e->recovery().repaired);
            CHECK(e->recovery().repairLostCommits == 1);  // the put; its collection's create went with segment 1
            auto s = e->openSession();
            mustOk(s->createCollection(kNs));
            mustOk(s->put(kNs, "after", "repair"));
        }
        auto again = openEngine(options(dir));
        CHECK(again->recovery().damage == "none");
        CHECK(getOr(*again->openSession(), kNs, "after") == "repair");
    }
    SUBCASE("a checkpoint: the log must reach back to its segment") {
        const std::string dir = tmp.path + "/e";
        {
            auto e = openEngine(options(dir));
            auto s = e->openSession();
            mustOk(s->createCollection(kNs));
            mustOk(s->put(kNs, "k1", "v1"));
            mustOk(e->checkpoint());
            mustOk(s->put(kNs, "k2", "v2"));  // after the checkpoint, in segment 1
        }
        {
            auto e = openEngine(options(dir));
            mustOk(e->openSession()->put(kNs, "k3", "v3"));
        }
        fs::remove(dir + "/" + oplog::segmentFileName(1));
        auto refused = Engine::open(options(dir));
        REQUIRE_FALSE(refused.ok());
        CHECK(refused.status().code() == StatusCode::kCorruption);
        EngineOptions o = options(dir);
        o.repair = true;
        {
            auto e = openEngine(o);
            CHECK(getOr(*e->openSession(), kNs, "k1") == "v1");  // the checkpoint's
            CHECK(getOr(*e->openSession(), kNs, "k3") == "<NotFound>");  // after the gap
            mustOk(e->openSession()->put(kNs, "after", "repair"));
        }
        for (int i = 0; i < 2; ++i) {
            auto e = openEngine(options(dir));
            CHECK(e->recovery().damage == "none");
            CHECK(getOr(*e->openSession(), kNs, "after") == "repair");
        }
    }
}

TEST_CASE("corruption: after a power loss, a newest segment ending in zero blocks is a torn tail") {
    TempDir tmp("mvkv-corruption-test");
    const std::string dir = tmp.path + "/d";
    {
        auto e = openEngine(options(dir));
        auto s = e->openSession();
        mustOk(s->createCollection(kNs));
        mustOk(s->put(kNs, "k1", "v1"));
        mustOk(s->put(kNs, "k2", "v2"));
    }
    fs::remove(dir + "/clean-shutdown");  // as after a crash
    const std::string seg = dir + "/" + oplog::segmentFileName(1);
    const std::string original = readAll(seg);
    SUBCASE("zero blocks past the last record") {
        std::string bytes = original;
        bytes.resize((bytes.size() + 511) / 512 * 512 + 4096, '\0');
        writeAll(seg, bytes);
        auto e = openEngine(options(dir));
        CHECK(e->recovery().damage == "torn tail");
        CHECK(getOr(*e->openSession(), kNs, "k2") == "v2");
    }
    SUBCASE("the last record's end zeroed from a block boundary") {
        // A last record that spans a block boundary, zeroed from there on.
        {
            auto e = openEngine(options(dir));
            mustOk(e->openSession()->put(kNs, "k3", std::string(1500, 'x')));
        }
        fs::remove(dir + "/clean-shutdown");
        const std::string seg2 = dir + "/" + oplog::segmentFileName(2);
        std::string bytes = readAll(seg2);
        const size_t block = (bytes.size() - 100) / 512 * 512;
        REQUIRE(block > 100);  // inside k3's record
        std::fill(bytes.begin() + static_cast<std::ptrdiff_t>(block), bytes.end(), '\0');
        writeAll(seg2, bytes);
        auto e = openEngine(options(dir));
        CHECK(e->recovery().damage == "torn tail");
        CHECK(getOr(*e->openSession(), kNs, "k2") == "v2");
        CHECK(getOr(*e->openSession(), kNs, "k3") == "<NotFound>");
    }
    SUBCASE("a flipped byte before zero blocks is still corruption") {
        std::string bytes = original;
        bytes[bytes.size() - 30] ^= 0x10;
        writeAll(seg, bytes);
        CHECK(Engine::open(options(dir)).status().code() == StatusCode::kCorruption);
    }
}

TEST_CASE("corruption: a large record torn at its end is judged quickly and cut") {
    // The search for good records past the damage filters candidates before
    // hashing them (it used to hash up to the rest of the segment at every
    // byte whose u32 fit, seconds for an 8 MiB record).
    TempDir tmp("mvkv-corruption-test");
    const std::string dir = tmp.path + "/d";
    std::mt19937 rng(5);
    std::string big(8 << 20, '\0');
    for (char& c : big)
        c = static_cast<char>(rng());
    {
        auto e = openEngine(options(dir));
        auto s = e->openSession();
        mustOk(s->createCollection(kNs));
        mustOk(s->put(kNs, "small", "v"));
        mustOk(s->put(kNs, "big", big));
    }
    fs::remove(dir + "/clean-shutdown");
    const std::string seg = dir + "/" + oplog::segmentFileName(2);  // the big record's own
    REQUIRE(fs::file_size(seg) > big.size());
    fs::resize_file(seg, fs::file_size(seg) - 100);
    auto e = openEngine(options(dir));
    CHECK(e->recovery().damage == "torn tail");
    CHECK(getOr(*e->openSession(), kNs, "small") == "v");
    CHECK(getOr(*e->openSession(), kNs, "big") == "<NotFound>");
}

TEST_CASE("corruption: a repair record that is not one refuses the open clearly") {
    TempDir tmp("mvkv-corruption-test");
    const std::string dir = tmp.path + "/d";
    openEngine(options(dir)).reset();
    for (const char* bad : {"[{}]", "[{\"damage\":\"x\"}]", "{}", "not json", "[1]"}) {
        CAPTURE(bad);
        writeAll(dir + "/repair.json", bad);
        auto r = Engine::open(options(dir));
        REQUIRE_FALSE(r.ok());
        CHECK(r.status().code() == StatusCode::kCorruption);
        CHECK(r.status().message().find("repair.json") != std::string::npos);
    }
}
