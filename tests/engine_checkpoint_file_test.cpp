// Checkpoint files (checkpoint/checkpoint_file.h): entries of several
// collections round-trip in order, binary bytes and values larger than a
// block included; an empty checkpoint is valid; only complete files under
// final names are listed; a writer dropped before finish leaves nothing; the
// prune keeps the newest N and sweeps temp files; and every damage — a cut at
// any byte, a flipped byte anywhere, a foreign magic, another version, bytes
// after the trailer, absurd lengths — is Corruption naming the file, never a
// crash. Random round trips (empty keys, values and names; an entry that
// fills a part exactly) read back equal and refuse every strict prefix.
// Randomized cases print their seed.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_file.h"
#include "checkpoint/checkpoint_format.h"
#include "oplog/log_format.h"
#include "tests/status_check.h"
#include "tests/temp_dir.h"
#include "tests/test_seed.h"

using namespace mvkv;
using namespace mvkv::checkpoint;
using mvkv::testing::mustOk;
using mvkv::testing::TempDir;

namespace {

struct Entry {
    uint32_t collection;
    std::string key;
    std::string value;
    bool operator==(const Entry&) const = default;
};

CheckpointMeta metaFor(uint64_t number,
                       std::vector<std::string> collections = {"db.a", "db.b", "db.c"}) {
    CheckpointMeta m;
    m.number = number;
    m.ts = 1000 + number;
    m.logEnd = {number + 3, 4096 * number + 24};
    m.collections = std::move(collections);
    return m;
}

std::string writeCheckpoint(const std::string& dir, const CheckpointMeta& meta,
                            const std::vector<Entry>& entries) {
    auto created = CheckpointWriter::create(dir, meta);
    REQUIRE_MESSAGE(created.ok(), created.status().toString());
    auto w = std::move(created).value();
    for (const Entry& e : entries)
        mustOk(w->add(e.collection, e.key, e.value));
    CHECK(w->entries() == entries.size());
    mustOk(w->finish());
    return w->path();
}

std::vector<Entry> readAll(const std::string& path, CheckpointMeta* meta) {
    std::vector<Entry> out;
    mustOk(readCheckpoint(path, meta, [&](uint32_t c, std::string_view k, std::string_view v) {
        out.push_back({c, std::string(k), std::string(v)});
        return Status::OK();
    }));
    return out;
}

std::string readFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void writeFile(const std::string& path, std::string_view bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), bytes.size());
}

std::set<std::string> filesIn(const std::string& dir) {
    std::set<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir))
        names.insert(e.path().filename().string());
    return names;
}

// Random entries over three collections; `maxValue` bytes of value at most.
std::vector<Entry> randomEntries(std::mt19937& rng, int n, size_t maxValue) {
    std::vector<Entry> out;
    for (int i = 0; i < n; ++i) {
        std::string value(rng() % (maxValue + 1), '\0');
        for (char& c : value)
            c = static_cast<char>(rng());
        out.push_back({static_cast<uint32_t>(rng() % 3), "key-" + std::to_string(i), value});
    }
    return out;
}

// verifyCheckpoint and readCheckpoint on `bytes` (as a file named so that
// the name-number check does not apply) both report Corruption naming it.
void expectCorruption(const std::string& dir, std::string_view bytes) {
    const std::string path = dir + "/damaged";
    // A new file each time: ext4 writes a truncated-and-rewritten file out
    // at close (auto_da_alloc), which made thousands of cuts disk-bound.
    std::filesystem::remove(path);
    writeFile(path, bytes);
    Status v = verifyCheckpoint(path, nullptr);
    CHECK_MESSAGE(v.code() == StatusCode::kCorruption, v.toString());
    CHECK(v.message().find(path) != std::string::npos);
    Status r = readCheckpoint(
        path, nullptr, [](uint32_t, std::string_view, std::string_view) { return Status::OK(); });
    CHECK_MESSAGE(r.code() == StatusCode::kCorruption, r.toString());
}

// Offsets to damage: all of them for a small file, else the first and last
// hundred (the header, the trailer) and ~128 at random between.
std::vector<size_t> damageOffsets(size_t size, std::mt19937& rng) {
    std::vector<size_t> out;
    for (size_t i = 0; i < size; ++i)
        if (size <= 4096 || i < 100 || i >= size - 100 || rng() % (size / 128) == 0)
            out.push_back(i);
    return out;
}

}  // namespace

