// mvkv/cursor.h: an ordered walk over one collection, in a snapshot.
// Part of the public API (include/mvkv/); no stable ABI is promised yet.
//
// A cursor reads in its session's snapshot: in an explicit transaction the
// transaction's (its own writes included), outside one a snapshot fixed
// when the cursor was opened. Keys are byte strings in memcmp order;
// deleted and invisible versions are skipped.
//
// Every move returns OK, positioned (valid()) or run off the end
// (!valid()), or an error that leaves it !valid(): IllegalOperation once
// the transaction it belongs to has ended, NamespaceNotFound when the
// collection was dropped, PrepareConflict when the next visible version is
// a prepared, unresolved write (in an explicit transaction; outside one
// the cursor waits for the resolution), Interrupted (Session::interrupt).
//
// Ownership and lifetime: the Session that opened it owns its snapshot;
// destroy the cursor before its session. key() and value() are views valid
// until the cursor moves or is destroyed.
//
// Thread safety: a cursor, like its session, is one thread's at a time.
// It holds no engine resource between calls: Engine::sweepHistory() and
// checkpoints may run on any thread, this one included, while it is open.
#pragma once

#include <memory>
#include <string_view>

#include "mvkv/status.h"
#include "mvkv/timestamp.h"

namespace mvkv {

class Cursor {
  public:
    ~Cursor();
    Cursor(const Cursor&) = delete;
    Cursor& operator=(const Cursor&) = delete;

    Status seek(std::string_view key);         // the first key >= key
    Status seekForPrev(std::string_view key);  // the last key <= key
    /// Exactly `key`: OK and valid() on it, or NotFound and !valid().
    Status find(std::string_view key);
    Status first();
    Status last();
    Status next();
    Status prev();

    bool valid() const;
    std::string_view key() const;
    std::string_view value() const;
    /// The commit timestamp of the version value() came from (kNoTimestamp
    /// for the cursor's own transaction's uncommitted write).
    Timestamp timestamp() const;

    struct Impl;  // the engine's side (opaque)
    explicit Cursor(std::unique_ptr<Impl> impl);

  private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace mvkv
