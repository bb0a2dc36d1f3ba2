#include "engine/document_locks.h"

#include <fmt/format.h>
#include <sys/random.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

#include "engine/engine.h"
#include "engine/op_report.h"
#include "engine/op_scope.h"
#include "engine/session.h"
#include "util/deadline.h"
#include "util/printable.h"

namespace mvkv::engine {

namespace {

Status checkTtl(std::chrono::milliseconds ttl) {
    if (ttl.count() <= 0)
        return Status::InvalidArgument(fmt::format(
            "a lock's ttl must be positive, not {} ms: it is how long the lock holds unless "
            "refreshed",
            ttl.count()));
    if (ttl > kMaxLockTtl)
        return Status::InvalidArgument(
            fmt::format("a lock's ttl of {} ms is too long; the limit is {} ms (365 days)",
                        ttl.count(), kMaxLockTtl.count()));
    return Status::OK();
}

/// now + ttl, when it fits.
StatusWith<int64_t> expiryAfter(int64_t now, std::chrono::milliseconds ttl) {
    if (now > std::numeric_limits<int64_t>::max() - ttl.count())
        return Status::InvalidArgument(
            fmt::format("the wall clock ({} ms) plus the ttl overflows", now));
    return now + ttl.count();
}

}  // namespace

StatusWith<std::optional<LockEntry>> readLockEntry(Session& session, std::string_view lockNs,
                                                   std::string_view key) {
    std::string value;
    Status g = session.get(lockNs, key, &value);
    if (g.code() == StatusCode::kNotFound || g.code() == StatusCode::kNamespaceNotFound)
        return std::optional<LockEntry>();
    if (!g.ok())
        return g;
    auto e = decodeLockEntry(value, fmt::format("{} key '{}'", lockNs, printable(key)));
    if (!e.ok())
        return e.status();
    return std::optional<LockEntry>(std::move(e).value());
}

struct DocumentLocks::Target {
    std::string ns;
    std::string key;
    std::string lockNs;
    std::string ownersNs;

    std::string where() const { return fmt::format("{} key '{}'", ns, printable(key)); }
};

/// What one acquisition attempt found.
struct DocumentLocks::Attempt {
    std::optional<LockEntry> holder;    // DocumentLocked: the lock that holds
    std::optional<LockEntry> previous;  // an expired lock taken over
    bool needTokens = false;            // the token block was used up
    LockEntry granted;
};

DocumentLocks::DocumentLocks(Session& session) : session_(session), engine_(session.engine()) {}

StatusWith<std::string> DocumentLocks::generateOwner() {
    unsigned char bytes[16];
    size_t got = 0;
    while (got < sizeof bytes) {
        ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return Status::IOError(
                fmt::format("cannot generate a lock owner: getrandom: {}", std::strerror(errno)));
        }
        got += static_cast<size_t>(n);
    }
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    out.reserve(32);
    for (unsigned char b : bytes) {
        out += kHex[b >> 4];
        out += kHex[b & 0xf];
    }
    return out;
}

Status DocumentLocks::checkNoTransaction(std::string_view what) const {
    if (session_.inTransaction())
        return Status::IllegalOperation(fmt::format(
            "cannot {} inside a transaction: it commits on its own; commit or abort the "
            "transaction first",
            what));
    return Status::OK();
}

StatusWith<DocumentLocks::Target> DocumentLocks::target(std::string_view ns, std::string_view key,
                                                        bool needsNs) {
    auto parsed = Namespace::parse(ns);
    if (!parsed.ok())
        return parsed.status();
    if (isLockCollectionName(parsed.value().coll()))
        return Status::InvalidArgument(fmt::format(
            "{} is a lock collection (or could be one: its name ends in .lock or .lock.owners); "
            "lock the documents of the collection it belongs to",
            ns));
    const size_t maxKey = engine_.options().maxKeyBytes;
    if (key.size() > maxKey)
        return Status::InvalidArgument(
            fmt::format("key is {} bytes; the limit is {} (maxKeyBytes)", key.size(), maxKey));
    if (needsNs && !engine_.catalog().lookup(ns))
        return Status::NamespaceNotFound(fmt::format(
            "cannot lock documents of {}: the collection does not exist; create it first", ns));
    Target t;
    t.ns.assign(ns);
    t.key.assign(key);
    t.lockNs = lockCollectionName(ns);
    t.ownersNs = ownerIndexName(ns);
    return t;
}