TEST_CASE("checkpoint file: entries of several collections round-trip with the header") {
    TempDir dir("mvkv-ckpt-test");
    std::vector<Entry> entries;
    for (int i = 0; i < 1000; ++i)
        entries.push_back({static_cast<uint32_t>(i % 3), "k" + std::to_string(i),
                           std::string(static_cast<size_t>(i % 50), 'v')});
    const CheckpointMeta meta = metaFor(42);
    const std::string path = writeCheckpoint(dir.path, meta, entries);
    CHECK(path == dir.path + "/checkpoint-000000000000002a.mvkvckpt");
    CHECK(checkpointFileName(42) == "checkpoint-000000000000002a.mvkvckpt");
    CHECK(filesIn(dir.path) == std::set<std::string>{"checkpoint-000000000000002a.mvkvckpt"});

    CheckpointMeta got;
    mustOk(verifyCheckpoint(path, &got));
    CHECK(got.number == 42);
    CHECK(got.ts == meta.ts);
    CHECK(got.logEnd.segment == meta.logEnd.segment);
    CHECK(got.logEnd.offset == meta.logEnd.offset);
    CHECK(got.collections == meta.collections);
    CHECK(got.entries == 1000);
    CHECK(got.fileBytes == std::filesystem::file_size(path));
    CheckpointMeta read;
    CHECK(readAll(path, &read) == entries);
    CHECK(read.entries == 1000);
    CHECK(read.collections == meta.collections);
    mustOk(verifyCheckpoint(path, nullptr));
}

TEST_CASE("checkpoint file: an empty checkpoint, with or without collections") {
    TempDir dir("mvkv-ckpt-test");
    for (auto collections : {std::vector<std::string>{}, std::vector<std::string>{"db.empty"}}) {
        CAPTURE(collections.size());
        const uint64_t number = collections.size() + 1;
        const std::string path = writeCheckpoint(dir.path, metaFor(number, collections), {});
        CheckpointMeta got;
        mustOk(verifyCheckpoint(path, &got));
        CHECK(got.entries == 0);
        CHECK(got.collections == collections);
        CHECK(readAll(path, nullptr).empty());
    }
}

TEST_CASE("checkpoint file: large values span many blocks; one over a block gets its own") {
    TempDir dir("mvkv-ckpt-test");
    const uint32_t seed = std::random_device{}();
    CAPTURE(seed);
    std::mt19937 rng(seed);
    std::vector<Entry> entries = randomEntries(rng, 200, 64 * 1024);
    entries.insert(entries.begin() + 100, {1, "huge", std::string(3 * kCheckpointBlockBytes, 'h')});
    const std::string path = writeCheckpoint(dir.path, metaFor(1), entries);
    CHECK(readAll(path, nullptr) == entries);
    const std::string bytes = readFile(path);
    const uint64_t blocks = oplog::getU64(bytes.data() + bytes.size() - 8);  // the trailer's count
    CHECK(blocks >= 20);
    CHECK(bytes.size() > 8 * kCheckpointBlockBytes);
}

TEST_CASE("checkpoint file: binary keys and values, NUL bytes and empty ones, travel intact") {
    TempDir dir("mvkv-ckpt-test");
    using namespace std::string_literals;
    std::vector<Entry> entries = {
        {0, ""s, ""s},
        {0, "\0"s, "\0\0\0"s},
        {1, "a\0b"s, "\xff\xfe\0\x01"s},
        {2, std::string(300, '\0'), std::string(1000, '\xff')},
        {1, "\x80\x00\x7f"s, ""s},
    };
    const std::string path = writeCheckpoint(dir.path, metaFor(5), entries);
    CHECK(readAll(path, nullptr) == entries);
}

TEST_CASE("checkpoint file: bad arguments to the writer") {
    TempDir dir("mvkv-ckpt-test");
    auto w = std::move(CheckpointWriter::create(dir.path, metaFor(1)).value());
    CHECK_CODE(w->add(3, "k", "v"), StatusCode::kInvalidArgument);  // three collections
    mustOk(w->add(2, "k", "v"));
    mustOk(w->finish());
    CHECK_CODE(w->finish(), StatusCode::kIllegalOperation);
    CHECK_CODE(w->add(0, "k", "v"), StatusCode::kIllegalOperation);
    CHECK(w->entries() == 1);
    // The number is taken; a directory that is not there is an IOError.
    CHECK_CODE(CheckpointWriter::create(dir.path, metaFor(1)).status(),
               StatusCode::kInvalidArgument);
    CHECK_CODE(CheckpointWriter::create(dir.path + "/missing", metaFor(2)).status(),
               StatusCode::kIOError);
}

