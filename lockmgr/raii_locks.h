// RAII locks that take the hierarchy top-down (seed 002, catalog_raii.h):
//
//   | collection mode | Global | Database | Collection |
//   | IX              | IX     | IX       | IX         |
//   | X               | IX     | IX       | X          |
//   | IS              | IS     | IS       | IS         |
//   | S               | IS     | IS       | S          |
//
// Each constructor either acquires everything it names or nothing: on any
// failure it releases what it took and status() says why. No exceptions.
// Destruction releases (through Locker::unlock, so two-phase locking still
// applies inside a write unit of work). Objects are movable, not copyable.
// Thread safety: as the Locker they use (one thread at a time).
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "lockmgr/locker.h"

namespace mvkv::lockmgr {

/// Splits "db.coll" at the first dot. InvalidArgument when either part is empty.
StatusWith<std::pair<std::string_view, std::string_view>> splitNamespace(std::string_view ns);

/// Database modes implied by a collection mode: IS for IS/S, IX for IX/X.
constexpr LockMode intentModeFor(LockMode m) {
    return isSharedMode(m) ? LockMode::kIS : LockMode::kIX;
}

/// A namespace "db.coll" with its lock resource ids computed once. Callers
/// that lock the same collection often (the engine's catalog) keep one.
class LockNamespace {
  public:
    /// InvalidArgument when `ns` is not "db.coll" with both parts non-empty.
    static StatusWith<LockNamespace> parse(std::string_view ns);
    LockNamespace() = default;

    const std::string& ns() const { return ns_; }
    std::string_view db() const { return std::string_view(ns_).substr(0, dot_); }
    ResourceId dbId() const { return dbId_; }
    ResourceId collectionId() const { return collId_; }

  private:
    std::string ns_;
    size_t dot_ = 0;
    ResourceId dbId_;
    ResourceId collId_;
};

/// One lock on one resource, released on destruction, with no Status of its
/// own: acquire() returns it. The members of AutoGetCollection (which keeps
/// one Status for the three) and of ResourceLock.
class HeldLock {
  public:
    HeldLock() = default;
    HeldLock(HeldLock&& other) noexcept
        : locker_(std::exchange(other.locker_, nullptr)),
          request_(std::exchange(other.request_, nullptr)),
          id_(other.id_) {}
    HeldLock& operator=(HeldLock&& other) noexcept {
        if (this != &other) {
            release();
            locker_ = std::exchange(other.locker_, nullptr);
            request_ = std::exchange(other.request_, nullptr);
            id_ = other.id_;
        }
        return *this;
    }
    [[gnu::always_inline]] ~HeldLock() { release(); }

    /// Takes the lock (releasing any held first).
    // Inline (forced): a call frame costs as much as a fast-path lock.
    [[gnu::always_inline]] Status acquire(Locker& locker, ResourceId id, LockMode mode,
                                          const Deadline& deadline, std::string_view name) {
        release();
        if (LockRequest* r = locker.tryLockFast(id, mode, deadline)) [[likely]] {
            set(locker, r, id);
            return Status::OK();
        }
        return acquireSlow(locker, id, mode, deadline, name);
    }
    bool isLocked() const { return locker_ != nullptr; }
    [[gnu::always_inline]] void release() {
        if (locker_ == nullptr)
            return;
        // Cannot fail: we hold the lock, and a pending request never outlives
        // the constructor that placed it. The request is at hand: no search.
        if (!locker_->tryUnlockFast(request_, id_)) [[unlikely]]
            locker_->unlockHeldSlow(request_, id_);
        locker_ = nullptr;
        request_ = nullptr;
    }

  private:
    friend class AutoGetCollection;  // its one-call fast path fills three at once

    [[gnu::always_inline]] void set(Locker& locker, LockRequest* r, ResourceId id) {
        locker_ = &locker;
        request_ = r;
        id_ = id;
    }
    [[gnu::noinline]] Status acquireSlow(Locker& locker, ResourceId id, LockMode mode,
                                         const Deadline& deadline, std::string_view name);

    Locker* locker_ = nullptr;        // non-null while held
    LockRequest* request_ = nullptr;  // the locker's request for id_ while held
    ResourceId id_;
};

/// One lock on one resource, released on destruction, with its status.
class ResourceLock {
  public:
    ResourceLock() = default;
    /// A lock that was never taken, for `why`.
    explicit ResourceLock(Status why) : status_(std::move(why)) {}
    ResourceLock(Locker& locker, ResourceId id, LockMode mode, const Deadline& deadline,
                 std::string_view name) {
        acquire(locker, id, mode, deadline, name).ignore();
    }
    ResourceLock(ResourceLock&& other) noexcept = default;
    ResourceLock& operator=(ResourceLock&& other) noexcept = default;