Status DocumentLocks::createLockCollections(const Target& t) {
    // Outside any transaction (create cannot run in one). Two acquirers may
    // race to create them: the loser's NamespaceExists is as good as OK.
    for (const std::string* ns : {&t.lockNs, &t.ownersNs}) {
        if (engine_.catalog().lookup(*ns))
            continue;
        Status s = session_.createCollection(*ns, lockCollectionOptions());
        if (!s.ok() && s.code() != StatusCode::kNamespaceExists)
            return Status(s.code(), fmt::format("cannot create the lock collection {}: {}", *ns,
                                                s.message()));
    }
    return Status::OK();
}

LockInfo DocumentLocks::describe(const Target& t, LockEntry e) const {
    LockInfo info;
    info.ns = t.ns;
    info.key = t.key;
    const int64_t now = engine_.wallClockMs();
    info.expired = e.expiresAtMs <= now;
    info.remainingMs = info.expired ? 0 : e.expiresAtMs - now;
    info.entry = std::move(e);
    return info;
}

Status DocumentLocks::writeLock(const Target& t, const LockEntry& e) {
    const std::string value = encodeLockEntry(e);
    const WriteOptions options = lockEntryWriteOptions(e);
    if (Status s = session_.put(t.lockNs, t.key, value, options); !s.ok())
        return s;
    return session_.put(t.ownersNs, ownerKey(e.owner, t.key), value, options);
}

Status DocumentLocks::eraseLock(std::string_view lockNs, std::string_view ownersNs,
                                std::string_view key, std::string_view owner, bool entryToo) {
    if (entryToo) {
        if (Status r = session_.remove(lockNs, key); !r.ok())
            return r;
    }
    // The index entry may be gone already (the TTL monitor deletes the two
    // entries in transactions of their own).
    Status r = session_.remove(ownersNs, ownerKey(owner, key));
    return r.code() == StatusCode::kNotFound ? Status::OK() : r;
}

StatusWith<DocumentLocks::Target> DocumentLocks::holderTarget(std::string_view ns,
                                                              std::string_view key,
                                                              std::string_view owner,
                                                              std::string_view what) {
    if (Status s = checkNoTransaction(what); !s.ok())
        return s;
    if (Status s = checkOwner(owner); !s.ok())
        return s;
    return target(ns, key, true);
}

Status DocumentLocks::attemptAcquire(const Target& t, const std::string& owner,
                                     std::chrono::milliseconds ttl, Attempt* out) {
    DocumentLockState& state = engine_.docLockState();
    return session_.withTransaction([&](Session&) -> Status {
        *out = Attempt{};
        auto old = readLockEntry(session_, t.lockNs, t.key);
        if (!old.ok())
            return old.status();
        const int64_t now = engine_.wallClockMs();
        auto expiry = expiryAfter(now, ttl);
        if (!expiry.ok())
            return expiry.status();
        if (const std::optional<LockEntry>& h = old.value(); h && h->expiresAtMs > now) {
            out->holder = h;
            return Status::DocumentLocked(fmt::format(
                "{} is locked until {} ({} ms from now){}", t.where(), isoDateMs(h->expiresAtMs),
                h->expiresAtMs - now,
                h->owner == owner
                    ? fmt::format("; you hold it (owner {}, token {}): refresh it to extend it",
                                  h->owner, h->token)
                    : ""));
        }
        out->previous = std::move(old).value();
        // After the snapshot began: see engine/fencing_tokens.h for why
        // that orders the tokens of one key's holders.
        std::optional<uint64_t> token = state.tokens.take(t.lockNs);
        if (!token) {
            out->needTokens = true;
            return Status::Busy("the fencing token block is used up");  // refilled, then retried
        }
        if (out->previous && out->previous->owner != owner) {
            if (Status r = eraseLock(t.lockNs, t.ownersNs, t.key, out->previous->owner, false);
                !r.ok())
                return r;
        }
        out->granted = LockEntry{owner, *token, now, expiry.value()};
        return writeLock(t, out->granted);
    });
}

