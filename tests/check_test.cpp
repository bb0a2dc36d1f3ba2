// The isolation checker (check/, include/mvkv/check.h): hand-made histories
// with each anomaly are reported as exactly that anomaly; valid snapshot
// isolation histories pass; bad input is InvalidArgument naming the line
// and what is wrong, an unreadable or unwritable file IOError; the recorder
// writes what the checker reads.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "mvkv/check.h"

using mvkv::StatusCode;
using mvkv::check::AnomalyType;
using mvkv::check::checkHistory;
using mvkv::check::Model;
using Checked = mvkv::StatusWith<mvkv::check::CheckReport>;

namespace {

// One transaction as an invoke line and a completion line. `ops` is the
// completion's value; the invoke carries the same micro-ops with reads null.
std::string txn(int process, const std::string& type, const std::string& ops) {
    nlohmann::json done = nlohmann::json::parse(ops);
    nlohmann::json invoked = done;
    for (auto& op : invoked)
        if (op[0] == "r")
            op[2] = nullptr;
    return nlohmann::json{{"process", process}, {"type", "invoke"}, {"f", "txn"}, {"value", invoked}}
               .dump() +
           "\n" +
           nlohmann::json{{"process", process}, {"type", type}, {"f", "txn"}, {"value", done}}
               .dump() +
           "\n";
}

std::vector<AnomalyType> types(const Checked& outcome) {
    REQUIRE_MESSAGE(outcome.ok(), outcome.status().toString());
    std::vector<AnomalyType> out;
    for (const auto& a : outcome.value().anomalies)
        out.push_back(a.type);
    return out;
}

void expectOnly(const std::string& history, AnomalyType type) {
    Checked outcome = checkHistory(history, Model::kSerializable);
    INFO(outcome.value().toText());
    CHECK(types(outcome) == std::vector<AnomalyType>{type});
    CHECK_FALSE(outcome.value().valid());
    CHECK_FALSE(outcome.value().anomalies.at(0).explanation.empty());
}

}  // namespace

TEST_CASE("a serial list-append history has no anomaly") {
    std::string h = txn(0, "ok", R"([["append",1,1],["r",1,[1]]])") +
                    txn(1, "ok", R"([["r",1,[1]],["append",1,2],["append",2,3]])") +
                    txn(0, "ok", R"([["r",1,[1,2]],["r",2,[3]]])");
    for (Model model : {Model::kSnapshotIsolation, Model::kSerializable}) {
        Checked outcome = checkHistory(h, model);
        CHECK(types(outcome).empty());
        CHECK(outcome.value().valid());
        CHECK(outcome.value().transactions == 3);
        CHECK(outcome.value().committed == 3);
    }
}

TEST_CASE("G0: a cycle of ww edges only") {
    expectOnly(txn(0, "ok", R"([["append","x",1],["append","y",2]])") +
                   txn(1, "ok", R"([["append","x",3],["append","y",4]])") +
                   txn(2, "ok", R"([["r","x",[1,3]],["r","y",[4,2]]])"),
               AnomalyType::kG0);
}

TEST_CASE("G1a: a read of a failed transaction's append") {
    std::string h = txn(0, "fail", R"([["append",1,1]])") + txn(1, "ok", R"([["r",1,[1]]])");
    expectOnly(h, AnomalyType::kG1a);
    Checked outcome = checkHistory(h, Model::kSnapshotIsolation);
    CHECK(outcome.value().anomalies.at(0).lines == std::vector<uint64_t>{2, 4});
    CHECK(outcome.value().anomalies.at(0).explanation.find("failed") != std::string::npos);
}

TEST_CASE("an info transaction's write may be read: no G1a") {
    std::string h = txn(0, "info", R"([["append",1,1]])") + txn(1, "ok", R"([["r",1,[1]]])");
    Checked outcome = checkHistory(h, Model::kSerializable);
    CHECK(types(outcome).empty());
    CHECK(outcome.value().indeterminate == 1);
    // An invoke never completed is indeterminate too.
    std::string open = R"({"process":5,"type":"invoke","f":"txn","value":[["append",1,1]]})"
                       "\n" +
                       txn(1, "ok", R"([["r",1,[1]]])");
    outcome = checkHistory(open, Model::kSerializable);
    CHECK(types(outcome).empty());
    CHECK(outcome.value().indeterminate == 1);
}