TEST_CASE("checkpoint file: listCheckpoints lists complete files, newest first") {
    TempDir dir("mvkv-ckpt-test");
    for (uint64_t n : {3ull, 10ull, 7ull, 0x1234567890ull})
        writeCheckpoint(dir.path, metaFor(n), {{0, "k", "v"}});
    writeFile(dir.path + "/" + checkpointFileName(99) + ".tmp", "half written");
    writeFile(dir.path + "/README", "not a checkpoint");
    writeFile(dir.path + "/checkpoint-00000000000000zz.mvkvckpt", "bad hex");
    writeFile(dir.path + "/checkpoint-000000000000000A.mvkvckpt", "upper case");
    writeFile(dir.path + "/checkpoint-0000000000000a.mvkvckpt", "short");
    std::filesystem::create_directory(dir.path + "/" + checkpointFileName(500));
    auto listed = listCheckpoints(dir.path);
    REQUIRE_OK(listed.status());
    std::vector<uint64_t> numbers;
    for (const CheckpointFile& f : listed.value()) {
        numbers.push_back(f.number);
        CHECK(f.path == dir.path + "/" + checkpointFileName(f.number));
    }
    CHECK(numbers == std::vector<uint64_t>{0x1234567890, 10, 7, 3});
    CHECK_CODE(listCheckpoints(dir.path + "/missing").status(), StatusCode::kIOError);
}

TEST_CASE("checkpoint file: a writer dropped before finish leaves neither file nor temp") {
    TempDir dir("mvkv-ckpt-test");
    std::string path;
    {
        auto w = std::move(CheckpointWriter::create(dir.path, metaFor(8)).value());
        path = w->path();
        std::mt19937 rng(8);
        for (const Entry& e : randomEntries(rng, 100, 10000))
            mustOk(w->add(e.collection, e.key, e.value));  // some blocks are written
        CHECK(std::filesystem::exists(path + ".tmp"));
        CHECK_FALSE(std::filesystem::exists(path));
    }
    CHECK(filesIn(dir.path).empty());
    auto listed = listCheckpoints(dir.path);
    REQUIRE_OK(listed.status());
    CHECK(listed.value().empty());
}

TEST_CASE("checkpoint file: pruneCheckpoints keeps the newest N and removes temp files") {
    TempDir dir("mvkv-ckpt-test");
    for (uint64_t n = 1; n <= 5; ++n)
        writeCheckpoint(dir.path, metaFor(n), {{0, "k", "v"}});
    writeFile(dir.path + "/" + checkpointFileName(6) + ".tmp", "crashed mid-write");
    writeFile(dir.path + "/" + checkpointFileName(2) + ".tmp", "an older crash");
    writeFile(dir.path + "/notes.tmp", "not ours");
    mustOk(pruneCheckpoints(dir.path, 2));
    CHECK(filesIn(dir.path) ==
          std::set<std::string>{checkpointFileName(5), checkpointFileName(4), "notes.tmp"});
    mustOk(pruneCheckpoints(dir.path, 10));  // nothing to do
    CHECK(filesIn(dir.path).size() == 3);
    mustOk(verifyCheckpoint(dir.path + "/" + checkpointFileName(5), nullptr));
    mustOk(pruneCheckpoints(dir.path, 0));
    CHECK(filesIn(dir.path) == std::set<std::string>{"notes.tmp"});
}

TEST_CASE("checkpoint file: a file cut at any byte is Corruption") {
    TempDir dir("mvkv-ckpt-test");
    const uint32_t seed = std::random_device{}();
    CAPTURE(seed);
    std::mt19937 rng(seed);
    for (int maxValue : {40, 30000}) {  // ~2 KiB, one block; ~3 MiB, a dozen blocks
        CAPTURE(maxValue);
        const std::string path =
            writeCheckpoint(dir.path, metaFor(static_cast<uint64_t>(maxValue)),
                            randomEntries(rng, 200, static_cast<size_t>(maxValue)));
        const std::string bytes = readFile(path);
        for (size_t cut : damageOffsets(bytes.size(), rng)) {
            CAPTURE(cut);
            expectCorruption(dir.path, std::string_view(bytes).substr(0, cut));
        }
    }
}

