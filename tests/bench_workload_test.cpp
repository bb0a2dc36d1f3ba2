// A smoke run of every mvkv-bench workload with tiny sizes, on every engine
// this build has: each case runs (in its forked child, as in a real run) and
// reports numbers, and the storage workloads' own checks (values read back,
// snapshot unchanged, transfers conserving the total) pass. No timing is
// asserted.
#include <doctest/doctest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>

#include "bench/store.h"
#include "tests/temp_dir.h"
#include "bench/workload.h"

using namespace mvkv::bench;
using mvkv::testing::TempDir;

namespace {


BenchConfig tinyConfig(const std::string& dir) {
    BenchConfig config;
    config.threads = {1, 2};
    config.opsPerThread = 50;
    config.keys = 300;
    config.dir = dir;
    return config;
}

bool isStorageWorkload(const Workload& w) {
    return !w.caseNames.empty() && w.caseNames.front() == storeFactories().front().name;
}

void runEveryWorkload(const std::vector<std::string>& engines, std::vector<int> threads) {
    TempDir dir("mvkv-bench-test");
    WorkloadRegistry registry;
    registerBuiltinWorkloads(registry);
    BenchConfig config = tinyConfig(dir.path);
    config.engines = engines;
    config.threads = std::move(threads);
    int storage = 0;
    for (const Workload& w : registry.all()) {
        CAPTURE(w.name);
        if (!isStorageWorkload(w) && engines.front() != "mvkv")
            continue;  // the engine-less workloads run once, with mvkv's pass
        WorkloadResult result = w.run(config);
        REQUIRE(!result.rows.empty());
        for (const ResultRow& row : result.rows) {
            CAPTURE(row.caseName);
            CAPTURE(row.threads);
            CHECK_MESSAGE(row.error.empty(), row.error);
            CHECK(row.skipped.empty());
            CHECK(row.ops > 0);
            if (isStorageWorkload(w)) {
                CHECK(row.metric("p50_us").has_value());
                CHECK(row.metric("p99.9_us").value_or(-1) >= row.metric("p50_us").value_or(0));
                CHECK(row.metric("rss_mb").value_or(0) > 0);
                if (findRow(result.rows, "lmdb", row.threads) != nullptr)
                    CHECK(row.metric("vs_lmdb").has_value());
            }
        }
        storage += isStorageWorkload(w);
    }
    CHECK(storage == 18);
    // Every engine directory was removed afterwards.
    CHECK(std::filesystem::is_empty(dir.path));
}

}  // namespace

TEST_CASE("every workload runs on mvkv and LMDB with tiny sizes, 1 and 2 threads") {
    runEveryWorkload({"mvkv", "lmdb"}, {1, 2});
}

TEST_CASE("every storage workload runs on WiredTiger and RocksDB (when built), 2 threads") {
    std::vector<std::string> engines;
    for (const StoreFactory& f : storeFactories()) {
        if (f.available && f.name != "mvkv" && f.name != "lmdb")
            engines.push_back(f.name);
    }
    if (engines.empty()) {
        MESSAGE("neither WiredTiger nor RocksDB is built: skipped");
        return;
    }
    runEveryWorkload(engines, {2});
}

TEST_CASE("the fills write exactly keys / threads keys per thread, ignoring --ops") {
    TempDir dir("mvkv-bench-test");
    WorkloadRegistry registry;
    registerStorageWorkloads(registry);
    BenchConfig config = tinyConfig(dir.path);
    config.engines = {"mvkv", "lmdb"};
    config.keys = 301;
    WorkloadResult result = registry.find("fillrandom")->run(config);
    REQUIRE(result.rows.size() == 4);
    for (const ResultRow& row : result.rows) {
        CHECK(row.error.empty());
        CHECK(row.ops == 301 / uint64_t(row.threads) * uint64_t(row.threads));
    }
}

TEST_CASE("--sync fsync: mvkv runs on its oplog, fsynced, next to LMDB") {
    TempDir dir("mvkv-bench-test");
    WorkloadRegistry registry;
    registerStorageWorkloads(registry);
    BenchConfig config = tinyConfig(dir.path);
    config.syncFsync = true;
    config.threads = {1};
    config.engines = {"mvkv", "lmdb"};
    WorkloadResult result = registry.find("overwrite")->run(config);
    REQUIRE(result.rows.size() == 2);
    for (const ResultRow& row : result.rows) {
        CAPTURE(row.caseName);
        CHECK(row.error.empty());
        CHECK(row.skipped.empty());
        CHECK(row.ops == 50);
    }
    CHECK(result.rows[0].caseName == "mvkv");
    CHECK(result.rows[0].metric("disk_mb").value_or(0) > 0);  // its log is on disk
}

TEST_CASE("a failing engine is reported as a failed row, and the run goes on") {
    WorkloadRegistry registry;
    registerStorageWorkloads(registry);
    BenchConfig config = tinyConfig("/proc/no-such-dir-for-mvkv-bench");
    config.threads = {1};
    config.engines = {"lmdb"};
    WorkloadResult result = registry.find("readrandom")->run(config);
    REQUIRE(result.rows.size() == 1);
    CHECK(!result.rows[0].error.empty());
}

TEST_CASE("checkpoint: one checkpoint of every key, its file's size, the overwrites beside it") {
    TempDir dir("mvkv-bench-test");
    WorkloadRegistry registry;
    registerBuiltinWorkloads(registry);
    BenchConfig config = tinyConfig(dir.path);
    config.keys = 500;
    WorkloadResult result = registry.find("checkpoint")->run(config);
    REQUIRE(result.rows.size() == 2);
    const ResultRow& idle = result.rows[0];
    const ResultRow& during = result.rows[1];
    CHECK(idle.caseName == "no_checkpoint");
    CHECK(during.caseName == "checkpoint");
    for (const ResultRow& row : result.rows) {
        CAPTURE(row.caseName);
        CHECK_MESSAGE(row.error.empty(), row.error);
        CHECK(row.ops > 0);
        CHECK(row.metric("p99_us").value_or(0) > 0);
        CHECK(row.metric("max_us").value_or(0) >= row.metric("p99_us").value_or(0));
    }
    CHECK(idle.ops == config.opsPerThread);  // --ops bounds the idle run
    CHECK(during.metric("ckpt_entries") == 500.0);  // every key, overwritten or not
    // 500 entries of 16 + 100 bytes: the file holds at least their bytes.
    CHECK(during.metric("ckpt_mb").value_or(0) * 1024 * 1024 >= 500.0 * 116);
    CHECK(during.metric("ckpt_s").value_or(0) > 0);
    CHECK(during.seconds == during.metric("ckpt_s"));
    CHECK(during.metric("p99_vs_idle").has_value());
    CHECK(std::filesystem::is_empty(dir.path));  // its directory was removed
}