TEST_CASE("G1b: a read of an intermediate value") {
    expectOnly(txn(0, "ok", R"([["append",1,1],["append",1,2]])") +
                   txn(1, "ok", R"([["r",1,[1]]])") + txn(2, "ok", R"([["r",1,[1,2]]])"),
               AnomalyType::kG1b);
}

TEST_CASE("G1c: circular information flow") {
    expectOnly(txn(0, "ok", R"([["append","x",1],["r","y",[2]]])") +
                   txn(1, "ok", R"([["append","y",2],["r","x",[1]]])"),
               AnomalyType::kG1c);
}

TEST_CASE("G-single: read skew") {
    std::string h = txn(0, "ok", R"([["append","x",1],["append","y",1]])") +
                    txn(1, "ok", R"([["r","x",[]],["r","y",[1]]])") +
                    txn(2, "ok", R"([["r","x",[1]]])");
    expectOnly(h, AnomalyType::kGSingle);
    Checked outcome = checkHistory(h, Model::kSnapshotIsolation);
    CHECK_FALSE(outcome.value().valid());  // forbidden under snapshot isolation too
    const std::string& why = outcome.value().anomalies.at(0).explanation;
    CHECK(why.find("(rw)") != std::string::npos);
    CHECK(why.find("(wr)") != std::string::npos);
    CHECK(why.find("T2") != std::string::npos);
    CHECK(why.find("T4") != std::string::npos);
}

TEST_CASE("write skew (G2-item) is allowed under snapshot isolation, not serializable") {
    std::string h = txn(0, "ok", R"([["r","x",[]],["r","y",[]],["append","x",1]])") +
                    txn(1, "ok", R"([["r","x",[]],["r","y",[]],["append","y",2]])") +
                    txn(2, "ok", R"([["r","x",[1]],["r","y",[2]]])");
    Checked si = checkHistory(h, Model::kSnapshotIsolation);
    CHECK(types(si) == std::vector<AnomalyType>{AnomalyType::kG2Item});
    CHECK(si.value().valid());
    CHECK_FALSE(si.value().anomalies.at(0).forbidden);
    CHECK(si.value().toText().find("allowed under snapshot-isolation") != std::string::npos);
    Checked ser = checkHistory(h, Model::kSerializable);
    CHECK(types(ser) == std::vector<AnomalyType>{AnomalyType::kG2Item});
    CHECK_FALSE(ser.value().valid());
}

TEST_CASE("two readers that disagree on the order of two commits: G-nonadjacent, forbidden under "
          "snapshot isolation") {
    // What an untimestamped snapshot beside a timestamped one showed before
    // read points (docs/mvcc.md): one reader saw y's commit and not x's,
    // the other x's and not y's. rw, wr, rw, wr: no two rw edges adjacent.
    std::string h = txn(0, "ok", R"([["append","x",1]])") +
                    txn(1, "ok", R"([["append","y",1]])") +
                    txn(2, "ok", R"([["r","x",[]],["r","y",[1]]])") +
                    txn(3, "ok", R"([["r","x",[1]],["r","y",[]]])");
    Checked si = checkHistory(h, Model::kSnapshotIsolation);
    INFO(si.value().toText());
    CHECK(types(si) == std::vector<AnomalyType>{AnomalyType::kGNonadjacent});
    CHECK_FALSE(si.value().valid());
    CHECK(si.value().toText().find("G-nonadjacent") != std::string::npos);
    expectOnly(h, AnomalyType::kGNonadjacent);
    // The same four with the readers agreeing is serializable.
    std::string agreed = txn(0, "ok", R"([["append","x",1]])") +
                         txn(1, "ok", R"([["append","y",1]])") +
                         txn(2, "ok", R"([["r","x",[]],["r","y",[1]]])") +
                         txn(3, "ok", R"([["r","x",[]],["r","y",[1]]])");
    CHECK(checkHistory(agreed, Model::kSerializable).value().valid());
}

TEST_CASE("lost update") {
    expectOnly(txn(0, "ok", R"([["r",1,[]],["append",1,1]])") +
                   txn(1, "ok", R"([["r",1,[]],["append",1,2]])") +
                   txn(2, "ok", R"([["r",1,[1,2]]])"),
               AnomalyType::kLostUpdate);
}

TEST_CASE("incompatible orders") {
    expectOnly(txn(0, "ok", R"([["append",1,1]])") + txn(1, "ok", R"([["append",1,2]])") +
                   txn(2, "ok", R"([["r",1,[1,2]]])") + txn(3, "ok", R"([["r",1,[2,1]]])"),
               AnomalyType::kIncompatibleOrder);
}