TEST_CASE("checkpoint file: a flipped byte anywhere is Corruption") {
    TempDir dir("mvkv-ckpt-test");
    const uint32_t seed = std::random_device{}();
    CAPTURE(seed);
    std::mt19937 rng(seed);
    for (int maxValue : {40, 30000}) {
        CAPTURE(maxValue);
        const std::string path =
            writeCheckpoint(dir.path, metaFor(static_cast<uint64_t>(maxValue)),
                            randomEntries(rng, 200, static_cast<size_t>(maxValue)));
        std::string bytes = readFile(path);
        for (size_t at : damageOffsets(bytes.size(), rng)) {
            CAPTURE(at);
            const char flip = static_cast<char>(1u << (rng() % 8));
            bytes[at] ^= flip;
            expectCorruption(dir.path, bytes);
            bytes[at] ^= flip;
        }
        writeFile(dir.path + "/damaged", bytes);  // restored: good again
        mustOk(verifyCheckpoint(dir.path + "/damaged", nullptr));
    }
}

TEST_CASE("checkpoint file: foreign files, other versions and trailing bytes get clear errors") {
    TempDir dir("mvkv-ckpt-test");
    const std::string path = writeCheckpoint(dir.path, metaFor(1), {{0, "k", "v"}});
    const std::string good = readFile(path);
    const std::string damaged = dir.path + "/damaged";
    auto corruption = [&](std::string_view bytes) {
        writeFile(damaged, bytes);
        Status s = verifyCheckpoint(damaged, nullptr);
        CHECK_MESSAGE(s.code() == StatusCode::kCorruption, s.toString());
        return s.message();
    };
    // The header part re-framed (a valid checksum) around a changed payload.
    const size_t headerLen = oplog::getU32(good.data());
    auto withHeader = [&](std::string payload) {
        std::string out;
        oplog::appendRecord(out, payload);
        return out + good.substr(oplog::kRecordHeaderBytes + headerLen);
    };
    const std::string header = good.substr(oplog::kRecordHeaderBytes, headerLen);

    std::string bytes = good;
    bytes.replace(12, 8, "MVKVLOG\n");
    CHECK(corruption(bytes).find("bad magic") != std::string::npos);
    CHECK(corruption(withHeader("MVKVLOG\n" + header.substr(8))).find("bad magic") !=
          std::string::npos);
    CHECK(corruption(std::string(200, 'x')).find("bad magic") != std::string::npos);
    CHECK(corruption("tiny").find("too short") != std::string::npos);
    CHECK(corruption("").find("too short") != std::string::npos);

    std::string v4 = header;
    oplog::putU32(v4.data() + 8, 4);
    CHECK(corruption(withHeader(v4)).find("format version 4; this build reads versions 1 to 3") !=
          std::string::npos);
    // Read as version 2 or 3, a version 1 header lacks the collections' options.
    for (uint32_t version : {2u, 3u}) {
        std::string later = header;
        oplog::putU32(later.data() + 8, version);
        CHECK(corruption(withHeader(later)).find("malformed header") != std::string::npos);
    }

    CHECK(corruption(good + "x").find("1 bytes after the trailer") != std::string::npos);
    CHECK(corruption(good + good).find("after the trailer") != std::string::npos);

    // The header says checkpoint 1; under checkpoint 2's name that is damage.
    writeFile(dir.path + "/" + checkpointFileName(2), good);
    Status s = verifyCheckpoint(dir.path + "/" + checkpointFileName(2), nullptr);
    CHECK(s.code() == StatusCode::kCorruption);
    CHECK(s.message().find("says checkpoint 1") != std::string::npos);
    CHECK_CODE(verifyCheckpoint(dir.path + "/missing", nullptr), StatusCode::kIOError);
}

