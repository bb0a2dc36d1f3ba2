// The oplog's log file layer (oplog/log_writer.h, log_reader.h): records
// come back in order across segments in every sync mode; a log cut at any
// byte of its last record, or with a flipped byte in the middle, recovers to
// the last good record with the cut reported and can be written again;
// concurrent appenders (group commit) lose and duplicate nothing; bad input
// gets a clear error; oplog entries round-trip through a record payload and
// malformed payloads are Corruption. Counts, not timing.
#include <doctest/doctest.h>
#include <stdlib.h>
#include <xxhash.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "oplog/log_format.h"
#include "oplog/log_reader.h"
#include "oplog/log_writer.h"
#include "oplog/oplog.h"
#include "oplog/oplog_entry.h"
#include "tests/status_check.h"
#include "tests/temp_dir.h"

using namespace mvkv;
using namespace mvkv::oplog;
using mvkv::testing::mustOk;
using mvkv::testing::TempDir;

namespace {


std::unique_ptr<LogWriter> openWriter(const std::string& dir, uint64_t segment,
                                      uint64_t segmentBytes = 4096) {
    auto w = LogWriter::create({dir, segmentBytes}, segment);
    REQUIRE_MESSAGE(w.ok(), w.status().toString());
    return std::move(w).value();
}

std::string payloadFor(int i, std::mt19937& rng) {
    std::string p = "record-" + std::to_string(i) + ":";
    p.append(rng() % 300, static_cast<char>('a' + i % 26));
    if (i % 7 == 0)
        p.push_back('\0');  // binary bytes travel too
    return p;
}

struct Scanned {
    std::vector<std::string> payloads;
    std::vector<LogPosition> positions;
    LogTail tail;
};

Scanned scan(const std::string& dir) {
    Scanned out;
    mustOk(scanLog(
        dir,
        [&](uint64_t seg, uint64_t off, std::string_view p) {
            out.payloads.emplace_back(p);
            out.positions.push_back({seg, off});
        },
        &out.tail));
    return out;
}

std::string segmentPath(const std::string& dir, uint64_t n) {
    return dir + "/" + segmentFileName(n);
}

}  // namespace

TEST_CASE("oplog log: records come back in order across segments, in every sync mode") {
    for (SyncMode mode : {SyncMode::kNone, SyncMode::kWrite, SyncMode::kFsync}) {
        CAPTURE(syncModeName(mode));
        TempDir dir("mvkv-oplog-test");
        std::mt19937 rng(1);
        std::vector<std::string> written;
        std::vector<LogPosition> where;
        {
            auto w = openWriter(dir.path, 1);
            for (int i = 0; i < 300; ++i) {
                written.push_back(payloadFor(i, rng));
                LogPosition pos;
                mustOk(w->append(written.back(), mode, &pos));
                where.push_back(pos);
            }
            mustOk(w->close());
            LogWriter::Stats st = w->stats();
            CHECK(st.records == 300);
            CHECK(st.segments > 3);  // 4 KiB segments
            CHECK(st.batches <= st.records + 1);  // + close()'s flush
        }
        Scanned s = scan(dir.path);
        CHECK_FALSE(s.tail.cut);
        CHECK(s.tail.records == 300);
        REQUIRE(s.payloads == written);
        for (size_t i = 0; i < where.size(); ++i) {
            CHECK(s.positions[i].segment == where[i].segment);
            CHECK(s.positions[i].offset == where[i].offset);
        }
    }
}

