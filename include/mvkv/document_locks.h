// mvkv/document_locks.h: pessimistic locks on single documents, stored as
// data (docs/document-locks.md). A lock is an entry of `<ns>.lock` keyed by
// the document's key: durable, replicated and inspectable like any data.
// An acquisition may wait (woken by the commit that frees the lock; killOp
// stops it); an expired lock still present is taken over by the next
// acquirer; every acquisition returns a fencing token, larger than every
// earlier holder's, that writes may be made conditional on (WriteOptions::fence).
// Part of the public API (include/mvkv/); no stable ABI is promised yet.
//
//   DocumentLocks locks(*session);
//   auto grant = locks.acquire("app.work", "item7", {.ttl = 30s, .wait = 5s});
//   session->put("app.work", "item7", v, {.fence = WriteFence{grant.value().owner,
//                                                              grant.value().token}});
//   locks.release("app.work", "item7", grant.value().owner);
//
// Every call is one operation of the session (currentOp shows it, killOp
// interrupts it). acquire, release, releaseAll and refresh run their own
// transactions: IllegalOperation inside an explicit one. Errors of every
// call: InvalidArgument for a bad namespace, key or owner (empty, NUL, not
// UTF-8, over 256 bytes), or a namespace that is itself a lock collection;
// NamespaceNotFound; Corruption for a lock entry that does not parse; the
// session's read and write errors (LockTimeout, Interrupted, WriteConflict
// after the retry timeout, IOError).
//
// Ownership and lifetime: it holds a reference to its Session, which must
// outlive it. Thread safety: as its Session's, one thread at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mvkv/status.h"

namespace mvkv {

class Session;

struct AcquireOptions {
    /// Who acquires; none: 128 random bits from the OS as 32 hex digits
    /// (returned in the grant).
    std::optional<std::string> owner;
    /// How long the lock holds unless refreshed: 1 ms .. a year.
    std::chrono::milliseconds ttl{30000};
    /// How long to wait for a held lock (0: not at all).
    std::chrono::milliseconds wait{0};
};

/// A lock as acquire, refresh and list report it.
struct DocumentLock {
    std::string ns;  // the locked document's collection
    std::string key;
    std::string owner;
    uint64_t token = 0;         // the fencing token
    int64_t acquiredAtMs = 0;   // ms since the Unix epoch
    int64_t expiresAtMs = 0;
    int64_t remainingMs = 0;    // expiresAtMs - now, at least 0
    bool expired = false;       // present, but no longer holds
    bool tookOver = false;      // acquire only: an expired lock was taken over
};

class DocumentLocks {
  public:
    explicit DocumentLocks(Session& session);
    ~DocumentLocks();
    DocumentLocks(const DocumentLocks&) = delete;
    DocumentLocks& operator=(const DocumentLocks&) = delete;

    /// Locks `key` of `ns`. DocumentLocked when it is held and unexpired
    /// (after waiting up to options.wait); Interrupted when killOp ends the
    /// wait; InvalidArgument for a ttl or wait out of range.
    StatusWith<DocumentLock> acquire(std::string_view ns, std::string_view key,
                                     const AcquireOptions& options = {});
    /// Removes `owner`'s lock on `key`, expired or not. NotFound when the
    /// key is not locked; NotLockOwner when another owner holds it.
    Status release(std::string_view ns, std::string_view key, std::string_view owner);
    /// Removes every lock of `owner`; returns how many (each its own
    /// transaction: an error part-way leaves those released released).
    StatusWith<uint64_t> releaseAll(std::string_view owner);
    /// Extends `owner`'s unexpired lock to now + ttl, keeping its token.
    /// NotFound, NotLockOwner as release; LockLost when it expired.
    StatusWith<DocumentLock> refresh(std::string_view ns, std::string_view key,
                                     std::string_view owner, std::chrono::milliseconds ttl);
    /// Every lock of `ns` in key order, expired ones too.
    StatusWith<std::vector<DocumentLock>> list(std::string_view ns);

    struct Impl;  // the engine's side (opaque)

  private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace mvkv