    /// Takes the lock (releasing any held first); returns and keeps the status.
    [[gnu::always_inline]] const Status& acquire(Locker& locker, ResourceId id, LockMode mode,
                                                 const Deadline& deadline, std::string_view name) {
        status_ = lock_.acquire(locker, id, mode, deadline, name);
        return status_;
    }
    const Status& status() const { return status_; }
    bool isLocked() const { return lock_.isLocked(); }
    explicit operator bool() const { return isLocked(); }
    void release() { lock_.release(); }

  private:
    HeldLock lock_;
    Status status_;
};

/// The Global lock (with its ticket).
class GlobalLock {
  public:
    GlobalLock(Locker& locker, LockMode mode, const Deadline& deadline = Deadline::never())
        : lock_(locker, ResourceId::global(), mode, deadline, "global") {}
    const Status& status() const { return lock_.status(); }
    bool isLocked() const { return lock_.isLocked(); }
    explicit operator bool() const { return isLocked(); }

  private:
    ResourceLock lock_;
};

/// Global IS/IX, then the database in `mode`.
class DBLock {
  public:
    DBLock(Locker& locker, std::string_view db, LockMode mode,
           const Deadline& deadline = Deadline::never());
    const Status& status() const { return status_; }
    bool isLocked() const { return db_.isLocked(); }
    explicit operator bool() const { return isLocked(); }

  private:
    ResourceLock global_;
    ResourceLock db_;  // released before global_
    Status status_;
};

/// The collection `ns` ("db.coll") in `mode`; the caller must already hold the
/// database in the matching intent mode (or stronger), else InvalidArgument.
class CollectionLock {
  public:
    CollectionLock(Locker& locker, std::string_view ns, LockMode mode,
                   const Deadline& deadline = Deadline::never());
    const Status& status() const { return lock_.status(); }
    bool isLocked() const { return lock_.isLocked(); }
    explicit operator bool() const { return isLocked(); }

  private:
    ResourceLock lock_;
};

/// Global, database and collection locks for one collection access.
class AutoGetCollection {
  public:
    AutoGetCollection(Locker& locker, std::string_view ns, LockMode mode,
                      const Deadline& deadline = Deadline::never());
    AutoGetCollection(Locker& locker, const LockNamespace& ns, LockMode mode,
                      const Deadline& deadline = Deadline::never()) {
        if (ns.dbId().isValid() && tryAcquireFast(locker, ns.dbId(), ns.collectionId(), mode,
                                                  deadline)) [[likely]] {
            return;
        }
        acquireNs(locker, ns, mode, deadline);
    }
    AutoGetCollection(AutoGetCollection&&) noexcept = default;
    AutoGetCollection& operator=(AutoGetCollection&&) noexcept = default;
    // Releases coll_, db_, global_ in that order; in one latch round when the
    // three are still the locker's newest fast-path requests.
    [[gnu::always_inline]] ~AutoGetCollection() {
        Locker* locker = coll_.locker_;
        if (locker != nullptr && db_.locker_ == locker && global_.locker_ == locker &&
            locker->tryUnlockChainFast(global_.request_, db_.request_, coll_.request_, db_.id_,
                                       coll_.id_)) [[likely]] {
            coll_.locker_ = db_.locker_ = global_.locker_ = nullptr;
            coll_.request_ = db_.request_ = global_.request_ = nullptr;
        }
        // Otherwise the members release one by one, coll_ first.
    }
    const Status& status() const { return status_; }
    bool isLocked() const { return coll_.isLocked(); }
    explicit operator bool() const { return isLocked(); }

  private:
    // Locker::tryLockChainFast (a locker holding nothing, intent modes): all
    // three locks in one call, or false with nothing taken.
    [[gnu::always_inline]] bool tryAcquireFast(Locker& locker, ResourceId dbId, ResourceId collId,
                                               LockMode mode, const Deadline& deadline) {
        LockRequest* held[3];
        if (!locker.tryLockChainFast(dbId, collId, mode, deadline, held)) [[unlikely]]
            return false;
        // Field by field: an array of the ids built on the stack and copied
        // out costs store-forwarding stalls (measured).
        global_.set(locker, held[0], ResourceId::global());
        db_.set(locker, held[1], dbId);
        coll_.set(locker, held[2], collId);
        return true;
    }
    void acquireNs(Locker& locker, const LockNamespace& ns, LockMode mode,
                   const Deadline& deadline);
    // Splits and hashes `ns` and remembers the ids in the locker's memo;
    // false (status_ set) when `ns` is not "db.coll".
    [[gnu::noinline]] bool resolve(Locker& locker, std::string_view ns, ResourceId& dbId,
                                   ResourceId& collId, size_t& dot);
    void acquire(Locker& locker, std::string_view ns, std::string_view db, ResourceId dbId,
                 ResourceId collId, LockMode mode, const Deadline& deadline);

    HeldLock global_;
    HeldLock db_;
    HeldLock coll_;  // members are released in reverse: coll_, db_, global_
    Status status_;
};

}  // namespace mvkv::lockmgr
