// The oplog record payload (oplog/oplog_entry.h) as a property: random
// transactions, empty and maximal fields included (empty ns, key and value,
// every op, ts and txn id 0 and UINT64_MAX, many entries, long keys and
// values, a record of exactly kMaxRecordBytes), encode to kPayloadHeaderBytes
// plus kMinEntryBytes and the bytes of each entry and decode back equal;
// every strict prefix of an encoding and the encoding plus one byte are
// Corruption, never a crash. Issue 15: the decoder's count bound once took
// 33 bytes per entry and refused valid records of small entries. The seed is
// printed; MVKV_TEST_SEED replays one.
#include "oplog/oplog_entry.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "oplog/log_format.h"
#include "oplog/log_reader.h"
#include "oplog/log_writer.h"
#include "tests/status_check.h"
#include "tests/temp_dir.h"
#include "tests/test_seed.h"

using namespace mvkv;
using namespace mvkv::oplog;
using mvkv::testing::mustOk;
using mvkv::testing::TempDir;

namespace {

constexpr OpType kOps[] = {OpType::kInsert, OpType::kUpdate, OpType::kDelete, OpType::kCommand};

// 0, UINT64_MAX or anything.
uint64_t edgeU64(std::mt19937_64& rng) {
    switch (rng() % 4) {
        case 0:
            return 0;
        case 1:
            return UINT64_MAX;
        default:
            return rng();
    }
}

// Mostly empty or short, now and then long; random bytes (NUL included).
std::string randomBytes(std::mt19937_64& rng, size_t longest) {
    size_t n;
    switch (rng() % 10) {
        case 0:
        case 1:
        case 2:
            n = 0;
            break;
        case 3:
            n = 1;
            break;
        case 9:
            n = rng() % (longest + 1);
            break;
        default:
            n = rng() % 64;
    }
    std::string s(n, '\0');
    for (char& c : s)
        c = static_cast<char>(rng());
    return s;
}

OplogEntry randomEntry(std::mt19937_64& rng) {
    OplogEntry e;
    e.ts = edgeU64(rng);
    e.txnId = edgeU64(rng);
    e.op = kOps[rng() % 4];
    e.ns = randomBytes(rng, 300);
    e.key = randomBytes(rng, 5000);
    e.value = randomBytes(rng, 20000);
    return e;
}

size_t encodedSize(const std::vector<OplogEntry>& entries) {
    size_t n = kPayloadHeaderBytes;
    for (const OplogEntry& e : entries)
        n += kMinEntryBytes + e.ns.size() + e.key.size() + e.value.size();
    return n;
}

// Lengths to cut an encoding at: all of them when it is small, else the
// first 64, the last 8 and 8 at random (a long cut decodes nearly all of it).
std::vector<size_t> prefixLengths(size_t size, std::mt19937_64& rng) {
    std::vector<size_t> out;
    if (size <= 8192) {
        for (size_t n = 0; n < size; ++n)
            out.push_back(n);
        return out;
    }
    for (size_t n = 0; n < 64; ++n)
        out.push_back(n);
    for (size_t n = size - 8; n < size; ++n)
        out.push_back(n);
    for (int i = 0; i < 8; ++i)
        out.push_back(rng() % size);
    return out;
}

// The property, for one transaction's entries.
void checkRoundTrip(const std::vector<OplogEntry>& entries, std::mt19937_64& rng) {
    const std::string enc = encodeEntries(entries);
    CHECK(enc.size() == encodedSize(entries));
    std::vector<OplogEntry> back;
    Status s = decodeEntries(enc, &back);
    REQUIRE_MESSAGE(s.ok(), s.toString());
    CHECK(back == entries);
    // The same through startPayload/addEntry (the commit path).
    std::string built;
    startPayload(&built, static_cast<uint32_t>(entries.size()));
    for (const OplogEntry& e : entries)
        addEntry(&built, e.ts, e.txnId, e.op, e.ns, e.key, e.value);
    CHECK(built == enc);
    for (size_t n : prefixLengths(enc.size(), rng)) {
        back.push_back({});
        Status p = decodeEntries(std::string_view(enc).substr(0, n), &back);
        if (p.code() != StatusCode::kCorruption || !back.empty()) {
            CAPTURE(n);
            CHECK_MESSAGE(p.code() == StatusCode::kCorruption, p.toString());
            CHECK(back.empty());
        }
    }
    back.push_back({});
    Status longer = decodeEntries(enc + static_cast<char>(rng()), &back);
    CHECK_MESSAGE(longer.code() == StatusCode::kCorruption, longer.toString());
    CHECK(back.empty());
}

}  // namespace