TEST_CASE("oplog log: a last record torn at any byte recovers to the record before it") {
    TempDir dir("mvkv-oplog-test");
    std::mt19937 rng(2);
    std::vector<std::string> written;
    LogPosition last;
    {
        auto w = openWriter(dir.path, 7, 1 << 20);  // one segment
        for (int i = 0; i < 20; ++i) {
            written.push_back(payloadFor(i, rng));
            mustOk(w->append(written.back(), SyncMode::kWrite, &last));
        }
        mustOk(w->close());
    }
    const std::string path = segmentPath(dir.path, 7);
    const uint64_t full = std::filesystem::file_size(path);
    std::string original;
    {
        std::ifstream in(path, std::ios::binary);
        original.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    for (uint64_t cut = last.offset; cut < full; ++cut) {
        CAPTURE(cut);
        std::filesystem::resize_file(path, cut);
        Scanned s = scan(dir.path);
        REQUIRE(s.payloads.size() == 19);
        CHECK(s.payloads.back() == written[18]);
        if (cut == last.offset) {
            CHECK_FALSE(s.tail.cut);  // the file ends exactly after record 19
        } else {
            CHECK(s.tail.cut);
            CHECK(s.tail.damage == LogDamage::kTornTail);
            CHECK(s.tail.recordsAfter == 0);
            CHECK(s.tail.segment == 7);
            CHECK(s.tail.offset == last.offset);
            CHECK(s.tail.bytesCut == cut - last.offset);
        }
        std::ofstream(path, std::ios::binary | std::ios::trunc) << original;  // restore
    }
    // Cut for real at a torn point, then keep writing in a new segment.
    std::filesystem::resize_file(path, full - 3);
    Scanned torn = scan(dir.path);
    REQUIRE(torn.tail.cut);
    mustOk(cutLogTail(dir.path, torn.tail));
    CHECK(std::filesystem::file_size(path) == last.offset);
    {
        auto w = openWriter(dir.path, torn.tail.lastSegment + 1);
        mustOk(w->append("after recovery", SyncMode::kFsync));
        mustOk(w->close());
    }
    Scanned again = scan(dir.path);
    CHECK_FALSE(again.tail.cut);
    REQUIRE(again.payloads.size() == 20);
    CHECK(again.payloads[18] == written[18]);
    CHECK(again.payloads[19] == "after recovery");
}

TEST_CASE("oplog log: a flipped byte stops recovery at its record; later segments are cut too") {
    TempDir dir("mvkv-oplog-test");
    std::mt19937 rng(3);
    std::vector<std::string> written;
    std::vector<LogPosition> where;
    {
        auto w = openWriter(dir.path, 1, 2048);
        for (int i = 0; i < 60; ++i) {
            written.push_back(payloadFor(i, rng));
            LogPosition pos;
            mustOk(w->append(written.back(), SyncMode::kWrite, &pos));
            where.push_back(pos);
        }
        mustOk(w->close());
    }
    const int victim = 20;
    const LogPosition bad = where[victim];
    REQUIRE(bad.segment < where.back().segment);  // later segments exist
    const std::string path = segmentPath(dir.path, bad.segment);
    {
        std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
        f.seekg(static_cast<std::streamoff>(bad.offset + kRecordHeaderBytes + 3));
        char c;
        f.get(c);
        f.seekp(static_cast<std::streamoff>(bad.offset + kRecordHeaderBytes + 3));
        f.put(static_cast<char>(c ^ 0x40));
    }
    Scanned s = scan(dir.path);
    REQUIRE(s.payloads.size() == size_t(victim));
    CHECK(std::equal(s.payloads.begin(), s.payloads.end(), written.begin()));
    CHECK(s.tail.cut);
    CHECK(s.tail.segment == bad.segment);
    CHECK(s.tail.offset == bad.offset);
    CHECK(s.tail.reason == "checksum mismatch");
    // A whole record with a bad checksum, good ones after it: corruption,
    // and every later record is found again past it.
    CHECK(s.tail.damage == LogDamage::kCorruption);
    CHECK(s.tail.recordsAfter == written.size() - victim - 1);
    mustOk(cutLogTail(dir.path, s.tail));
    Scanned after = scan(dir.path);
    CHECK_FALSE(after.tail.cut);
    CHECK(after.payloads.size() == size_t(victim));
    // The segment stays when records before the bad one are in it.
    CHECK(after.tail.lastSegment ==
          (bad.offset > kSegmentHeaderBytes ? bad.segment : bad.segment - 1));
}

TEST_CASE("oplog log: concurrent appenders share writes and syncs and lose nothing") {
    TempDir dir("mvkv-oplog-test");
    constexpr int kThreads = 4;
    constexpr int kPerThread = 300;
    auto w = openWriter(dir.path, 1, 64 * 1024);
    std::vector<std::thread> threads;
    std::atomic<int> failed{0};
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < kPerThread; ++i) {
                SyncMode mode = i % 3 == 0 ? SyncMode::kNone
                                           : (i % 3 == 1 ? SyncMode::kWrite : SyncMode::kFsync);
                std::string p = "t" + std::to_string(t) + "-" + std::to_string(i);
                if (!w->append(p, mode).ok())
                    failed.fetch_add(1);
            }
        });
    }
    for (auto& th : threads)
        th.join();
    mustOk(w->close());
    CHECK(failed.load() == 0);
    LogWriter::Stats st = w->stats();
    CHECK(st.records == kThreads * kPerThread);
    // A sync only ever serves an fsync record (or close()): never more
    // syncs than those, and group commit may share one among several.
    CHECK(st.syncs <= uint64_t(kThreads * (kPerThread / 3)) + 1);
    Scanned s = scan(dir.path);
    CHECK_FALSE(s.tail.cut);
    REQUIRE(s.payloads.size() == size_t(kThreads * kPerThread));
    std::set<std::string> unique(s.payloads.begin(), s.payloads.end());
    CHECK(unique.size() == s.payloads.size());
    // Each thread's records appear in the order it appended them.
    std::vector<int> next(kThreads, 0);
    for (const std::string& p : s.payloads) {
        int t = p[1] - '0';
        int i = std::stoi(p.substr(p.find('-') + 1));
        CHECK(i == next[size_t(t)]);
        next[size_t(t)] = i + 1;
    }
}

