// An example harness: the kind of program that embeds mvkv to test
// against it. It uses only <mvkv/mvkv.h>: four threads move money between
// accounts in transactions while a failpoint forces write conflicts on one
// account, then it checks that no money appeared or vanished; then four
// threads append to lists in transactions, recorded as a history that the
// isolation checker (mvkv/check.h) must find free of anomalies snapshot
// isolation forbids. Exit status 0 when every check holds.
#include <mvkv/mvkv.h>

#include <cstdio>
#include <sstream>
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

// Lists of integers, stored as "1,2,3".
std::vector<int64_t> parseList(const std::string& text) {
    std::vector<int64_t> out;
    std::stringstream in(text);
    for (std::string item; std::getline(in, item, ',');)
        out.push_back(std::stoll(item));
    return out;
}

// Each transaction reads one list and appends a unique value to another,
// recorded (invoke, then ok with what it read, or fail) for the checker.
bool listAppend(mvkv::Engine& engine) {
    {
        auto s = engine.openSession().value();
        if (!s->createCollection("hist.lists").ok())
            return false;
    }
    mvkv::check::HistoryRecorder recorder;
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&, t] {
            auto s = engine.openSession().value();
            for (int i = 0; i < 200; ++i) {
                const int64_t readKey = (t + i) % 5, appendKey = (t * 7 + i) % 5;
                const int64_t value = t * 1000 + i;
                std::vector<mvkv::check::MicroOp> ops = {mvkv::check::MicroOp::readList(readKey),
                                                        mvkv::check::MicroOp::append(appendKey, value)};
                recorder.invoke(t, ops);
                mvkv::Status st = s->begin();
                std::string listText;
                if (st.ok()) {
                    mvkv::Status g = s->get("hist.lists", std::to_string(readKey), &listText);
                    st = g.code() == mvkv::StatusCode::kNotFound ? mvkv::Status::OK() : g;
                    if (g.code() == mvkv::StatusCode::kNotFound)
                        listText.clear();
                }
                ops[0].list = parseList(listText);
                std::string target;
                if (st.ok()) {
                    mvkv::Status g = s->get("hist.lists", std::to_string(appendKey), &target);
                    st = g.code() == mvkv::StatusCode::kNotFound ? mvkv::Status::OK() : g;
                    if (g.code() == mvkv::StatusCode::kNotFound)
                        target.clear();
                }
                if (st.ok())
                    st = s->put("hist.lists", std::to_string(appendKey),
                                target.empty() ? std::to_string(value)
                                               : target + "," + std::to_string(value));
                if (st.ok())
                    st = s->commit().status();
                if (st.ok()) {
                    recorder.ok(t, ops);
                } else {
                    if (s->inTransaction())
                        s->abort().ignore();
                    ops[0].list.reset();
                    recorder.fail(t, ops);
                }
            }
        });
    }
    for (auto& t : threads)
        t.join();
    const auto checked =
        mvkv::check::checkHistory(recorder.text(), mvkv::check::Model::kSnapshotIsolation);
    if (!checked.ok()) {
        std::fprintf(stderr, "harness: checker: %s\n", checked.status().toString().c_str());
        return false;
    }
    const mvkv::check::CheckReport& report = checked.value();
    std::printf("harness: list-append: %llu transactions, %llu committed, %zu anomalies\n",
                static_cast<unsigned long long>(report.transactions),
                static_cast<unsigned long long>(report.committed), report.anomalies.size());
    if (!report.valid())
        std::fprintf(stderr, "%s", report.toText().c_str());
    return report.valid() && report.committed > 0;
}

}  // namespace

int main() {
    std::printf("harness: mvkv %s\n", mvkv::buildStamp());
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
    check(listAppend(engine), "the list-append history is valid under snapshot isolation");
    s.reset();
    check(engine.close().ok(), "close");
    std::printf("harness: %d transfers, %llu write conflicts, total %d: %s\n",
                kThreads * kTransfers, static_cast<unsigned long long>(stats.writeConflicts), sum,
                failures == 0 ? "ok" : "FAILED");
    return failures == 0 ? 0 : 1;
}