TEST_CASE("oplog entries: random transactions, empty and long fields, round-trip exactly") {
    const uint32_t seed = mvkv::testing::testSeed();
    std::mt19937_64 rng(seed);
    for (int round = 0; round < 400; ++round) {
        CAPTURE(seed);
        CAPTURE(round);
        std::vector<OplogEntry> txn(round % 25 == 0 ? 500 + rng() % 1500 : rng() % 9);
        for (OplogEntry& e : txn)
            e = randomEntry(rng);
        checkRoundTrip(txn, rng);
    }
}

TEST_CASE(
    "oplog entries: the smallest entries (empty ns, key and value) decode; the bound is exact") {
    const uint32_t seed = mvkv::testing::testSeed();
    std::mt19937_64 rng(seed);
    // What issue 15 hit: `put b "" ""` in database a, and a delete of "".
    checkRoundTrip({{7, 3, OpType::kUpdate, "a.b", "", ""}}, rng);
    checkRoundTrip({{8, 4, OpType::kDelete, "a.b", "", ""}}, rng);
    for (size_t n : {1, 2, 3, 10, 1000}) {
        CAPTURE(n);
        std::vector<OplogEntry> minimal;
        for (size_t i = 0; i < n; ++i)
            minimal.push_back(
                {i % 2 ? UINT64_MAX : 0, i % 3 ? 0 : UINT64_MAX, kOps[i % 4], "", "", ""});
        checkRoundTrip(minimal, rng);
        const std::string enc = encodeEntries(minimal);
        CHECK(enc.size() == kPayloadHeaderBytes + n * kMinEntryBytes);
        // One more entry claimed than the bytes can hold: refused by the count bound.
        std::string more = enc;
        putU32(more.data(), static_cast<uint32_t>(n + 1));
        std::vector<OplogEntry> out;
        Status s = decodeEntries(more, &out);
        CHECK_MESSAGE(s.code() == StatusCode::kCorruption, s.toString());
        CHECK(s.message().find("does not fit") != std::string::npos);
    }
    // Every op and the extreme integers, one at a time.
    for (OpType op : kOps)
        for (uint64_t v : {uint64_t{0}, UINT64_MAX})
            checkRoundTrip({{v, v, op, "", "", ""}, {v, UINT64_MAX - v, op, "x", "", "y"}}, rng);
}

TEST_CASE("oplog entries: a long key and value, and a record of exactly kMaxRecordBytes") {
    const uint32_t seed = mvkv::testing::testSeed();
    std::mt19937_64 rng(seed);
    checkRoundTrip({{5, 5, OpType::kInsert, "db.c", std::string(64 * 1024, 'k'),
                     std::string(16 * 1024 * 1024, 'v')},
                    {5, 5, OpType::kDelete, "db.c", std::string(64 * 1024, 'k'), ""}},
                   rng);

    // The largest record the writer takes is read back and decoded: the
    // reader's limit is the writer's.
    const std::string ns = "a.b";
    std::vector<OplogEntry> big = {
        {UINT64_MAX, UINT64_MAX, OpType::kUpdate, ns, "",
         std::string(kMaxRecordBytes - kPayloadHeaderBytes - kMinEntryBytes - ns.size(), '\xab')}};
    const std::string enc = encodeEntries(big);
    REQUIRE(enc.size() == kMaxRecordBytes);
    TempDir dir("mvkv-oplog-entry-test");
    {
        auto w = LogWriter::create({dir.path, LogWriterOptions{}.segmentBytes}, 1);
        REQUIRE_MESSAGE(w.ok(), w.status().toString());
        mustOk(w.value()->append(enc, SyncMode::kWrite));
        CHECK_CODE(w.value()->append(enc + "x", SyncMode::kWrite), StatusCode::kInvalidArgument);
        mustOk(w.value()->close());
    }
    LogTail tail;
    size_t records = 0;
    std::vector<OplogEntry> back;
    mustOk(scanLog(
        dir.path,
        [&](uint64_t, uint64_t, std::string_view payload) {
            ++records;
            mustOk(decodeEntries(payload, &back));
        },
        &tail));
    CHECK_FALSE(tail.cut);
    CHECK(records == 1);
    CHECK(back == big);
}