TEST_CASE("oplog log: bad input gets a clear error") {
    TempDir dir("mvkv-oplog-test");
    // A directory that does not exist.
    auto missing = LogWriter::create({dir.path + "/nope", 4096}, 1);
    CHECK(missing.status().code() == StatusCode::kIOError);
    CHECK(missing.status().message().find("nope") != std::string::npos);
    // An existing segment is never overwritten.
    auto w = openWriter(dir.path, 1);
    CHECK(LogWriter::create({dir.path, 4096}, 1).status().code() == StatusCode::kIOError);
    // A record over the limit.
    std::string huge(kMaxRecordBytes + 1, 'x');
    CHECK(w->append(huge, SyncMode::kWrite).code() == StatusCode::kInvalidArgument);
    mustOk(w->append("fine", SyncMode::kWrite));
    mustOk(w->close());
    CHECK(w->append("late", SyncMode::kWrite).code() == StatusCode::kIllegalOperation);
    // Other files in the directory are ignored; a segment with a broken
    // header is where recovery stops.
    std::ofstream(dir.path + "/README") << "not a segment";
    std::ofstream(segmentPath(dir.path, 2), std::ios::binary) << "garbage header bytes";
    Scanned s = scan(dir.path);
    CHECK(s.payloads == std::vector<std::string>{"fine"});
    CHECK(s.tail.cut);
    CHECK(s.tail.segment == 2);
    CHECK(s.tail.offset == 0);
    mustOk(cutLogTail(dir.path, s.tail));
    CHECK_FALSE(std::filesystem::exists(segmentPath(dir.path, 2)));
    CHECK(std::filesystem::exists(dir.path + "/README"));
    // A segment of another format version is refused, not cut.
    std::string header = encodeSegmentHeader(2);
    putU32(header.data() + 8, kLogFormatVersion + 1);
    putU32(header.data() + 20, static_cast<uint32_t>(XXH3_64bits(header.data(), 20)));
    std::ofstream(segmentPath(dir.path, 2), std::ios::binary) << header;
    LogTail tail;
    Status v = scanLog(dir.path, [](uint64_t, uint64_t, std::string_view) {}, &tail);
    CHECK(v.code() == StatusCode::kCorruption);
    CHECK(v.message().find("format version") != std::string::npos);
    CHECK(std::filesystem::exists(segmentPath(dir.path, 2)));
    uint64_t n;
    CHECK(parseSegmentFileName(segmentFileName(42), &n));
    CHECK(n == 42);
    CHECK_FALSE(parseSegmentFileName("log-xyz.mvkvlog", &n));
}

