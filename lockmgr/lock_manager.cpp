#include "lockmgr/lock_manager.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <ctime>
#include <nlohmann/json.hpp>

namespace mvkv::lockmgr {

namespace {
constexpr uint32_t kIntentModes = modeMask(LockMode::kIS) | modeMask(LockMode::kIX);
using Status = LockRequest::Status;
}  // namespace

LockManager::LockManager(LockManagerOptions options)
    : options_(options),
      buckets_(new Bucket[kNumBuckets]),
      tickets_(options.ticketPolicy, options.readTickets, options.writeTickets, &partitionLatches_) {}

LockManager::~LockManager() {
    for (size_t i = 0; i < kNumBuckets; ++i) {
        LockHead* head = buckets_[i].chain.load(std::memory_order_relaxed);
        while (head != nullptr) {
            LockHead* next = head->nextInBucket;
            delete head;
            head = next;
        }
    }
}

// ---------------------------------------------------------------------------
// Granting

LockResult LockManager::lockSlow(ResourceId id, LockRequest* r, LockHead* head,
                                 std::string_view name) {
    Bucket& b = bucketFor(id);
    std::lock_guard<std::mutex> g(b.mutex);
    if (head == nullptr)
        head = findHead(id);  // another thread may have made it
    if (head == nullptr) {
        head = new LockHead(id, partitionLatches_);
        head->nextInBucket = b.chain.load(std::memory_order_relaxed);
        b.chain.store(head, std::memory_order_release);
    }
    if (head->name.empty() && !name.empty())
        head->name = name;

    // Open our slot (or join it) when only intent modes are around.
    if (r->partitioned && (head->grantedModes & ~kIntentModes) == 0 && head->conflict.empty() &&
        head->conversionsCount == 0) {
        LockPartitionSlot& slot = slotFor(head, r->lockerId);
        std::lock_guard<SpinLatch> sg(*slot.latch);
        slot.open = true;
        head->openSlots |= 1u << (r->lockerId % kNumPartitions);
        slot.granted.pushBack(r);
        r->partitionSlot = &slot;
        r->lock = head;
        r->status = Status::kGranted;
        return LockResult::kOk;
    }

    r->partitioned = false;
    if (head->openSlots != 0)
        migratePartitioned(head);
    return newRequest(head, r);
}

LockResult LockManager::newRequest(LockHead* head, LockRequest* r) {
    r->lock = head;
    // A request that would queue ahead of everyone is held back only by the
    // granted modes and pending conversions: were it queued, it would be first
    // in line and nothing would be left to wake it.
    uint32_t queued = r->enqueueAtFront ? 0 : head->conflictModes;
    bool blocked =
        conflicts(r->mode, head->grantedModes) ||
        (head->compatibleFirstCount == 0 && conflicts(r->mode, queued | head->convertingModes));
    if (blocked) {
        r->status = Status::kWaiting;
        if (r->enqueueAtFront) {
            // First in line, but after earlier front requests (FIFO among them).
            LockRequest* after = nullptr;
            for (LockRequest* q = head->conflict.front(); q && q->enqueueAtFront; q = q->next) {
                after = q;
            }
            if (after) {
                head->conflict.insertAfter(after, r);
            } else {
                head->conflict.pushFront(r);
            }
        } else {
            head->conflict.pushBack(r);
        }
        head->incConflict(r->mode);
        noteWaitChange();
        return LockResult::kWaiting;
    }
    r->status = Status::kGranted;
    head->granted.pushBack(r);
    head->incGranted(r->mode);
    if (r->compatibleFirst)
        ++head->compatibleFirstCount;
    return LockResult::kOk;
}

LockResult LockManager::convert(LockRequest* r, LockMode newMode) {
    LockHead* head = r->lock;
    std::lock_guard<std::mutex> g(bucketFor(r->resourceId).mutex);
    // The request may sit in a slot; conversions need the LockHead's lists.
    if (head->openSlots != 0)
        migratePartitioned(head);
    assert(r->status == Status::kGranted && r->lock == head);

    if (!conflicts(newMode, head->grantedModesExcept(r))) {
        head->decGranted(r->mode);
        head->incGranted(newMode);
        r->mode = newMode;
        return LockResult::kOk;
    }
    r->status = Status::kConverting;
    r->convertMode = newMode;
    head->incConverting(newMode);
    noteWaitChange();
    return LockResult::kWaiting;
}

void LockManager::unlockSlow(LockRequest* r) {
    Bucket& b = bucketFor(r->resourceId);
    std::lock_guard<std::mutex> g(b.mutex);
    LockHead* head = r->lock;
    assert(head != nullptr);
    switch (r->status) {
        case Status::kConverting:
            head->decConverting(r->convertMode);
            r->convertMode = LockMode::kNone;
            noteWaitChange();
            [[fallthrough]];
        case Status::kGranted:
            head->granted.remove(r);
            head->decGranted(r->mode);
            if (r->compatibleFirst)
                --head->compatibleFirstCount;
            break;
        case Status::kWaiting:
            head->conflict.remove(r);
            head->decConflict(r->mode);
            noteWaitChange();
            break;
        case Status::kNew:
            assert(false && "unlock of a request that was never placed");
            return;
    }
    r->status = Status::kNew;
    r->mode = LockMode::kNone;
    r->lock = nullptr;
    grantWaiters(head);
}

void LockManager::downgrade(LockRequest* r, LockMode newMode) {
    assert(isModeCovered(newMode, r->mode));
    if (r->partitioned) {
        LockPartitionSlot& slot = slotFor(r->lock, r->lockerId);
        std::lock_guard<SpinLatch> g(*slot.latch);
        if (r->partitionSlot != nullptr) {
            r->mode = newMode;  // IX -> IS: nobody waits on a partitioned resource
            return;
        }
    }
    Bucket& b = bucketFor(r->resourceId);
    std::lock_guard<std::mutex> g(b.mutex);
    LockHead* head = r->lock;
    assert(r->status == Status::kGranted);
    head->decGranted(r->mode);
    head->incGranted(newMode);
    r->mode = newMode;
    // A Global S/X lowered to an intent mode no longer earns compatibleFirst.
    if (r->compatibleFirst && isIntentMode(newMode)) {
        r->compatibleFirst = false;
        --head->compatibleFirstCount;
    }
    grantWaiters(head);
}

LockResult LockManager::cancelWait(LockRequest* r) {
    Bucket& b = bucketFor(r->resourceId);
    std::lock_guard<std::mutex> g(b.mutex);
    LockHead* head = r->lock;
    switch (r->status) {
        case Status::kGranted:
            return LockResult::kOk;  // the grant won the race
        case Status::kWaiting:
            head->conflict.remove(r);
            head->decConflict(r->mode);
            noteWaitChange();
            r->status = Status::kNew;
            r->mode = LockMode::kNone;
            r->lock = nullptr;
            break;
        case Status::kConverting:
            head->decConverting(r->convertMode);
            r->convertMode = LockMode::kNone;
            r->status = Status::kGranted;
            noteWaitChange();
            break;
        case Status::kNew:
            return LockResult::kWaiting;
    }
    // A withdrawn waiter or conversion may have held back requests behind it.
    grantWaiters(head);
    return LockResult::kWaiting;
}

void LockManager::migratePartitioned(LockHead* head) {
    for (size_t p = 0; p < kNumPartitions; ++p) {
        if (((head->openSlots >> p) & 1u) == 0)
            continue;
        LockPartitionSlot& slot = head->slots[p];
        std::lock_guard<SpinLatch> g(*slot.latch);
        while (LockRequest* r = slot.granted.front()) {
            slot.granted.remove(r);
            r->partitionSlot = nullptr;
            head->granted.pushBack(r);
            head->incGranted(r->mode);
        }
        slot.open = false;
    }
    head->openSlots = 0;
}

void LockManager::grantWaiters(LockHead* head) {
    // Conversions first: they wait only for the other granted modes.
    if (head->conversionsCount > 0) {
        for (LockRequest* r = head->granted.front(); r; r = r->next) {
            if (r->status != Status::kConverting)
                continue;
            if (conflicts(r->convertMode, head->grantedModesExcept(r)))
                continue;
            head->decGranted(r->mode);
            head->incGranted(r->convertMode);
            head->decConverting(r->convertMode);
            r->mode = r->convertMode;
            r->convertMode = LockMode::kNone;
            r->status = Status::kGranted;
            noteWaitChange();
            r->notify->notify(LockResult::kOk);
        }
    }
    // Then the queue, front to back. `ahead` holds the modes still waiting in
    // front of the request being looked at; FIFO means not overtaking them.
    uint32_t ahead = head->convertingModes;
    LockRequest* next = nullptr;
    for (LockRequest* r = head->conflict.front(); r; r = next) {
        next = r->next;
        bool grantable = !conflicts(r->mode, head->grantedModes) &&
                         (head->compatibleFirstCount > 0 || !conflicts(r->mode, ahead));
        if (!grantable) {
            ahead |= modeMask(r->mode);
            // Nothing can pass a waiting X unless compatibleFirst is in force.
            if (head->compatibleFirstCount == 0 && (ahead & modeMask(LockMode::kX)))
                break;
            continue;
        }
        head->conflict.remove(r);
        head->decConflict(r->mode);
        head->granted.pushBack(r);
        head->incGranted(r->mode);
        if (r->compatibleFirst)
            ++head->compatibleFirstCount;
        r->status = Status::kGranted;
        noteWaitChange();
        r->notify->notify(LockResult::kOk);
    }
}

// ---------------------------------------------------------------------------
// Waits-for graph

void LockManager::registerWait(LockerId locker, ResourceId id, LockMode mode) {
    std::lock_guard<std::mutex> g(waitsMutex_);
    waits_[locker] = {id, mode};
}

void LockManager::unregisterWait(LockerId locker) {
    std::lock_guard<std::mutex> g(waitsMutex_);
    waits_.erase(locker);
}

std::optional<std::pair<ResourceId, LockMode>> LockManager::waitOf(LockerId locker) const {
    std::lock_guard<std::mutex> g(waitsMutex_);
    auto it = waits_.find(locker);
    if (it == waits_.end())
        return std::nullopt;
    return it->second;
}

std::vector<LockManager::Blocker> LockManager::blockersOf(LockerId locker, ResourceId id) const {
    std::vector<Blocker> out;
    const LockHead* head = findHead(id);
    if (head == nullptr)
        return out;
    std::lock_guard<std::mutex> g(bucketFor(id).mutex);

    // A pending conversion waits for the other granted requests only.
    for (const LockRequest* r = head->granted.front(); r; r = r->next) {
        if (r->lockerId != locker || r->status != Status::kConverting)
            continue;
        for (const LockRequest* o = head->granted.front(); o; o = o->next) {
            if (o != r && conflicts(r->convertMode, modeMask(o->mode))) {
                out.push_back({o->lockerId, o->mode});
            }
        }
        return out;
    }
    // A queued request waits for conflicting grants, for pending conversions
    // to conflicting modes, and (FIFO) for conflicting requests ahead of it.
    for (const LockRequest* w = head->conflict.front(); w; w = w->next) {
        if (w->lockerId != locker)
            continue;
        for (const LockRequest* o = head->granted.front(); o; o = o->next) {
            bool blocks =
                conflicts(w->mode, modeMask(o->mode)) ||
                (o->status == Status::kConverting && conflicts(w->mode, modeMask(o->convertMode)));
            if (blocks)
                out.push_back({o->lockerId, o->mode});
        }
        if (head->compatibleFirstCount == 0) {
            for (const LockRequest* a = head->conflict.front(); a != w; a = a->next) {
                if (conflicts(w->mode, modeMask(a->mode)))
                    out.push_back({a->lockerId, a->mode});
            }
        }
        return out;
    }
    return out;  // not waiting here (any more)
}

bool LockManager::searchCycle(LockerId requester, LockerId current, int depth,
                              std::vector<LockerId>& path, std::vector<LockerId>& visited) const {
    auto wait = waitOf(current);
    if (!wait)
        return false;
    path.push_back(current);
    for (const Blocker& blocker : blockersOf(current, wait->first)) {
        if (blocker.locker == requester)
            return true;
        if (std::find(visited.begin(), visited.end(), blocker.locker) != visited.end())
            continue;
        visited.push_back(blocker.locker);
        if (depth + 1 < options_.deadlockMaxDepth &&
            searchCycle(requester, blocker.locker, depth + 1, path, visited)) {
            return true;
        }
    }
    path.pop_back();
    return false;
}

std::optional<DeadlockRecord> LockManager::findCycle(LockerId requester, ResourceId id) const {
    std::vector<LockerId> path;
    std::vector<LockerId> visited{requester};
    if (!searchCycle(requester, requester, 0, path, visited))
        return std::nullopt;

    // The graph was read one resource at a time; re-check every edge so a
    // state that changed under the walk is not taken for a deadlock. Edges of
    // a real deadlock cannot change: every locker on it is blocked.
    DeadlockRecord record;
    record.when = std::chrono::system_clock::now();
    record.victim = requester;
    for (size_t i = 0; i < path.size(); ++i) {
        LockerId waiter = path[i];
        LockerId blockedBy = path[(i + 1) % path.size()];
        auto wait = waitOf(waiter);
        if (!wait || (i == 0 && !(wait->first == id)))
            return std::nullopt;
        auto blockers = blockersOf(waiter, wait->first);
        bool still = std::any_of(blockers.begin(), blockers.end(),
                                 [&](const Blocker& b) { return b.locker == blockedBy; });
        if (!still)
            return std::nullopt;
        record.cycle.push_back({waiter, wait->first, resourceName(wait->first), wait->second});
    }
    return record;
}

std::optional<DeadlockRecord> LockManager::refuseIfDeadlocked(LockerId requester, ResourceId id,
                                                              LockRequest* request) {
    std::lock_guard<std::mutex> detector(detectorMutex_);
    std::optional<DeadlockRecord> record = findCycle(requester, id);
    if (!record)
        return std::nullopt;
    // A member of the cycle may have timed out or been interrupted since the
    // check, and the grant may have reached us: then there is nothing to refuse.
    if (cancelWait(request) == LockResult::kOk)
        return std::nullopt;
    unregisterWait(requester);

    deadlocksDetected_.fetch_add(1, std::memory_order_relaxed);
    std::lock_guard<std::mutex> g(deadlockMutex_);
    deadlocks_.push_back(*record);
    while (deadlocks_.size() > options_.deadlockRingSize)
        deadlocks_.pop_front();
    return record;
}

std::vector<DeadlockRecord> LockManager::recentDeadlocks() const {
    std::lock_guard<std::mutex> g(deadlockMutex_);
    return {deadlocks_.begin(), deadlocks_.end()};
}

std::string DeadlockRecord::toString() const {
    std::string out = fmt::format("deadlock: locker {} would close the cycle", victim);
    for (const DeadlockEdge& e : cycle) {
        out += fmt::format("; locker {} waits for {} {} '{}'", e.locker, modeName(e.mode),
                           resourceTypeName(e.resource.type()), e.resourceName);
    }
    return out;
}

// ---------------------------------------------------------------------------
// Introspection

void LockManager::fillInfo(LockHead& head, LockHeadInfo& info) {
    info.resource = head.resourceId;
    info.name = head.name.empty() ? head.resourceId.toString() : head.name;
    for (const LockRequest* r = head.granted.front(); r; r = r->next) {
        info.granted.push_back({r->lockerId, r->mode,
                                r->status == Status::kConverting ? r->convertMode : LockMode::kNone,
                                false});
    }
    for (const LockRequest* r = head.conflict.front(); r; r = r->next) {
        info.waiting.push_back({r->lockerId, r->mode, LockMode::kNone, false});
    }
    for (size_t p = 0; p < kNumPartitions; ++p) {
        if (((head.openSlots >> p) & 1u) == 0)
            continue;
        std::lock_guard<SpinLatch> g(*head.slots[p].latch);
        for (const LockRequest* r = head.slots[p].granted.front(); r; r = r->next) {
            info.granted.push_back({r->lockerId, r->mode, LockMode::kNone, true});
        }
    }
}

std::vector<LockHeadInfo> LockManager::dump() const {
    // Read bucket by bucket, a lock taken before queueing could be read
    // before it was granted and the queued request after: currentOp showed a
    // waiter on a collection without its database intent. So the read is
    // retried while a request started or stopped waiting during it. Then
    // every waiter shown queued before the read began, after the locks it
    // took first (a later waitChanges_ value seen means those are seen too).
    constexpr int kAttempts = 8;
    std::vector<LockHeadInfo> out;
    for (int attempt = 1;; ++attempt) {
        uint64_t before = waitChanges_.load(std::memory_order_acquire);
        out = dumpOnce();
        if (waitChanges_.load(std::memory_order_acquire) == before || attempt == kAttempts)
            return out;
    }
}

std::vector<LockHeadInfo> LockManager::dumpOnce() const {
    std::vector<LockHeadInfo> out;
    for (size_t i = 0; i < kNumBuckets; ++i) {
        std::lock_guard<std::mutex> g(buckets_[i].mutex);
        for (LockHead* head = buckets_[i].chain.load(std::memory_order_acquire); head;
             head = head->nextInBucket) {
            LockHeadInfo info;
            fillInfo(*head, info);
            if (!info.granted.empty() || !info.waiting.empty())
                out.push_back(std::move(info));
        }
    }
    return out;
}

std::vector<LockHeadInfo> LockManager::dumpLocker(LockerId locker) const {
    std::vector<LockHeadInfo> out;
    for (LockHeadInfo& info : dump()) {
        auto mine = [&](const LockHeadInfo::Entry& e) { return e.locker == locker; };
        if (std::any_of(info.granted.begin(), info.granted.end(), mine) ||
            std::any_of(info.waiting.begin(), info.waiting.end(), mine)) {
            out.push_back(std::move(info));
        }
    }
    return out;
}

std::string LockManager::resourceName(ResourceId id) const {
    LockHead* head = findHead(id);
    if (head == nullptr)
        return id.toString();
    std::lock_guard<std::mutex> g(bucketFor(id).mutex);  // name may be set late
    return head->name.empty() ? id.toString() : head->name;
}

size_t LockManager::lockHeadCount() const {
    size_t n = 0;
    for (size_t i = 0; i < kNumBuckets; ++i) {
        for (LockHead* h = buckets_[i].chain.load(std::memory_order_acquire); h;
             h = h->nextInBucket) {
            ++n;
        }
    }
    return n;
}

std::string LockManager::checkInvariants() const {
    for (size_t i = 0; i < kNumBuckets; ++i) {
        std::lock_guard<std::mutex> g(buckets_[i].mutex);
        for (LockHead* head = buckets_[i].chain.load(std::memory_order_acquire); head;
             head = head->nextInBucket) {
            std::string err = head->checkInvariants();
            if (!err.empty())
                return err;
        }
    }
    return {};
}

std::string LockManager::serverStatusJson() const {
    using json = nlohmann::ordered_json;
    json out;
    int64_t readers = queuedReaders(), writers = queuedWriters();
    out["globalLock"]["currentQueue"] = {
        {"total", readers + writers}, {"readers", readers}, {"writers", writers}};
    out["locks"] = json::parse(stats_.snapshot().toJson());
    auto ticketDoc = [](const TicketStats& s) {
        return json{{"out", s.out},
                    {"available", s.available},
                    {"totalTickets", s.total},
                    {"queued", s.queued},
                    {"timeouts", s.timeouts}};
    };
    out["tickets"] = {{"policy", ticketPolicyName(tickets_.read().policy())},
                      {"read", ticketDoc(tickets_.read().stats())},
                      {"write", ticketDoc(tickets_.write().stats())}};
    json recent = json::array();
    for (const DeadlockRecord& d : recentDeadlocks()) {
        json cycle = json::array();
        for (const DeadlockEdge& e : d.cycle) {
            cycle.push_back({{"locker", e.locker},
                             {"waitsFor", e.resourceName},
                             {"type", resourceTypeName(e.resource.type())},
                             {"mode", modeName(e.mode)}});
        }
        std::time_t t = std::chrono::system_clock::to_time_t(d.when);
        recent.push_back({{"victim", d.victim}, {"unixTime", int64_t(t)}, {"cycle", cycle}});
    }
    out["deadlocks"] = {{"detected", deadlocksDetected()}, {"recent", recent}};
    return out.dump();
}

}  // namespace mvkv::lockmgr
