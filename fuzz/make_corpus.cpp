// make_corpus OUT: writes the fuzz targets' seed corpora into OUT/<target>/
// (fuzz/corpus/ in the tree; `scripts/fuzz --corpus` reruns it). The
// binary seeds are files a real engine wrote: a data directory filled with
// puts, inserts, removes, a range removal, timestamped and prepared
// transactions, a capped collection and a drop, then a
// checkpoint and more writes; its segments, its checkpoint and each oplog
// record's payload become seeds. The text seeds are shell scripts.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "checkpoint/checkpoint_file.h"
#include "mvkv/engine.h"
#include "mvkv/session.h"
#include "oplog/log_format.h"
#include "oplog/log_reader.h"

namespace fs = std::filesystem;

namespace {

void must(const mvkv::Status& s, const char* what) {
    if (!s.ok()) {
        std::fprintf(stderr, "make_corpus: %s: %s\n", what, s.toString().c_str());
        std::exit(1);
    }
}

void writeSeed(const fs::path& dir, const std::string& name, std::string_view bytes) {
    fs::create_directories(dir);
    std::ofstream(dir / name, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
}

void fill(const std::string& path) {
    mvkv::EngineOptions options;
    options.path = path;
    options.syncMode = mvkv::SyncMode::kNone;
    auto opened = mvkv::Engine::open(options);
    must(opened.status(), "open");
    auto& engine = *opened.value();
    auto s = std::move(engine.openSession()).value();
    must(s->createCollection("db.c"), "create");
    for (int i = 0; i < 20; ++i)
        must(s->put("db.c", "key" + std::to_string(i), std::string(size_t(i) * 7, char('a' + i))),
             "put");
    must(s->insert("db.c", std::string_view("\xff\x00bin", 5), "caf\xc3\xa9"), "insert");
    must(s->remove("db.c", "key3"), "remove");
    must(s->removeRange("db.c", {"key10", "key15"}).status(), "removeRange");
    must(s->begin(), "begin");
    must(s->put("db.c", "ts", "at 50"), "put in txn");
    must(s->commit(mvkv::Timestamp(50)).status(), "commit");
    must(s->begin(), "begin");
    must(s->put("db.c", "prepared", "p"), "put in txn");
    must(s->prepare(60), "prepare");
    must(s->commit(70, 71).status(), "commit prepared");
    mvkv::CollectionOptions capped;
    capped.capped = true;
    capped.cappedSizeBytes = 1 << 20;
    must(s->createCollection("db.capped", capped), "create capped");
    must(s->put("db.capped", "c1", "v"), "put capped");
    must(s->createCollection("db.gone"), "create");
    must(s->put("db.gone", "k", "v"), "put");
    must(s->dropCollection("db.gone"), "drop");
    must(engine.setStableTimestamp(71), "stable");
    must(engine.checkpoint(), "checkpoint");
    must(s->update("db.c", "key1", "after the checkpoint"), "update");
    s.reset();
    must(engine.close(), "close");
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: make_corpus OUT_DIR\n");
        return 2;
    }
    const fs::path out = argv[1];
    const fs::path data = fs::temp_directory_path() / ("mvkv-corpus-" + std::to_string(::getpid()));
    fs::remove_all(data);
    fill(data.string());

    int n = 0;
    for (const auto& e : fs::directory_iterator(data)) {
        std::ifstream in(e.path(), std::ios::binary);
        std::string bytes((std::istreambuf_iterator<char>(in)), {});
        uint64_t number;
        const std::string name = e.path().filename().string();
        if (mvkv::oplog::parseSegmentFileName(name, &number))
            writeSeed(out / "log_reader", name, bytes);
        else if (name.find(".mvkvckpt") != std::string::npos)
            writeSeed(out / "checkpoint_reader", name, bytes);
    }
    mvkv::oplog::LogTail tail;
    must(mvkv::oplog::scanLog(
             data.string(),
             [&](uint64_t, uint64_t, std::string_view payload) {
                 writeSeed(out / "oplog_entry", "record-" + std::to_string(++n), payload);
             },
             &tail),
         "scanLog");
    fs::remove_all(data);

    const std::vector<std::string> scripts = {
        "create c; put c a 1; get c a; scan c; count c; del c a; show collections",
        "create c\nsession s2; begin; put c k v\nsession main; drop c\nsession s2; commit; get c k",
        "create c; put c k 1; begin read_ts=0; put c k 2; prepare prepare_ts=5\n"
        "session s2; get c k; scan c\nsession main; commit commit_ts=6 durable_ts=6; history c k",
        "create c; put c \"a b\" \"x;y\"; put c 0xff00 0x00; scan c; delrange c a z; oplog",
        "set stable 10; set oldest 5; ts; gc; checkpoint; serverstatus; currentop; locks",
        "create t; ttl t 60; put t k v; ttl; collmod t expireAfterSeconds=1; ttl run",
        "profile 2; create c; put c k v; get c k; show profile; profile 0; killop 1",
        "use other; create c; insert c k v; update c k w; dropdb other; sessions; jobs",
        "begin; put c k v; abort; readconcern majority; get c k; help get; quit",
    };
    for (size_t i = 0; i < scripts.size(); ++i) {
        writeSeed(out / "shell_line", "script-" + std::to_string(i), scripts[i]);
        writeSeed(out / "tokenizer", "line-" + std::to_string(i), scripts[i]);
    }
    const std::vector<std::string> bytes = {
        "plain", "caf\xc3\xa9", std::string("\x00\xff\xfe", 3), "\xe2\x82", "\xf0\x9f\x98\x80",
        "\xed\xa0\x80", "tab\there\nnewline", std::string(200, 'x') + "\xc3\xa9",
        "\"quoted\" \\ back"};
    for (size_t i = 0; i < bytes.size(); ++i)
        writeSeed(out / "display", "bytes-" + std::to_string(i), bytes[i]);
    std::printf("make_corpus: %d oplog records; seeds in %s\n", n, out.c_str());
    return 0;
}
