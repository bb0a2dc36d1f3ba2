#include "lockmgr/locker.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>

namespace mvkv::lockmgr {

namespace {
using Clock = std::chrono::steady_clock;

int64_t microsSince(Clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t).count();
}
}  // namespace

Locker::Locker(LockManager& manager) : manager_(manager), id_(manager.newLockerId()) {
    manager_.stats().registerLocker(&stats_);
}

Locker::~Locker() {
    if (pending_.request != nullptr) {
        finishWait(LockResult::kInterrupted).ignore();
    }
    // Release whatever is left, two-phase locking or not: a destroyed locker
    // must never leave requests in the lock table.
    for (LockRequest* r : requests_) {
        manager_.unlock(r);
        delete r;
    }
    requests_.clear();
    if (ticketHolder_ != nullptr)
        ticketHolder_->release(partition());
    while (LockRequest* r = freeHead_) {
        freeHead_ = r->nextFree;
        delete r;
    }
    manager_.stats().unregisterLocker(&stats_);
}

// ---------------------------------------------------------------------------
// Requests owned by this locker

void Locker::RequestTable::grow() {
    auto bigger = std::make_unique<LockRequest*[]>(size_t(capacity_) * 2);
    std::copy(data_, data_ + size_, bigger.get());
    heap_ = std::move(bigger);
    data_ = heap_.get();
    capacity_ *= 2;
}

bool Locker::findChainHeads(ResourceId dbId, ResourceId collId) {
    LockHead* hg = manager_.findHead(ResourceId::global());
    LockHead* hd = manager_.findHead(dbId);
    LockHead* hc = manager_.findHead(collId);
    if (hg == nullptr || hd == nullptr || hc == nullptr)
        return false;
    chainHeads_ = {dbId, collId, hg, hd, hc};
    return true;
}

bool Locker::lockChainTicketFirst(LockHead* hg, LockHead* hd, LockHead* hc) {
    LockRequest* g = freeHead_;
    LockRequest* d = g->nextFree;
    LockRequest* c = d->nextFree;
    TicketHolder* holder = manager_.tickets().forMode(g->mode);
    if (!holder->tryAcquireFast(partition()))
        return false;
    if (!LockManager::tryLockPartitioned3(hg, g, hd, d, hc, c)) {
        holder->releaseFast(partition());
        return false;
    }
    return true;
}

LockRequest* Locker::newRequest(ResourceId id) {
    LockRequest* r;
    if (freeHead_ != nullptr) {
        r = freeHead_;
        freeHead_ = r->nextFree;
        r->nextFree = nullptr;
        --freeCount_;
        // The manager left its fields reset (status kNew, unlinked); reset ours.
        assert(r->status == LockRequest::Status::kNew && r->prev == nullptr && r->next == nullptr &&
               r->partitionSlot == nullptr);
        r->resourceId = id;
        r->ownerMode = LockMode::kNone;
        r->recursiveCount = 0;
        r->unlockPending = 0;
    } else {
        r = new LockRequest(id_, id, &notification_);
    }
    r->ownerIndex = uint32_t(requests_.size());
    requests_.push_back(r);
    if (id.type() == ResourceType::kGlobal)
        global_ = r;
    return r;
}

void Locker::freeRequest(LockRequest* r) {
    assert(requests_[r->ownerIndex] == r);
    LockRequest* last = requests_.back();
    requests_[r->ownerIndex] = last;
    last->ownerIndex = r->ownerIndex;
    requests_.pop_back();
    if (r == global_)
        global_ = nullptr;
    if (freeCount_ < kMaxFreeRequests) {
        r->nextFree = freeHead_;
        freeHead_ = r;
        ++freeCount_;
    } else {
        delete r;
    }
}

Status Locker::validate(ResourceId id, LockMode mode) const {
    if (!id.isValid()) {
        return Status::InvalidArgument(
            "lock on an invalid resource (empty name or no type); name the database or "
            "collection");
    }
    if (!isValidMode(mode)) {
        return Status::InvalidArgument(
            fmt::format("invalid lock mode {}; use IS, IX, S or X", int(mode)));
    }
    return Status::OK();
}

bool Locker::isReader(LockMode requested) const {
    LockMode g = globalMode();
    return isSharedMode(g != LockMode::kNone ? g : requested);
}