StatusWith<LockInfo> DocumentLocks::acquire(std::string_view ns, std::string_view key,
                                            const AcquireOptions& options) {
    OpScope scope(session_, {CurOpType::kCommand, "acquireLock", ns, key});
    DocumentLockState& state = engine_.docLockState();
    LockInfo granted;
    Status result = [&]() -> Status {
        if (Status s = checkNoTransaction("acquire a document lock"); !s.ok())
            return s;
        if (Status s = checkTtl(options.ttl); !s.ok())
            return s;
        const Deadline deadline = Deadline::in(options.wait);
        if (!deadline.valid())
            return Status::InvalidArgument("a lock's wait: " + deadline.invalidReason());
        std::string owner;
        if (options.owner) {
            if (Status s = checkOwner(*options.owner); !s.ok())
                return s;
            owner = *options.owner;
        } else {
            auto generated = generateOwner();
            if (!generated.ok())
                return generated.status();
            owner = std::move(generated).value();
        }
        auto t = target(ns, key, true);
        if (!t.ok())
            return t.status();
        const size_t maxKey = engine_.options().maxKeyBytes;
        if (owner.size() + 1 + key.size() > maxKey)
            return Status::InvalidArgument(fmt::format(
                "owner and key take {} bytes in the owner index; the limit is {} (maxKeyBytes): "
                "use a shorter owner",
                owner.size() + 1 + key.size(), maxKey));
        if (Status s = createLockCollections(t.value()); !s.ok())
            return s;

        LockWaiters::Stripe& stripe = state.waiters.stripeFor(t.value().lockNs, key);
        const auto started = std::chrono::steady_clock::now();
        bool waited = false;
        auto deny = [&](const Status& locked) {
            state.counters.add(state.counters.denied);
            if (!waited)
                return locked;
            return Status::DocumentLocked(
                fmt::format("{}; waited {} ms for it", locked.message(),
                            std::chrono::duration_cast<std::chrono::milliseconds>(
                                std::chrono::steady_clock::now() - started)
                                .count()));
        };
        while (true) {
            // Before the attempt: a release committed after this read
            // changes the generation, so the sleep below cannot miss it.
            const uint64_t seen = stripe.generation();
            Attempt a;
            Status s = attemptAcquire(t.value(), owner, options.ttl, &a);
            if (s.ok()) {
                state.counters.add(state.counters.acquired);
                if (a.previous)
                    state.counters.add(state.counters.takeovers);
                granted = describe(t.value(), a.granted);
                granted.tookOver = a.previous.has_value();
                return s;
            }
            if (a.needTokens) {
                if (Status r = state.tokens.refill(session_, t.value().lockNs, t.value().ownersNs);
                    !r.ok())
                    return r;
                continue;
            }
            if (s.code() != StatusCode::kDocumentLocked)
                return s;
            if (options.wait.count() == 0 || deadline.expired())
                return deny(s);
            // Until it is freed, the deadline, or the holder's expiry
            // (which needs no commit to free it).
            const auto now = std::chrono::steady_clock::now();
            const int64_t expiresIn = a.holder->expiresAtMs - engine_.wallClockMs();
            auto until = deadline.when();
            if (expiresIn <
                std::chrono::duration_cast<std::chrono::milliseconds>(until - now).count())
                until = now + std::chrono::milliseconds(std::max<int64_t>(expiresIn, 1));
            if (!waited) {
                waited = true;
                state.counters.add(state.counters.waits);
            }
            session_.docLockWait_.store(&stripe);
            auto w = state.waiters.wait(stripe, seen, until, session_.interrupted_);
            session_.docLockWait_.store(nullptr);
            if (w == LockWaiters::WaitResult::kInterrupted)
                return Status::Interrupted(fmt::format(
                    "the operation was interrupted (killOp) while waiting for the lock on {}",
                    t.value().where()));
            // Nothing on its stripe committed since the attempt and the
            // deadline came: the lock is as the attempt found it.
            if (w == LockWaiters::WaitResult::kTimedOut && deadline.expired())
                return deny(s);
        }
    }();
    result = scope.finish(std::move(result));
    if (!result.ok())
        return result;
    return granted;
}