TEST_CASE("oplog entries: a transaction's entries round-trip through one record payload") {
    std::vector<OplogEntry> txn = {
        {42, 7, OpType::kInsert, "app.users", "alice", "{\"age\":30}"},
        {42, 7, OpType::kUpdate, "app.users", std::string("b\0b", 3), std::string(5000, 'v')},
        {42, 7, OpType::kDelete, "app.users", "carol", ""},
        {42, 7, OpType::kCommand, "app.logs", "", "create"},
    };
    std::vector<OplogEntry> back;
    mustOk(decodeEntries(encodeEntries(txn), &back));
    CHECK(back == txn);
    mustOk(decodeEntries(encodeEntries({}), &back));
    CHECK(back.empty());
    // Through the log and back.
    TempDir dir("mvkv-oplog-test");
    {
        auto w = openWriter(dir.path, 1);
        mustOk(w->append(encodeEntries(txn), SyncMode::kFsync));
        mustOk(w->close());
    }
    Scanned s = scan(dir.path);
    REQUIRE(s.payloads.size() == 1);
    mustOk(decodeEntries(s.payloads[0], &back));
    CHECK(back == txn);
}

TEST_CASE("oplog entries: every malformed payload is Corruption, never a crash") {
    std::vector<OplogEntry> txn = {{5, 1, OpType::kInsert, "a.b", "k", "value"},
                                   {5, 1, OpType::kDelete, "a.b", "j", ""}};
    const std::string good = encodeEntries(txn);
    std::vector<OplogEntry> out;
    // Every truncation.
    for (size_t n = 0; n < good.size(); ++n) {
        CAPTURE(n);
        Status s = decodeEntries(std::string_view(good).substr(0, n), &out);
        CHECK(s.code() == StatusCode::kCorruption);
        CHECK(out.empty());
    }
    // Bytes left over.
    CHECK(decodeEntries(good + "x", &out).code() == StatusCode::kCorruption);
    // An unknown op byte (offset: count 4 + ts 8 + txn 8).
    std::string badOp = good;
    badOp[20] = 'z';
    Status op = decodeEntries(badOp, &out);
    CHECK(op.code() == StatusCode::kCorruption);
    CHECK(op.message().find("op byte") != std::string::npos);
    // A huge count or length.
    std::string badCount = good;
    putU32(badCount.data(), 0xffffffffu);
    CHECK(decodeEntries(badCount, &out).code() == StatusCode::kCorruption);
    std::string badLen = good;
    putU32(badLen.data() + 21, 0x7fffffffu);  // the first entry's ns length
    CHECK(decodeEntries(badLen, &out).code() == StatusCode::kCorruption);
    // Random garbage.
    std::mt19937 rng(9);
    for (int i = 0; i < 2000; ++i) {
        std::string junk(rng() % 64, '\0');
        for (char& c : junk)
            c = static_cast<char>(rng());
        Status s = decodeEntries(junk, &out);
        if (!s.ok())
            CHECK(out.empty());
    }
}

