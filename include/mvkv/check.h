// mvkv/check.h: the isolation checker and the history recorder
// (docs/checker.md). Part of the public API (include/mvkv/); no stable ABI
// is promised yet.
//
// A history is JSON lines, one operation per line, close to Jepsen's Elle
// list-append and read-write-register histories. checkHistory() pairs each
// process's invoke with its completion, infers every key's version order,
// builds the ww / wr / rw dependency graph over the transactions that
// committed (ok) or may have (info), and reports its cycles (G0, G1c,
// G-single, G-nonadjacent, G2-item) and the anomalies that need no cycle (G1a, G1b, lost
// update, incompatible orders, duplicate elements, garbage reads), each
// explained in words naming the transactions by line and process.
//
// The checker depends on nothing of the engine: it reads histories of any
// system. Errors are mvkv::Status values (mvkv/status.h); nothing throws.
// Every error code a call here returns:
// - InvalidArgument: a history that cannot be checked (not JSON, an
//   unknown type or f, a completion with no invoke, a value written twice,
//   ...); the message begins with "line N: " and says what is wrong there.
// - IOError: a file that cannot be read or written; the message names it
//   and gives the system's reason.
// - IllegalOperation: HistoryRecorder::openFile on a recorder that already
//   writes to a file.
// An anomaly is not an error: it is in the report of a checked history.
#pragma once

#include <cstdint>
#include <fstream>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mvkv/status.h"

namespace mvkv::check {

/// The consistency model a history is checked against.
enum class Model : uint8_t {
    kSnapshotIsolation,  // G2-item allowed (reported as allowed), the rest (G-nonadjacent too) forbidden
    kSerializable,       // everything forbidden
};

/// "snapshot-isolation" / "serializable"; nullopt for any other name.
std::optional<Model> parseModel(std::string_view name);
std::string_view modelName(Model model);

enum class AnomalyType : uint8_t {
    kG0,                 // a cycle of ww edges only (dirty write)
    kG1a,                // a read of a failed transaction's write (aborted read)
    kG1b,                // a read of a value its writer later overwrote (intermediate read)
    kG1c,                // a cycle of ww and wr edges, at least one wr (circular information flow)
    kGSingle,            // a cycle with exactly one rw edge (read skew)
    kG2Item,             // a cycle with two or more rw edges, two of them adjacent (write skew)
    kGNonadjacent,       // a cycle with two or more rw edges, no two adjacent (forbidden under SI)
    kLostUpdate,         // two committed transactions read the same version of a key and both wrote it
    kIncompatibleOrder,  // two reads of a list that are not prefixes of one another
    kDuplicateElements,  // a read of a list holding one element twice
    kGarbageRead,        // a read of a value no transaction wrote
};

/// The anomaly's name as printed and in JSON ("G0", "G-single", "lost-update", ...).
std::string_view anomalyName(AnomalyType type);
/// Whether `model` forbids `type`.
bool forbids(Model model, AnomalyType type);

struct Anomaly {
    AnomalyType type = AnomalyType::kG0;
    bool forbidden = true;
    std::string explanation;  // in words, naming the transactions (line, process, micro-ops)
    std::vector<uint64_t> lines;  // the completion lines of the transactions involved
};

struct CheckReport {
    Model model = Model::kSnapshotIsolation;
    uint64_t operations = 0;     // lines read
    uint64_t transactions = 0;   // invoke/completion pairs
    uint64_t committed = 0;      // ok
    uint64_t failed = 0;         // fail
    uint64_t indeterminate = 0;  // info, or an invoke never completed
    std::vector<Anomaly> anomalies;

    /// True when no anomaly is forbidden by the model.
    bool valid() const;
    /// {"valid", "model", "operations", "transactions", "committed", "failed",
    ///  "indeterminate", "anomalies": [{"type", "forbidden", "explanation", "lines"}]}.
    std::string toJson() const;
    /// One paragraph per anomaly and a summary line, for people.
    std::string toText() const;
};

/// Checks a whole history given as text (JSON lines; blank lines skipped)
/// and reports its anomalies. InvalidArgument ("line N: ...") when the
/// history cannot be checked; nothing is checked then.
StatusWith<CheckReport> checkHistory(std::string_view historyText, Model model);
/// The same, reading the file at `path`: IOError when it cannot be read;
/// an InvalidArgument message begins with "<path>: line N: ".
StatusWith<CheckReport> checkHistoryFile(const std::string& path, Model model);

/// One micro-operation of a transaction, as the recorder writes it. Keys and
/// values are integers, as in Elle's histories.
struct MicroOp {
    enum class Kind : uint8_t { kAppend, kRead, kWrite };
    Kind kind = Kind::kRead;
    int64_t key = 0;
    /// kAppend / kWrite: the value written. kRead on a register: the value
    /// read (nullopt: the key was absent, written null).
    std::optional<int64_t> value;
    /// kRead on a list: the list read (nullopt before the read completes,
    /// written null).
    std::optional<std::vector<int64_t>> list;
    bool listRead = true;  // kRead: a list-append read (else a register read)

    static MicroOp append(int64_t key, int64_t value) { return {Kind::kAppend, key, value, {}, true}; }
    static MicroOp write(int64_t key, int64_t value) { return {Kind::kWrite, key, value, {}, false}; }
    static MicroOp readList(int64_t key) { return {Kind::kRead, key, {}, {}, true}; }
    static MicroOp readRegister(int64_t key) { return {Kind::kRead, key, {}, {}, false}; }
};

/// Records a history that checkHistory() reads. Thread-safe: a harness's
/// threads call it concurrently, each as its own process number, which
/// must not have two transactions open at once (invoke, then exactly one of
/// ok / fail / info). Each call writes one line at once, so the file's order
/// is the order in which the calls happened.
class HistoryRecorder {
  public:
    /// Keeps the history in memory (text()).
    HistoryRecorder() = default;
    /// Writes the history to `path` too (truncated): the lines so far at
    /// once, each later one as it is recorded. IOError when the file cannot
    /// be opened for writing (then nothing is written to a file);
    /// IllegalOperation when a file is already open (it stays the one).
    Status openFile(const std::string& path);

    void invoke(int64_t process, const std::vector<MicroOp>& ops) { record(process, "invoke", ops); }
    /// Committed; `ops` carry the reads' results.
    void ok(int64_t process, const std::vector<MicroOp>& ops) { record(process, "ok", ops); }
    /// Did not commit (e.g. a write conflict aborted it).
    void fail(int64_t process, const std::vector<MicroOp>& ops) { record(process, "fail", ops); }
    /// May or may not have committed.
    void info(int64_t process, const std::vector<MicroOp>& ops) { record(process, "info", ops); }

    /// The history so far (JSON lines).
    std::string text() const;
    uint64_t lines() const;
    /// Flushes the file (if any). IOError when writing it failed: the file
    /// may lack lines; text() still has them all.
    Status flush();

    /// One history line (what record() writes, without the newline).
    static std::string formatLine(int64_t process, std::string_view type,
                                  const std::vector<MicroOp>& ops);

  private:
    void record(int64_t process, std::string_view type, const std::vector<MicroOp>& ops);

    mutable std::mutex mu_;
    std::string text_;
    uint64_t lines_ = 0;
    std::ofstream file_;
    std::string path_;  // file_'s
};

}  // namespace mvkv::check
