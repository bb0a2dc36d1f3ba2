// mvkv/oplog.h: reading the oplog, the log of every commit (docs/oplog.md).
// Part of the public API (include/mvkv/); no stable ABI is promised yet.
//
// Engine::openOplog gives an OplogCursor that reads the entries from a
// timestamp on, in log order, and then waits for new ones: a `tail -f` of
// the commits. A transaction's entries share its commit timestamp; catalog
// commands (create, drop, collMod, ...) are kCommand entries whose value is
// the command as JSON text.
//
// Errors of next(): CappedPositionLost when capping removed entries the
// cursor had not read yet (it stays lost: open a new one from the oldest),
// IOError or Corruption from reading the log.
//
// Ownership and lifetime: the caller owns the cursor; destroy it before
// its Engine.
//
// Thread safety: one thread per cursor at a time; any number of cursors.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "mvkv/status.h"
#include "mvkv/timestamp.h"

namespace mvkv {

/// The letters are MongoDB's oplog "op" field.
enum class OplogOp : char { kInsert = 'i', kUpdate = 'u', kDelete = 'd', kCommand = 'c' };

struct OplogEntry {
    Timestamp ts = kNoTimestamp;  // the commit timestamp
    TxnId txnId = kNoTxnId;
    OplogOp op = OplogOp::kInsert;
    std::string ns;     // "db.coll" (a command's: its database or collection)
    std::string key;    // empty for a command
    std::string value;  // empty for a delete; a command's JSON text
};

struct OplogReadOptions {
    /// Entries with a timestamp >= from; 0: from the oldest entry there is.
    Timestamp from = kNoTimestamp;
    /// "" (everything), a database ("app": its collections and commands on
    /// it) or a collection ("app.users").
    std::string ns;
};

class OplogCursor {
  public:
    ~OplogCursor();
    OplogCursor(const OplogCursor&) = delete;
    OplogCursor& operator=(const OplogCursor&) = delete;

    /// Appends the next visible entries to *out (at most about
    /// `maxEntries`); when none is visible yet waits up to `wait` for some,
    /// and on timeout returns OK with nothing appended. Errors: see above.
    Status next(std::vector<OplogEntry>* out, size_t maxEntries = 1000,
                std::chrono::milliseconds wait = std::chrono::milliseconds(0));

    struct Impl;  // the engine's side (opaque)
    explicit OplogCursor(std::unique_ptr<Impl> impl);

  private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace mvkv