Status DocumentLocks::release(std::string_view ns, std::string_view key, std::string_view owner) {
    OpScope scope(session_, {CurOpType::kCommand, "releaseLock", ns, key});
    DocumentLockState& state = engine_.docLockState();
    return scope.finish([&]() -> Status {
        auto tw = holderTarget(ns, key, owner, "release a document lock");
        if (!tw.ok())
            return tw.status();
        const Target& t = tw.value();
        Status s = session_.withTransaction([&](Session&) -> Status {
            auto e = readLockEntry(session_, t.lockNs, t.key);
            if (!e.ok())
                return e.status();
            if (!e.value())
                return Status::NotFound(fmt::format("{} is not locked", t.where()));
            if (e.value()->owner != owner)
                return Status::NotLockOwner(fmt::format(
                    "{} is locked by another owner; a lock is released only by its holder",
                    t.where()));
            return eraseLock(t.lockNs, t.ownersNs, t.key, owner, true);
        });
        if (s.ok())
            state.counters.add(state.counters.released);
        return s;
    }());
}

StatusWith<bool> DocumentLocks::releaseIndexed(const std::string& ns, std::string_view owner,
                                               std::string_view key) {
    const std::string lockNs = lockCollectionName(ns);
    const std::string ownersNs = ownerIndexName(ns);
    bool released = false;
    Status s = session_.withTransaction([&](Session&) -> Status {
        auto e = readLockEntry(session_, lockNs, key);
        if (!e.ok())
            return e.status();
        // An index entry whose lock is gone or has another holder now (the
        // TTL monitor removed the lock first) is stale: it goes, uncounted.
        released = e.value() && e.value()->owner == owner;
        return eraseLock(lockNs, ownersNs, key, owner, released);
    });
    if (!s.ok())
        return s;
    return released;
}

StatusWith<uint64_t> DocumentLocks::releaseAll(std::string_view owner) {
    OpScope scope(session_, {CurOpType::kCommand, "releaseAllLocks"});
    DocumentLockState& state = engine_.docLockState();
    uint64_t released = 0;
    Status result = [&]() -> Status {
        if (Status s = checkNoTransaction("release document locks"); !s.ok())
            return s;
        if (Status s = checkOwner(owner); !s.ok())
            return s;
        constexpr std::string_view kSuffix = ".lock.owners";
        const std::string prefix = ownerKeyPrefix(owner);
        for (const auto& coll : engine_.catalog().all()) {
            const std::string& ownersNs = coll->ns().ns();
            if (!ownersNs.ends_with(kSuffix))
                continue;
            const std::string ns = ownersNs.substr(0, ownersNs.size() - kSuffix.size());
            std::vector<std::string> keys;
            ScanOptions o;
            o.range.from = prefix;
            Session::LocalReads local(session_);  // every lock the owner holds now
            Status s = session_.scan(ownersNs, o, [&](std::string_view k, std::string_view) {
                if (!k.starts_with(prefix))
                    return false;
                keys.emplace_back(k.substr(prefix.size()));
                return true;
            });
            if (s.code() == StatusCode::kNamespaceNotFound)
                continue;  // dropped since the catalog was listed
            if (!s.ok())
                return s;
            for (const std::string& key : keys) {
                auto r = releaseIndexed(ns, owner, key);
                if (!r.ok())
                    return r.status();
                if (r.value()) {
                    ++released;
                    state.counters.add(state.counters.released);
                }
            }
        }
        return Status::OK();
    }();
    result = scope.finish(std::move(result));
    if (!result.ok())
        return released == 0
                   ? result
                   : Status(result.code(), fmt::format("{} (after releasing {} locks, which stay "
                                                       "released)",
                                                       result.message(), released));
    return released;
}