Deadline Locker::effectiveDeadline(const Deadline& deadline, Clock::time_point since) const {
    if (!maxLockTimeout_)
        return deadline;
    return Deadline::earliest(deadline, Deadline::at(since + *maxLockTimeout_));
}

std::string Locker::holdersDescription(ResourceId id) const {
    std::string out;
    for (const LockHeadInfo& info : manager_.dump()) {
        if (!(info.resource == id))
            continue;
        for (const auto& e : info.granted) {
            if (e.locker == id_)
                continue;
            if (!out.empty())
                out += ", ";
            out += fmt::format("locker {} ({})", e.locker, modeName(e.mode));
        }
    }
    return out.empty() ? "none now" : out;
}

// ---------------------------------------------------------------------------
// Acquisition

Locker::Begun Locker::begin(ResourceId id, LockMode mode, std::string_view name, Status& error,
                            LockRequest*& held) {
    if (pending_.request != nullptr) [[unlikely]] {
        error = Status::IllegalOperation(fmt::format(
            "locker {} already waits for {}; call lockComplete() before asking for another lock",
            id_, manager_.resourceName(pending_.request->resourceId)));
        return Begun::kFailed;
    }
    LockRequest* r = find(id);
    if (r != nullptr) {
        held = r;
        return beginHeld(r, mode, error);
    }
    // A first-time request: the common case, kept short.
    stats_.add(id.type(), mode, LockStatKind::kAcquireCount);
    r = newRequest(id);
    held = r;
    r->partitioned = isIntentMode(mode) && id.type() != ResourceType::kMutex;
    // Global S and X must not starve behind a stream of intent requests.
    bool fullGlobal =
        id.type() == ResourceType::kGlobal && (mode == LockMode::kS || mode == LockMode::kX);
    r->enqueueAtFront = r->compatibleFirst = fullGlobal;
    if (manager_.lock(id, r, mode, name) == LockResult::kOk) [[likely]] {
        r->recursiveCount = 1;
        r->ownerMode = mode;
        return Begun::kGranted;
    }
    return startWait(r, mode, /*conversion=*/false, error);
}

Locker::Begun Locker::beginHeld(LockRequest* r, LockMode mode, Status& error) {
    ResourceId id = r->resourceId;
    if (isModeCovered(mode, r->ownerMode)) {
        stats_.add(id.type(), mode, LockStatKind::kAcquireCount);
        ++r->recursiveCount;
        return Begun::kGranted;
    }
    if (!isModeCovered(r->ownerMode, mode)) {
        error = Status::InvalidArgument(fmt::format(
            "cannot convert {} to {} on {} '{}': neither covers the other and there is no "
            "SIX mode; ask for X",
            modeName(r->ownerMode), modeName(mode), resourceTypeName(id.type()),
            manager_.resourceName(id)));
        return Begun::kFailed;
    }
    stats_.add(id.type(), mode, LockStatKind::kAcquireCount);
    if (manager_.convert(r, mode) == LockResult::kOk) {
        ++r->recursiveCount;
        r->ownerMode = mode;
        return Begun::kGranted;
    }
    return startWait(r, mode, /*conversion=*/true, error);
}

Locker::Begun Locker::startWait(LockRequest* r, LockMode mode, bool conversion, Status& error) {
    // It must wait: record the edge, then make sure it closes no cycle.
    ResourceId id = r->resourceId;
    pending_ = {r, mode, conversion, isReader(mode), Clock::now()};
    stats_.add(id.type(), mode, LockStatKind::kAcquireWaitCount);
    manager_.registerWait(id_, id, mode);
    manager_.addQueued(pending_.reader, +1);
    if (auto cycle = manager_.refuseIfDeadlocked(id_, id, r)) {
        stats_.add(id.type(), mode, LockStatKind::kDeadlockCount);
        finishWait(LockResult::kDeadlock, /*withdrawn=*/true).ignore();
        error = Status::Deadlock(cycle->toString() +
                                 "; this request was refused, the locker keeps its other locks: "
                                 "release them and retry");
        return Begun::kFailed;
    }
    return Begun::kWaiting;
}

