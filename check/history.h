// The checker's reading of a history (docs/checker.md, "History format"):
// each process's invoke paired with its completion into one Transaction.
// Keys and values are kept as their JSON text ("5", "\"a\""), so integer
// and string histories are read alike.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mvkv::check {

enum class TxnStatus : uint8_t { kOk, kFail, kInfo };

struct Op {
    enum class Kind : uint8_t { kAppend, kRead, kWrite };
    Kind kind = Kind::kRead;
    std::string key;
    std::string value;  // kAppend / kWrite: the value; kRead of a register: the value read
    bool known = false;  // kRead: the result is known (a list, or a register value or null)
    bool nil = false;    // kRead of a register: read nothing (null)
    std::vector<std::string> list;  // kRead of a list: the list read
};

struct Transaction {
    uint64_t line = 0;  // the completion's line (the invoke's when it never completed)
    std::string process;
    TxnStatus status = TxnStatus::kOk;
    std::vector<Op> ops;
    std::string opsText;  // the micro-ops as written, for explanations

    bool maybeCommitted() const { return status != TxnStatus::kFail; }
};

struct History {
    std::vector<Transaction> txns;
    uint64_t operations = 0;
    bool listAppend = false;  // append micro-ops (else read-write registers)
};

struct ParseError {
    std::string message;  // empty: parsed
    uint64_t line = 0;
};

/// Reads JSON lines into `*out`. An invoke with no completion by the end
/// becomes an info transaction (it may have committed).
ParseError parseHistory(std::string_view text, History* out);

/// "T12 (line 12, process 3, ok: [["append",1,5]])".
std::string describe(const Transaction& txn);
/// "T12".
std::string txnName(const Transaction& txn);

}  // namespace mvkv::check
