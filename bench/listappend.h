// List-append transactions on mvkv, recorded for the isolation checker
// (docs/checker.md, "The listappend workload"). Shared by the `listappend`
// workload and the checker's mvkv test.
//
// A key k is stored as "k<k>" in one collection; its value is the list,
// decimal integers separated by commas ("" is the empty list). An append is
// a read-modify-write inside the transaction.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "mvkv/check.h"
#include "mvkv/session.h"
#include "mvkv/status.h"

namespace mvkv::bench {

std::string encodeList(const std::vector<int64_t>& list);
/// Corruption when `text` is not a list encodeList() wrote.
Status decodeList(std::string_view text, std::vector<int64_t>* list);
std::string listKey(int64_t key);

/// Runs `ops` (append / list reads) as one transaction on `session`
/// (begun with `options`) and records it as `process`: invoke, then ok with
/// the reads' results, fail after a WriteConflict (the transaction is
/// aborted and WriteConflict returned; the caller may retry with new
/// micro-ops), or info on any other error, which is returned. With `readSession` (a session already in a
/// transaction), reads are served by it instead: a test uses a session at
/// an older snapshot to record a wrong history on purpose.
Status runListAppendTxn(Session& session, std::string_view ns,
                        check::HistoryRecorder& recorder, int64_t process,
                        std::vector<check::MicroOp> ops, const TxnOptions& options,
                        Session* readSession = nullptr);

}  // namespace mvkv::bench