StatusWith<LockResult> Locker::toLockResult(Begun begun, Status& error) {
    if (begun == Begun::kGranted)
        return LockResult::kOk;
    if (begun == Begun::kWaiting)
        return LockResult::kWaiting;
    return std::move(error);
}

StatusWith<LockResult> Locker::lockBegin(ResourceId id, LockMode mode, std::string_view name) {
    if (Status s = validate(id, mode); !s.ok())
        return s;
    if (id.type() == ResourceType::kGlobal)
        return lockGlobalBegin(mode);
    Status error;
    LockRequest* held = nullptr;
    return toLockResult(begin(id, mode, name, error, held), error);
}

StatusWith<LockResult> Locker::lockGlobalBegin(LockMode mode, const Deadline& deadline) {
    Status error;
    LockRequest* held = nullptr;
    return toLockResult(beginGlobal(mode, deadline, error, held), error);
}

Status Locker::waitForTicket(TicketHolder* holder, LockMode mode, const Deadline& deadline) {
    bool reader = isSharedMode(mode);
    manager_.addQueued(reader, +1);
    Status s = holder->acquire(effectiveDeadline(deadline, Clock::now()), interrupted_, partition());
    manager_.addQueued(reader, -1);
    if (s.code() == StatusCode::kLockTimeout) {
        return Status::LockTimeout(
            fmt::format("Unable to acquire a {} ticket for a Global {} lock: {}",
                        reader ? "read" : "write", modeName(mode), s.message()));
    }
    return s;
}

Locker::Begun Locker::beginGlobal(LockMode mode, const Deadline& deadline, Status& error,
                                  LockRequest*& held) {
    constexpr ResourceId kGlobalId = ResourceId::global();
    if (!isValidMode(mode)) [[unlikely]] {
        error = validate(kGlobalId, mode);
        return Begun::kFailed;
    }
    if (!deadline.valid()) [[unlikely]] {
        error = Status::InvalidArgument(deadline.invalidReason());
        return Begun::kFailed;
    }
    if (pending_.request != nullptr) [[unlikely]]
        return begin(kGlobalId, mode, "global", error, held);  // refused: one pending at a time

    if (ticketHolder_ == nullptr && globalMode() == LockMode::kNone) {
        TicketHolder* holder = manager_.tickets().forMode(mode);
        if (holder != nullptr && !holder->tryAcquireFast(partition())) [[unlikely]] {
            if (Status s = waitForTicket(holder, mode, deadline); !s.ok()) {
                error = std::move(s);
                return Begun::kFailed;
            }
        }
        ticketHolder_ = holder;
    }
    Begun begun = begin(kGlobalId, mode, "global", error, held);
    if (begun == Begun::kFailed)
        releaseTicketIfUnlocked();
    return begun;
}

Status Locker::lockComplete(const Deadline& deadline) {
    if (pending_.request == nullptr) {
        return Status::IllegalOperation("lockComplete() without a pending lock request");
    }
    if (!deadline.valid()) {
        // Withdraw; if the grant already arrived, the caller holds the lock.
        if (finishWait(LockResult::kInterrupted).ok())
            return Status::OK();
        return Status::InvalidArgument(deadline.invalidReason() +
                                       "; the pending request was withdrawn");
    }
    Deadline effective = effectiveDeadline(deadline, pending_.since);
    LockResult result = notification_.wait(effective, interrupted_);
    return finishWait(result);
}

bool Locker::pendingGranted() {
    return pending_.request == nullptr || notification_.hasResult();
}