TEST_CASE("duplicate elements") {
    expectOnly(txn(0, "ok", R"([["append",1,1]])") + txn(1, "ok", R"([["r",1,[1,1]]])"),
               AnomalyType::kDuplicateElements);
}

TEST_CASE("a read of a value nobody wrote") {
    expectOnly(txn(1, "ok", R"([["r",1,[9]]])"), AnomalyType::kGarbageRead);
}

TEST_CASE("read-write registers: a valid history, G-single and G1a") {
    std::string valid = txn(0, "ok", R"([["r","x",null],["w","x",1]])") +
                        txn(1, "ok", R"([["r","x",1],["w","x",2]])") +
                        txn(2, "ok", R"([["r","x",2]])");
    CHECK(types(checkHistory(valid, Model::kSerializable)).empty());
    expectOnly(txn(0, "ok", R"([["r","x",null],["w","x",1],["w","y",1]])") +
                   txn(1, "ok", R"([["r","x",null],["r","y",1]])"),
               AnomalyType::kGSingle);
    expectOnly(txn(0, "fail", R"([["w","x",1]])") + txn(1, "ok", R"([["r","x",1]])"),
               AnomalyType::kG1a);
    expectOnly(txn(0, "ok", R"([["r","x",null],["w","x",1]])") +
                   txn(1, "ok", R"([["r","x",null],["w","x",2]])"),
               AnomalyType::kLostUpdate);
}

std::string tempPath(const std::string& name) {
    return (std::filesystem::temp_directory_path() /
            ("mvkv-check-test-" + std::to_string(::getpid()) + "-" + name))
        .string();
}

std::string readFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

TEST_CASE("bad input is InvalidArgument naming the line and what is wrong") {
    auto error = [](const std::string& h) {
        Checked outcome = checkHistory(h, Model::kSnapshotIsolation);
        CHECK(outcome.status().code() == StatusCode::kInvalidArgument);
        return outcome.status().message();
    };
    std::string good = txn(0, "ok", R"([["append",1,1]])");
    std::string m = error(good + "{not json\n");
    CHECK(m.starts_with("line 3: "));
    m = error(good + R"({"process":0,"type":"done","value":[]})" + "\n");
    CHECK(m.starts_with("line 3: "));
    CHECK(m.find("unknown type") != std::string::npos);
    m = error(R"({"process":0,"type":"ok","value":[["append",1,1]]})" "\n");
    CHECK(m.starts_with("line 1: "));
    CHECK(m.find("no invoke") != std::string::npos);
    m = error(R"({"process":0,"type":"invoke","value":[["cas",1,1]]})" "\n" +
              std::string(R"({"process":0,"type":"ok","value":[["cas",1,1]]})") + "\n");
    CHECK(m.find("unknown f") != std::string::npos);
    m = error(good + txn(1, "ok", R"([["append",1,1]])"));
    CHECK(m.starts_with("line 4: value 1 is written to key 1 twice (lines 2 and 4)"));
    m = error(good + txn(1, "ok", R"([["w",2,1]])"));
    CHECK(m.find("mixes") != std::string::npos);
}

TEST_CASE("checkHistoryFile: IOError for an unreadable file; bad input names the file and line") {
    Checked missing =
        mvkv::check::checkHistoryFile("/nonexistent/history.jsonl", Model::kSerializable);
    CHECK(missing.status().code() == StatusCode::kIOError);
    CHECK(missing.status().message() ==
          "cannot read /nonexistent/history.jsonl: No such file or directory");
    Checked directory = mvkv::check::checkHistoryFile("/", Model::kSerializable);
    CHECK(directory.status().code() == StatusCode::kIOError);
    CHECK(directory.status().message() == "cannot read /: Is a directory");

    const std::string path = tempPath("bad.jsonl");
    std::ofstream(path, std::ios::binary) << txn(0, "ok", R"([["append",1,1]])") << "{oops\n";
    Checked bad = mvkv::check::checkHistoryFile(path, Model::kSerializable);
    CHECK(bad.status().code() == StatusCode::kInvalidArgument);
    CHECK(bad.status().message().starts_with(path + ": line 3: "));
    std::filesystem::remove(path);
}

