// DocumentLocks: pessimistic locks on single documents, stored as data
// (docs/document-locks.md). Seeds 001/004's pattern made first-class: a
// lock is an entry in `<ns>.lock` keyed by the document's key, indexed by
// owner in `<ns>.lock.owners` (engine/document_lock_entry.h), so locks are
// durable, replicated and inspectable like any data, and locking never
// writes the locked document itself.
//
// What mvkv adds to the pattern: an acquisition may wait, blocking (woken by
// the commit that frees the lock, never polling; killOp stops it); a lock
// past its expiry that is still present is taken over by the next acquirer
// in one transaction; owners are generated from the OS's random source when
// not given; every acquisition returns a fencing token, larger than every
// earlier holder's of that lock, which writes may be made conditional on
// (WriteOptions::fence: LockLost when the lock no longer holds).
//
//   DocumentLocks locks(*session);
//   auto grant = locks.acquire("app.work", "item7", {.ttl = 30s, .wait = 5s});
//   ... session->put("app.work", "item7", v,
//                    {.fence = WriteFence{grant.value().owner, grant.value().token}});
//   locks.release("app.work", "item7", grant.value().owner);
//
// Every call is one operation of the session (currentOp shows it; killOp
// interrupts it). acquire, release, releaseAll and refresh run their own
// transactions and are refused inside an explicit one (IllegalOperation);
// inspect and list read the session's transaction when one is open.
// Errors common to every call: InvalidArgument for a bad namespace, key or
// owner (empty, NUL, not UTF-8, over kMaxOwnerBytes, or an owner index key
// over EngineOptions::maxKeyBytes), InvalidArgument for a namespace that is
// itself a lock collection, NamespaceNotFound when `ns` does not exist,
// Corruption for a lock entry that does not parse, and the errors of the
// session's reads and writes (LockTimeout, Interrupted, WriteConflict after
// the retry timeout, IOError).
//
// Thread safety: as its Session's: one thread at a time. The object holds
// only a reference to the session, which must outlive it.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/document_lock_entry.h"
#include "util/status.h"

namespace mvkv::engine {

class Session;
class Engine;

/// The lock entry of `key` in lock collection `lockNs` as `session` reads
/// it (its transaction's snapshot, or a new one); nullopt when there is none
/// (or no such collection). Corruption for an entry that does not parse.
StatusWith<std::optional<LockEntry>> readLockEntry(Session& session, std::string_view lockNs,
                                                   std::string_view key);

struct AcquireOptions {
    /// Who acquires; none: 128 random bits from the OS, as 32 hex digits
    /// (returned in the grant). Not a web session id: see the docs.
    std::optional<std::string> owner;
    /// How long the lock holds unless refreshed: 1 ms .. kMaxLockTtl.
    std::chrono::milliseconds ttl{30000};
    /// How long to wait for a held lock (0: not at all) .. Deadline::kMaxTimeout.
    std::chrono::milliseconds wait{0};
};

/// A lock as acquire, refresh, inspect and list report it.
struct LockInfo {
    std::string ns;  // the locked document's collection
    std::string key;
    LockEntry entry;
    /// expiresAtMs - now, at least 0; expired when 0 (the lock is present
    /// but no longer holds: the next acquirer takes it over).
    int64_t remainingMs = 0;
    bool expired = false;
    /// acquire only: an expired lock of another acquisition was taken over.
    bool tookOver = false;
};

/// The longest TTL a lock may have.
inline constexpr std::chrono::milliseconds kMaxLockTtl{std::chrono::hours(24) * 365};

class DocumentLocks {
  public:
    explicit DocumentLocks(Session& session);

    /// Locks `key` of `ns` for options.owner. The lock collections are
    /// created on the first acquisition in `ns`. DocumentLocked when the
    /// lock is held and unexpired (after waiting up to options.wait): the
    /// message says when it expires, and names the holder only when it is
    /// the caller's own owner (a lock is not reentrant: refresh it).
    /// Interrupted when killOp ends the wait. InvalidArgument for a ttl out
    /// of range or a negative or too long wait.
    StatusWith<LockInfo> acquire(std::string_view ns, std::string_view key,
                                 const AcquireOptions& options = {});
    /// Removes `owner`'s lock on `key` (expired or not). NotFound when the
    /// key is not locked; NotLockOwner when another owner holds it (nothing
    /// is changed).
    Status release(std::string_view ns, std::string_view key, std::string_view owner);
    /// Removes every lock of `owner` in every lock collection, through the
    /// owner indexes; returns how many. Each lock is its own transaction:
    /// an error part-way leaves the ones released so far released.
    StatusWith<uint64_t> releaseAll(std::string_view owner);
    /// Extends `owner`'s unexpired lock to now + ttl, keeping its token.
    /// NotFound when the key is not locked; NotLockOwner when another owner
    /// holds it; LockLost when `owner`'s lock expired (even if nobody took
    /// it over yet: acquire again, for a new token).
    StatusWith<LockInfo> refresh(std::string_view ns, std::string_view key, std::string_view owner,
                                 std::chrono::milliseconds ttl);
    /// The lock on `key` (expired ones too, until removed); NotFound when
    /// there is none.
    StatusWith<LockInfo> inspect(std::string_view ns, std::string_view key);
    /// Every lock of `ns`, in key order (empty when none was ever taken).
    StatusWith<std::vector<LockInfo>> list(std::string_view ns);

    /// A new owner: 128 random bits from getrandom(2), as 32 hex digits.
    /// IOError when the OS has no randomness to give.
    static StatusWith<std::string> generateOwner();

  private:
    struct Target;
    struct Attempt;
    StatusWith<Target> target(std::string_view ns, std::string_view key, bool needsNs);
    Status createLockCollections(const Target& t);
    Status attemptAcquire(const Target& t, const std::string& owner, std::chrono::milliseconds ttl,
                          Attempt* out);
    /// The checks release and refresh share, then target().
    StatusWith<Target> holderTarget(std::string_view ns, std::string_view key,
                                    std::string_view owner, std::string_view what);
    /// The lock entry and its owner index entry, written together.
    Status writeLock(const Target& t, const LockEntry& e);
    /// Removes `owner`'s index entry for `key` (gone already is fine) and,
    /// with `entryToo`, the lock entry.
    Status eraseLock(std::string_view lockNs, std::string_view ownersNs, std::string_view key,
                     std::string_view owner, bool entryToo);
    /// Releases one lock found through the owner index (releaseAll).
    StatusWith<bool> releaseIndexed(const std::string& ns, std::string_view owner,
                                    std::string_view key);
    LockInfo describe(const Target& t, LockEntry e) const;
    Status checkNoTransaction(std::string_view what) const;

    Session& session_;
    Engine& engine_;
};

}  // namespace mvkv::engine