Status Locker::finishWait(LockResult result, bool withdrawn) {
    LockRequest* r = pending_.request;
    assert(r != nullptr);
    // Withdraw unless granted; the grant may still win that race.
    if (result != LockResult::kOk && !withdrawn && manager_.cancelWait(r) == LockResult::kOk) {
        result = LockResult::kOk;
    }
    Pending p = pending_;
    pending_ = {};
    int64_t waited = microsSince(p.since);
    ResourceType type = r->resourceId.type();
    stats_.add(type, p.mode, LockStatKind::kTimeAcquiringMicros, uint64_t(waited));
    manager_.unregisterWait(id_);
    manager_.addQueued(p.reader, -1);
    // The request is granted or withdrawn, so no notification can still come;
    // clearing here, once per wait, keeps the notification mutex off the
    // uncontended path (which never waits).
    notification_.clear();

    if (result == LockResult::kOk) {
        ++r->recursiveCount;
        r->ownerMode = p.mode;
        return Status::OK();
    }
    ResourceId id = r->resourceId;
    if (!p.isConversion)
        freeRequest(r);
    releaseTicketIfUnlocked();

    std::string what = fmt::format("{} lock on {} '{}'", modeName(p.mode), resourceTypeName(type),
                                   manager_.resourceName(id));
    if (result == LockResult::kTimeout) {
        return Status::LockTimeout(fmt::format(
            "Unable to acquire {} within {} ms (held by {}); the locker was left as it was", what,
            waited / 1000, holdersDescription(id)));
    }
    if (result == LockResult::kInterrupted) {
        return Status::Interrupted(fmt::format("interrupted while waiting for {}", what));
    }
    return Status::Deadlock(fmt::format("waiting for {} would deadlock", what));
}

Status Locker::lockAndGetSlow(ResourceId id, LockMode mode, const Deadline& deadline,
                              std::string_view name, LockRequest*& held) {
    failpoint::hangInLockAcquisition.pauseIfFires();  // the fast paths leave it to here
    Status error;
    Begun begun;
    if (id.type() == ResourceType::kGlobal) {
        begun = beginGlobal(mode, deadline, error, held);
    } else {
        if (!id.isValid() || !isValidMode(mode)) [[unlikely]]
            return validate(id, mode);
        if (!deadline.valid()) [[unlikely]]
            return Status::InvalidArgument(deadline.invalidReason());
        begun = begin(id, mode, name, error, held);
    }
    if (begun == Begun::kWaiting) [[unlikely]]
        return lockComplete(deadline);
    return error;  // OK when granted
}

Status Locker::lockGlobal(LockMode mode, const Deadline& deadline) {
    LockRequest* held = nullptr;
    return lockAndGet(ResourceId::global(), mode, deadline, "global", held);
}

Status Locker::lock(ResourceId id, LockMode mode, const Deadline& deadline, std::string_view name) {
    LockRequest* held = nullptr;
    return lockAndGet(id, mode, deadline, name, held);
}

// ---------------------------------------------------------------------------
// Release

Status Locker::releaseOne(LockRequest* r) {
    if (--r->recursiveCount > 0)
        return Status::OK();
    bool global = r == global_;
    manager_.unlock(r);
    freeRequest(r);
    if (global)
        releaseTicketIfUnlocked();
    return Status::OK();
}

Status Locker::unlock(ResourceId id) {
    LockRequest* r = find(id);
    if (r != nullptr && pending_.request == r) {
        return Status::IllegalOperation(
            fmt::format("unlock of {} while a request on it is pending; call lockComplete() first",
                        manager_.resourceName(id)));
    }
    if (r == nullptr || r->recursiveCount <= r->unlockPending) {
        return Status::InvalidArgument(
            fmt::format("unlock of {} '{}', which locker {} does not hold",
                        resourceTypeName(id.type()), manager_.resourceName(id), id_));
    }
    bool delay = wuowDepth_ > 0 && id.type() != ResourceType::kMutex &&
                 (r->ownerMode == LockMode::kIX || r->ownerMode == LockMode::kX);
    if (delay) {
        ++r->unlockPending;
        return Status::OK();
    }
    return releaseOne(r);
}

void Locker::unlockHeldSlow(LockRequest* r, ResourceId id) {
    // `r` is only trusted while it is still one of ours and still this lock
    // (a caller may have unlocked it by id behind the RAII object's back);
    // the newest request is last, so the search is short in LIFO order.
    bool ours = false;
    for (size_t i = requests_.size(); i-- > 0;) {
        if (requests_[i] == r) {
            ours = true;
            break;
        }
    }
    if (!ours || !(r->resourceId == id) || pending_.request == r ||
        r->recursiveCount <= r->unlockPending) [[unlikely]] {
        unlock(id).ignore();  // the general path, with its checks
        return;
    }
    if (wuowDepth_ > 0 && id.type() != ResourceType::kMutex &&
        (r->ownerMode == LockMode::kIX || r->ownerMode == LockMode::kX)) {
        ++r->unlockPending;
        return;
    }
    releaseOne(r).ignore();
}

