// An example harness: the kind of program that embeds mvkv to test
// against it. It uses only <mvkv/mvkv.h>: four threads move money between
// accounts in transactions while a failpoint forces write conflicts on one
// account, then it checks that no money appeared or vanished. Exit status
// 0 when every check holds.
#include <mvkv/mvkv.h>

#include <cstdio>
#include <string>
#include <thread>
#include <vector>

namespace {

int failures = 0;

void check(bool ok, const char* what) {
    if (!ok) {
        std::fprintf(stderr, "harness: FAILED: %s\n", what);
        ++failures;
    }
}

}  // namespace

int main() {
    std::printf("harness: mvkv %s\n", mvkv::versionString());
    auto opened = mvkv::Engine::open(mvkv::EngineOptions{});  // in memory
    if (!opened.ok()) {
        std::fprintf(stderr, "harness: open: %s\n", opened.status().toString().c_str());
        return 1;
    }
    mvkv::Engine& engine = *opened.value();
    constexpr int kAccounts = 8, kThreads = 4, kTransfers = 500;
    {
        auto s = engine.openSession().value();
        check(s->createCollection("bank.accounts").ok(), "create");
        for (int i = 0; i < kAccounts; ++i)
            check(s->put("bank.accounts", "a" + std::to_string(i), "100").ok(), "fund");
    }
    // Conflicts on a0 every time it is written, 50 times: withTransaction
    // retries them.
    auto at = mvkv::configureFailPoint("writeConflictOnKey", "times 50 key=a0");
    check(at.ok(), "configure failpoint");
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            auto s = engine.openSession().value();
            for (int i = 0; i < kTransfers; ++i) {
                const std::string from = "a" + std::to_string((t * 3 + i) % kAccounts);
                const std::string to = "a" + std::to_string((t * 3 + i + 1) % kAccounts);
                mvkv::Status st = s->withTransaction([&](mvkv::Session& tx) {
                    auto a = tx.get("bank.accounts", from);
                    auto b = tx.get("bank.accounts", to);
                    if (!a.ok())
                        return a.status();
                    if (!b.ok())
                        return b.status();
                    mvkv::Status w =
                        tx.put("bank.accounts", from, std::to_string(std::stoi(a.value()) - 1));
                    if (!w.ok())
                        return w;
                    return tx.put("bank.accounts", to, std::to_string(std::stoi(b.value()) + 1));
                });
                check(st.ok(), "transfer");
            }
        });
    }
    for (auto& t : threads)
        t.join();
    check(mvkv::waitForFailPoint("writeConflictOnKey", at.value() + 50, std::chrono::seconds(10))
              .ok(),
          "the failpoint fired 50 times");
    auto s = engine.openSession().value();
    int sum = 0;
    for (int i = 0; i < kAccounts; ++i)
        sum += std::stoi(s->get("bank.accounts", "a" + std::to_string(i)).value());
    check(sum == kAccounts * 100, "the total is unchanged");
    const mvkv::EngineStats stats = engine.stats();
    check(stats.writeConflicts >= 50, "the forced conflicts were counted");
    s.reset();
    check(engine.close().ok(), "close");
    std::printf("harness: %d transfers, %llu write conflicts, total %d: %s\n",
                kThreads * kTransfers, static_cast<unsigned long long>(stats.writeConflicts), sum,
                failures == 0 ? "ok" : "FAILED");
    return failures == 0 ? 0 : 1;
}