TEST_CASE("the recorder writes what the checker reads") {
    using mvkv::check::MicroOp;
    mvkv::check::HistoryRecorder rec;
    std::vector<MicroOp> t1 = {MicroOp::append(1, 10), MicroOp::readList(2)};
    rec.invoke(0, t1);
    t1[1].list = std::vector<int64_t>{};
    rec.ok(0, t1);
    std::vector<MicroOp> t2 = {MicroOp::readList(1)};
    rec.invoke(1, t2);
    t2[0].list = std::vector<int64_t>{10};
    rec.ok(1, t2);
    rec.invoke(2, {MicroOp::append(1, 11)});
    rec.fail(2, {MicroOp::append(1, 11)});
    CHECK(rec.lines() == 6);
    CHECK(rec.text().find(R"({"f":"txn","process":0,"type":"invoke","value":[["append",1,10],["r",2,null]]})") !=
          std::string::npos);
    Checked outcome = checkHistory(rec.text(), Model::kSerializable);
    CHECK(types(outcome).empty());
    CHECK(outcome.value().committed == 2);
    CHECK(outcome.value().failed == 1);
}

TEST_CASE("the recorder's file has every line; IOError when it cannot be opened or written") {
    using mvkv::check::MicroOp;
    const std::string path = tempPath("recorded.jsonl");
    mvkv::check::HistoryRecorder rec;
    rec.invoke(0, {MicroOp::append(1, 10)});
    REQUIRE(rec.openFile(path).ok());  // the line so far, then each new one
    rec.ok(0, {MicroOp::append(1, 10)});
    REQUIRE(rec.flush().ok());
    CHECK(readFile(path) == rec.text());
    mvkv::Status again = rec.openFile(path + ".2");
    CHECK(again.code() == StatusCode::kIllegalOperation);
    CHECK(again.message() == "the history is already written to " + path +
                                 ": one file per recorder");
    CHECK_FALSE(std::filesystem::exists(path + ".2"));
    CHECK(types(mvkv::check::checkHistoryFile(path, Model::kSerializable)).empty());
    std::filesystem::remove(path);

    mvkv::check::HistoryRecorder unopened;
    mvkv::Status s = unopened.openFile("/nonexistent/dir/history.jsonl");
    CHECK(s.code() == StatusCode::kIOError);
    CHECK(s.message() ==
          "cannot open /nonexistent/dir/history.jsonl for writing: No such file or directory");
    unopened.invoke(0, {MicroOp::append(1, 10)});
    CHECK(unopened.flush().ok());  // no file: nothing to flush
    CHECK(unopened.lines() == 1);

    // /dev/full takes the open and refuses every write (ENOSPC).
    if (std::filesystem::exists("/dev/full")) {
        mvkv::check::HistoryRecorder full;
        REQUIRE(full.openFile("/dev/full").ok());
        full.invoke(0, {MicroOp::append(1, 10)});
        s = full.flush();
        CHECK(s.code() == StatusCode::kIOError);
        CHECK(s.message().starts_with(
            "writing the history to /dev/full failed (No space left on device)"));
        CHECK(full.text().find(R"(["append",1,10])") != std::string::npos);
    }
}

TEST_CASE("a long history checks quickly and finds a planted anomaly") {
    // 20k transactions (40k lines) over 1000 keys, serial, then one read
    // skew at the end (kept small for the sanitizer builds; mvkv-check
    // reads 100k such lines in about a second, docs/checker.md).
    std::string h;
    std::vector<std::vector<int>> lists(1000);
    int value = 0;
    for (int i = 0; i < 20000; ++i) {
        int k = i % 1000;
        lists[k].push_back(++value);
        nlohmann::json read = lists[k];
        h += txn(i % 7, "ok",
                 nlohmann::json::array({{"append", k, value}, {"r", k, read}}).dump());
    }
    CHECK(types(checkHistory(h, Model::kSerializable)).empty());
    // One transaction appends to keys 0 and 1; a reader sees key 1's append
    // but not key 0's: read skew.
    std::vector<int> old0 = lists[0];
    lists[0].push_back(++value);
    lists[1].push_back(++value);
    h += txn(8, "ok",
             nlohmann::json::array({{"append", 0, value - 1}, {"append", 1, value}}).dump());
    h += txn(9, "ok",
             nlohmann::json::array({{"r", 0, nlohmann::json(old0)}, {"r", 1, nlohmann::json(lists[1])}})
                 .dump());
    h += txn(10, "ok", nlohmann::json::array({{"r", 0, nlohmann::json(lists[0])}}).dump());
    Checked outcome = checkHistory(h, Model::kSnapshotIsolation);
    INFO(outcome.value().toText());
    CHECK(types(outcome) == std::vector<AnomalyType>{AnomalyType::kGSingle});
}