TEST_CASE("checkpoint file: absurd lengths and counts are Corruption, not allocations") {
    TempDir dir("mvkv-ckpt-test");
    const std::string good = readFile(writeCheckpoint(dir.path, metaFor(1), {{0, "k", "v"}}));
    const size_t headerLen = oplog::getU32(good.data());
    const std::string header = good.substr(oplog::kRecordHeaderBytes, headerLen);
    const std::string rest = good.substr(oplog::kRecordHeaderBytes + headerLen);
    auto message = [&](std::string bytes) {
        writeFile(dir.path + "/damaged", bytes);
        Status s = verifyCheckpoint(dir.path + "/damaged", nullptr);
        CHECK_MESSAGE(s.code() == StatusCode::kCorruption, s.toString());
        return s.message();
    };
    std::string bytes = good;
    oplog::putU32(bytes.data(), 0xfffffff0u);
    CHECK(message(bytes).find("over the limit") != std::string::npos);
    oplog::putU32(bytes.data(), 1u << 20);
    CHECK(message(bytes).find("runs past the end") != std::string::npos);

    // Valid checksums around a collection count and a name length that lie.
    const size_t countAt = 8 + 4 + 8 * 4;
    std::string h = header;
    oplog::putU32(h.data() + countAt, 0xffffffffu);
    std::string framed;
    oplog::appendRecord(framed, h);
    CHECK(message(framed + rest).find("malformed header") != std::string::npos);
    h = header;
    oplog::putU32(h.data() + countAt + 4, 0x7fffffffu);  // the first name's length
    framed.clear();
    oplog::appendRecord(framed, h);
    CHECK(message(framed + rest).find("malformed header") != std::string::npos);

    // A block whose entry claims a key longer than the block.
    std::string block("\x01", 1);
    block.append(4, '\0');
    block.append("\xff\xff\xff\x7f", 4);
    block.append("key");
    framed.clear();
    oplog::appendRecord(framed, header);
    oplog::appendRecord(framed, block);
    CHECK(message(framed).find("runs past the end of its block") != std::string::npos);
}

TEST_CASE("checkpoint file: readCheckpoint stops at the callback's first error") {
    TempDir dir("mvkv-ckpt-test");
    std::mt19937 rng(4);
    const std::string path = writeCheckpoint(dir.path, metaFor(4), randomEntries(rng, 3000, 500));
    int calls = 0;
    CheckpointMeta meta;
    Status s = readCheckpoint(path, &meta, [&](uint32_t, std::string_view, std::string_view) {
        CHECK(meta.collections.size() == 3);  // the header's fields come first
        return ++calls == 5 ? Status::Interrupted("enough") : Status::OK();
    });
    CHECK(s.code() == StatusCode::kInterrupted);
    CHECK(s.message() == "enough");
    CHECK(calls == 5);
}

// --- The round trip as a property (issue 15: every reader bound derived from
// the writer). Random collections (empty names included: the file format
// allows them, though the catalog does not) and entries (empty keys and
// values, long ones across blocks), extreme header integers; the file reads
// back equal, its header part is exactly the writer's size, and every strict
// prefix and the file plus one byte are Corruption.

namespace {

std::string randomBytes(std::mt19937_64& rng, size_t longest) {
    size_t n = rng() % 10 < 3 ? 0 : rng() % 10 == 0 ? rng() % (longest + 1) : rng() % 32;
    std::string s(n, '\0');
    for (char& c : s)
        c = static_cast<char>(rng());
    return s;
}

uint64_t edgeU64(std::mt19937_64& rng) {
    const uint64_t r = rng();
    return r % 3 == 0 ? 0 : r % 3 == 1 ? UINT64_MAX : rng();
}

// The round trip and the cuts for one checkpoint.
void checkCheckpointRoundTrip(const std::string& dir, const CheckpointMeta& meta,
                              const std::vector<Entry>& entries, std::mt19937_64& rng) {
    const std::string path = writeCheckpoint(dir, meta, entries);
    CheckpointMeta got;
    REQUIRE_OK(verifyCheckpoint(path, &got));
    CHECK(got.number == meta.number);
    CHECK(got.ts == meta.ts);
    CHECK(got.logEnd.segment == meta.logEnd.segment);
    CHECK(got.logEnd.offset == meta.logEnd.offset);
    CHECK(got.collections == meta.collections);
    CHECK(got.entries == entries.size());
    CHECK(readAll(path, nullptr) == entries);
    const std::string bytes = readFile(path);
    size_t headerBytes = checkpoint_format::kHeaderFixedBytes;
    for (const std::string& name : meta.collections)
        headerBytes += checkpoint_format::kNameFixedBytes + name.size();
    CHECK(oplog::getU32(bytes.data()) == headerBytes);
    // Every cut of a small file; of a larger one the header's fixed part,
    // the trailer and 16 at random (each cut is a file written and read).
    const bool small = bytes.size() <= 1024;
    std::vector<size_t> cuts;
    for (size_t n = 0; n < bytes.size(); ++n)
        if (small || n < 64 || n >= bytes.size() - 32)
            cuts.push_back(n);
    for (int i = 0; !small && i < 16; ++i)
        cuts.push_back(rng() % bytes.size());
    for (size_t n : cuts) {
        CAPTURE(n);
        expectCorruption(dir, std::string_view(bytes).substr(0, n));
    }
    expectCorruption(dir, bytes + static_cast<char>(rng()));
    std::filesystem::remove(path);
}

}  // namespace