Status Locker::unlockGlobal() {
    return unlock(ResourceId::global());
}

Status Locker::downgrade(ResourceId id, LockMode newMode) {
    if (Status s = validate(id, newMode); !s.ok())
        return s;
    LockRequest* r = find(id);
    if (r == nullptr || pending_.request == r) {
        return Status::InvalidArgument(fmt::format("downgrade of {} '{}', which is not held",
                                                   resourceTypeName(id.type()),
                                                   manager_.resourceName(id)));
    }
    if (!isModeCovered(newMode, r->ownerMode)) {
        return Status::InvalidArgument(fmt::format("cannot downgrade {} to {}: {} is not weaker",
                                                   modeName(r->ownerMode), modeName(newMode),
                                                   modeName(newMode)));
    }
    if (newMode == r->ownerMode)
        return Status::OK();
    manager_.downgrade(r, newMode);
    r->ownerMode = newMode;
    return Status::OK();
}

Status Locker::endWriteUnitOfWork() {
    if (wuowDepth_ == 0) {
        return Status::IllegalOperation("endWriteUnitOfWork() without beginWriteUnitOfWork()");
    }
    if (pending_.request != nullptr) {
        return Status::IllegalOperation(
            "endWriteUnitOfWork() while a lock request is pending; call lockComplete() first");
    }
    if (--wuowDepth_ > 0)
        return Status::OK();
    // Release deferred unlocks; the Global lock last so its ticket goes last.
    std::vector<LockRequest*> deferred;
    for (LockRequest* r : requests_) {
        if (r->unlockPending > 0)
            deferred.push_back(r);
    }
    std::stable_partition(deferred.begin(), deferred.end(), [](LockRequest* r) {
        return r->resourceId.type() != ResourceType::kGlobal;
    });
    for (LockRequest* r : deferred) {
        uint32_t n = r->unlockPending;
        r->unlockPending = 0;
        r->recursiveCount -= n - 1;
        (void)releaseOne(r);
    }
    return Status::OK();
}

// ---------------------------------------------------------------------------
// Queries, timeouts, interruption

LockMode Locker::getLockMode(ResourceId id) const {
    LockRequest* r = find(id);
    if (r == nullptr || r->recursiveCount == 0)
        return LockMode::kNone;
    return r->ownerMode;
}

bool Locker::isLockHeldForMode(ResourceId id, LockMode mode) const {
    LockMode held = getLockMode(id);
    return held != LockMode::kNone && isModeCovered(mode, held);
}

LockerInfo Locker::describe() const {
    LockerInfo info;
    info.id = id_;
    for (const LockRequest* r : requests_) {
        LockerInfo::Held h{r->resourceId, manager_.resourceName(r->resourceId), r->ownerMode,
                           r->recursiveCount, r->unlockPending};
        if (r == pending_.request) {
            LockerInfo::Held w = h;
            w.mode = pending_.mode;
            info.waitingFor = w;
            if (!pending_.isConversion)
                continue;
        }
        info.held.push_back(h);
    }
    return info;
}

std::string LockerInfo::toString() const {
    std::string out = fmt::format("locker {}: holds", id);
    if (held.empty())
        out += " nothing";
    for (const Held& h : held) {
        out += fmt::format(" {} {} '{}' x{}", modeName(h.mode), resourceTypeName(h.resource.type()),
                           h.name, h.recursiveCount);
    }
    if (waitingFor) {
        out += fmt::format("; waits for {} {} '{}'", modeName(waitingFor->mode),
                           resourceTypeName(waitingFor->resource.type()), waitingFor->name);
    }
    return out;
}

Status Locker::setMaxLockTimeout(std::chrono::milliseconds timeout) {
    if (timeout.count() < 0 || timeout > Deadline::kMaxTimeout) {
        return Status::InvalidArgument(
            fmt::format("max lock timeout must be between 0 and {} ms, got {} ms",
                        Deadline::kMaxTimeout.count(), timeout.count()));
    }
    maxLockTimeout_ = timeout;
    return Status::OK();
}

void Locker::interrupt() {
    interrupted_.store(true, std::memory_order_release);
    notification_.wake();
    manager_.tickets().read().interruptWaiters();
    manager_.tickets().write().interruptWaiters();
}

}  // namespace mvkv::lockmgr
