#include "engine/fencing_tokens.h"

#include <fmt/format.h>

#include <charconv>

#include "engine/document_lock_entry.h"
#include "engine/session.h"
#include "util/printable.h"

namespace mvkv::engine {

FencingTokens::Sequence& FencingTokens::sequence(std::string_view lockNs) {
    std::lock_guard lock(mapMutex_);
    auto it = sequences_.find(std::string(lockNs));
    if (it == sequences_.end())
        it = sequences_.emplace(std::string(lockNs), std::make_unique<Sequence>()).first;
    return *it->second;
}

std::optional<uint64_t> FencingTokens::take(std::string_view lockNs) {
    Sequence& s = sequence(lockNs);
    std::lock_guard lock(s.mutex);
    if (!s.loaded || s.next > s.limit)
        return std::nullopt;
    return s.next++;
}

Status FencingTokens::refill(Session& session, std::string_view lockNs, std::string_view ownersNs) {
    Sequence& s = sequence(lockNs);
    std::lock_guard raise(s.raiseMutex);
    uint64_t limit = 0;
    bool loaded = false;
    {
        std::lock_guard lock(s.mutex);
        if (s.loaded && s.next <= s.limit)
            return Status::OK();  // another caller refilled it meanwhile
        loaded = s.loaded;
        limit = s.limit;
    }
    // Reads and writes outside s.mutex: take() (called with intent locks
    // held) must never wait for a lock wait of ours. raiseMutex keeps the
    // marks in order.
    if (!loaded) {
        std::string text;
        Status g = [&] {
            Session::LocalReads local(session);  // a mark older than the newest reissues tokens
            return session.get(ownersNs, kFencingMarkKey, &text);
        }();
        if (!g.ok() && g.code() != StatusCode::kNotFound)
            return g;
        uint64_t stored = 0;
        if (g.ok()) {
            auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), stored);
            if (ec != std::errc() || end != text.data() + text.size())
                return Status::Corruption(
                    fmt::format("{}'s fencing high-water mark is not a number: '{}'", ownersNs,
                                printable(text)));
        }
        limit = stored;
    }
    if (limit > UINT64_MAX - kBlock)
        return Status::Corruption(fmt::format(
            "{}'s fencing high-water mark {} leaves no tokens to hand out", ownersNs, limit));
    // The mark is committed before any token above the old one goes out.
    const uint64_t mark = limit + kBlock;
    if (Status p =
            session.put(ownersNs, kFencingMarkKey, std::to_string(mark), fencingMarkWriteOptions());
        !p.ok())
        return p;
    {
        std::lock_guard lock(s.mutex);
        if (!s.loaded) {
            s.next = limit + 1;
            s.loaded = true;
        }
        s.limit = mark;
    }
    std::lock_guard lock(mapMutex_);
    ++marksWritten_;
    return Status::OK();
}

uint64_t FencingTokens::marksWritten() const {
    std::lock_guard lock(mapMutex_);
    return marksWritten_;
}

}  // namespace mvkv::engine