TEST_CASE("oplog log: an older segment cut at a record boundary, or grown, is corruption; nothing past it is read") {
    TempDir dir("mvkv-oplog-test");
    std::mt19937 rng(9);
    std::vector<std::string> written;
    std::vector<LogPosition> where;
    {
        auto w = openWriter(dir.path, 1, 2048);
        for (int i = 0; i < 40; ++i) {
            written.push_back(payloadFor(i, rng));
            LogPosition pos;
            mustOk(w->append(written.back(), SyncMode::kWrite, &pos));
            where.push_back(pos);
        }
        mustOk(w->close());
    }
    REQUIRE(where.back().segment >= 3);
    const std::string first = segmentPath(dir.path, 1);
    std::string original;
    {
        std::ifstream in(first, std::ios::binary);
        original.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    size_t inFirst = 0;
    while (where[inFirst].segment == 1)
        ++inFirst;
    SUBCASE("cut at its last record's start") {
        std::filesystem::resize_file(first, where[inFirst - 1].offset);
        Scanned s = scan(dir.path);
        CHECK(s.tail.damage == LogDamage::kCorruption);
        CHECK(s.tail.segment == 1);
        CHECK(s.tail.offset == where[inFirst - 1].offset);
        CHECK(s.tail.reason.find("its end is missing") != std::string::npos);
        CHECK(s.payloads.size() == inFirst - 1);
        CHECK(s.tail.recordsAfter == written.size() - inFirst);
    }
    SUBCASE("a whole record appended to it") {
        std::string grown = original;
        appendRecord(grown, "appended later");
        std::ofstream(first, std::ios::binary | std::ios::trunc) << grown;
        Scanned s = scan(dir.path);
        CHECK(s.tail.damage == LogDamage::kCorruption);
        CHECK(s.tail.segment == 1);
        CHECK(s.tail.offset == original.size());
        CHECK(s.tail.reason.find("bytes were added") != std::string::npos);
        CHECK(s.payloads.size() == inFirst);  // the appended record is not read as good
        CHECK(s.tail.recordsAfter == written.size() - inFirst + 1);
    }
}

TEST_CASE("oplog capping: records out of timestamp order across segments leave exactly with theirs") {
    // Append order is not timestamp order (a commit can log after a later
    // timestamp did), so a segment's records may sort after a newer
    // segment's. Capping visits only the index prefix up to the dropped
    // segments' newest timestamp; every record of a dropped segment must
    // still go, and every other record stay.
    TempDir dir("mvkv-oplog-cap-test");
    OplogOptions options;
    options.dir = dir.path;
    options.mode = SyncMode::kNone;
    options.segmentBytes = 4096;
    options.capBytes = 1;
    auto opened = Oplog::open(options, {}, 1, [] { return mvcc::Timestamp{0}; });
    mustOk(opened.status());
    Oplog& log = *opened.value();
    const std::string payload(500, 'p');
    for (uint64_t i = 0; i < 60; ++i) {
        // Every third record is 95 older than its place (so the records of
        // neighbouring segments, 7 to a segment, interleave), and record 10,
        // in segment 2, is the newest of the dropped ones: capping must take
        // the newest timestamp of every dropped segment, not the last one's.
        mvcc::Timestamp ts = 100 + 10 * i - (i % 3 == 0 ? 95 : 0);
        if (i == 10)
            ts = 420;
        mustOk(log.append(payload, ts, 2));
    }
    std::vector<RecordRef> before;
    mustOk(log.recordsAfter({}, true, ~mvcc::Timestamp{0}, 1000, &before));
    REQUIRE(before.size() == 60);
    const uint64_t cutAt = 5;  // segments 1-4 go
    REQUIRE(log.end().segment > cutAt);
    size_t interleaved = 0;  // a kept record sorted before a dropped one
    for (size_t i = 0; i + 1 < before.size(); ++i)
        interleaved += before[i].segment >= cutAt && before[i + 1].segment < cutAt;
    CHECK(interleaved > 0);
    mustOk(log.truncate({cutAt, 0}, ~mvcc::Timestamp{0}));
    std::vector<RecordRef> after;
    mustOk(log.recordsAfter({}, true, ~mvcc::Timestamp{0}, 1000, &after));
    std::vector<RecordRef> expected;
    for (const RecordRef& r : before)
        if (r.segment >= cutAt)
            expected.push_back(r);
    REQUIRE(after.size() == expected.size());
    for (size_t i = 0; i < after.size(); ++i) {
        CHECK(after[i].key == expected[i].key);
        CHECK(after[i].segment == expected[i].segment);
    }
    CHECK(log.stats().entries == 2 * expected.size());
    CHECK(log.stats().segmentsDropped == cutAt - 1);
    // A reader positioned at the oldest kept record lost the dropped ones after it.
    std::vector<RecordRef> lost;
    CHECK(log.recordsAfter(expected.front().key, false, ~mvcc::Timestamp{0}, 10, &lost).code() ==
          StatusCode::kCappedPositionLost);
}