StatusWith<LockInfo> DocumentLocks::refresh(std::string_view ns, std::string_view key,
                                            std::string_view owner, std::chrono::milliseconds ttl) {
    OpScope scope(session_, {CurOpType::kCommand, "refreshLock", ns, key});
    DocumentLockState& state = engine_.docLockState();
    LockInfo refreshed;
    Status result = [&]() -> Status {
        if (Status s = checkTtl(ttl); !s.ok())
            return s;
        auto tw = holderTarget(ns, key, owner, "refresh a document lock");
        if (!tw.ok())
            return tw.status();
        const Target& t = tw.value();
        LockEntry e;
        Status s = session_.withTransaction([&](Session&) -> Status {
            auto old = readLockEntry(session_, t.lockNs, t.key);
            if (!old.ok())
                return old.status();
            if (!old.value())
                return Status::NotFound(fmt::format(
                    "{} is not locked (released, or expired and removed): acquire it again",
                    t.where()));
            e = *old.value();
            if (e.owner != owner)
                return Status::NotLockOwner(fmt::format(
                    "{} is locked by another owner; only the holder refreshes a lock", t.where()));
            const int64_t now = engine_.wallClockMs();
            if (e.expiresAtMs <= now)
                return Status::LockLost(fmt::format(
                    "your lock on {} expired at {} ({} ms ago); acquire it again (for a new "
                    "fencing token)",
                    t.where(), isoDateMs(e.expiresAtMs), now - e.expiresAtMs));
            auto expiry = expiryAfter(now, ttl);
            if (!expiry.ok())
                return expiry.status();
            e.expiresAtMs = expiry.value();
            return writeLock(t, e);
        });
        if (s.code() == StatusCode::kLockLost)
            state.counters.add(state.counters.lockLost);
        if (!s.ok())
            return s;
        state.counters.add(state.counters.refreshed);
        refreshed = describe(t, e);
        return s;
    }();
    result = scope.finish(std::move(result));
    if (!result.ok())
        return result;
    return refreshed;
}

StatusWith<LockInfo> DocumentLocks::inspect(std::string_view ns, std::string_view key) {
    OpScope scope(session_, {CurOpType::kQuery, "inspectLock", ns, key});
    LockInfo info;
    Status result = [&]() -> Status {
        auto tw = target(ns, key, true);
        if (!tw.ok())
            return tw.status();
        const Target& t = tw.value();
        auto e = readLockEntry(session_, t.lockNs, t.key);
        if (!e.ok())
            return e.status();
        if (!e.value())
            return Status::NotFound(fmt::format("{} is not locked", t.where()));
        info = describe(t, *std::move(e).value());
        return Status::OK();
    }();
    result = scope.finish(std::move(result));
    if (!result.ok())
        return result;
    return info;
}

StatusWith<std::vector<LockInfo>> DocumentLocks::list(std::string_view ns) {
    OpScope scope(session_, {CurOpType::kQuery, "listLocks", ns});
    std::vector<LockInfo> out;
    Status result = [&]() -> Status {
        auto tw = target(ns, {}, true);
        if (!tw.ok())
            return tw.status();
        Target t = std::move(tw).value();
        Status decodeError;
        Status s = session_.scan(t.lockNs, {}, [&](std::string_view k, std::string_view v) {
            auto e = decodeLockEntry(v, t.lockNs + " key '" + printable(k) + "'");
            if (!e.ok()) {
                decodeError = e.status();
                return false;
            }
            t.key.assign(k);
            out.push_back(describe(t, std::move(e).value()));
            return true;
        });
        if (s.code() == StatusCode::kNamespaceNotFound)
            return Status::OK();  // no lock was ever taken in ns
        if (!s.ok())
            return s;
        return decodeError;
    }();
    result = scope.finish(std::move(result));
    if (!result.ok())
        return result;
    return out;
}

}  // namespace mvkv::engine