TEST_CASE("checkpoint file: random entries, empty keys, values and names, round-trip exactly") {
    TempDir dir("mvkv-ckpt-test");
    const uint32_t seed = mvkv::testing::testSeed();
    std::mt19937_64 rng(seed);
    for (uint64_t round = 1; round <= 40; ++round) {
        CAPTURE(seed);
        CAPTURE(round);
        CheckpointMeta meta;
        meta.number = round;
        meta.ts = edgeU64(rng);
        meta.logEnd = {edgeU64(rng), edgeU64(rng)};
        const size_t collections = rng() % 6;
        for (size_t c = 0; c < collections; ++c)
            meta.collections.push_back(c == 0 && rng() % 2 ? std::string() : randomBytes(rng, 60));
        std::vector<Entry> entries;
        // Now and then many entries; otherwise a few, some over a block.
        const bool many = round % 8 == 0;
        const size_t n = collections == 0 ? 0 : many ? 2000 : rng() % 40;
        for (size_t i = 0; i < n; ++i)
            entries.push_back({static_cast<uint32_t>(rng() % collections), randomBytes(rng, 4096),
                               randomBytes(rng, many ? 2000 : 3 * kCheckpointBlockBytes / 2)});
        checkCheckpointRoundTrip(dir.path, meta, entries, rng);
    }
}

TEST_CASE("checkpoint file: the smallest names and entries decode; the header's count is exact") {
    TempDir dir("mvkv-ckpt-test");
    const uint32_t seed = mvkv::testing::testSeed();
    std::mt19937_64 rng(seed);
    CheckpointMeta meta = metaFor(1, {"", "", ""});
    checkCheckpointRoundTrip(dir.path, meta, {{0, "", ""}, {2, "", ""}, {1, "", ""}}, rng);
    // Three empty names: after the count, 3 * kNameFixedBytes bytes. A
    // count of 4 on the same bytes cannot fit and is refused.
    const std::string good = readFile(writeCheckpoint(dir.path, metaFor(2, {"", "", ""}), {}));
    const size_t headerLen = oplog::getU32(good.data());
    REQUIRE(headerLen ==
            checkpoint_format::kHeaderFixedBytes + 3 * checkpoint_format::kNameFixedBytes);
    std::string h = good.substr(oplog::kRecordHeaderBytes, headerLen);
    oplog::putU32(h.data() + checkpoint_format::kHeaderFixedBytes - 4, 4);
    std::string framed;
    oplog::appendRecord(framed, h);
    writeFile(dir.path + "/damaged", framed + good.substr(oplog::kRecordHeaderBytes + headerLen));
    Status s = verifyCheckpoint(dir.path + "/damaged", nullptr);
    CHECK_MESSAGE(s.code() == StatusCode::kCorruption, s.toString());
    CHECK(s.message().find("malformed header") != std::string::npos);
}

TEST_CASE("checkpoint file: an entry that fills a part exactly is written and read back") {
    TempDir dir("mvkv-ckpt-test");
    const size_t most = kCheckpointMaxPartBytes - 1 - checkpoint_format::kEntryFixedBytes;
    auto w = std::move(CheckpointWriter::create(dir.path, metaFor(1, {"a.b"})).value());
    CHECK_CODE(w->add(0, "", std::string(most + 1, 'x')), StatusCode::kInvalidArgument);
    mustOk(w->add(0, "k", ""));
    mustOk(w->add(0, "", std::string(most, 'v')));
    mustOk(w->add(0, "", ""));
    mustOk(w->finish());
    std::vector<Entry> back = readAll(w->path(), nullptr);
    REQUIRE(back.size() == 3);
    CHECK(back[0] == Entry{0, "k", ""});
    CHECK(back[1].value.size() == most);
    CHECK(back[2] == Entry{0, "", ""});
}
