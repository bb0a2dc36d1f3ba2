// mvkv::Cursor over engine::Cursor (include/mvkv/cursor.h).
#include "api/impl.h"

namespace mvkv {

Cursor::Cursor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Cursor::~Cursor() = default;

namespace {

template <typename Move>
Status moved(Cursor::Impl& impl, Move&& move) {
    impl.missed = false;
    return move(*impl.cursor);
}

}  // namespace

Status Cursor::seek(std::string_view key) {
    return moved(*impl_, [&](engine::Cursor& c) { return c.seek(key); });
}
Status Cursor::seekForPrev(std::string_view key) {
    return moved(*impl_, [&](engine::Cursor& c) { return c.seekForPrev(key); });
}
Status Cursor::first() {
    return moved(*impl_, [](engine::Cursor& c) { return c.first(); });
}
Status Cursor::last() {
    return moved(*impl_, [](engine::Cursor& c) { return c.last(); });
}
Status Cursor::next() {
    return moved(*impl_, [](engine::Cursor& c) { return c.next(); });
}
Status Cursor::prev() {
    return moved(*impl_, [](engine::Cursor& c) { return c.prev(); });
}

Status Cursor::find(std::string_view key) {
    if (Status s = seek(key); !s.ok())
        return s;
    if (impl_->cursor->valid() && impl_->cursor->key() == key)
        return Status::OK();
    impl_->missed = true;
    return Status::NotFound("no visible value for the key");
}

bool Cursor::valid() const {
    return !impl_->missed && impl_->cursor->valid();
}
std::string_view Cursor::key() const {
    return valid() ? impl_->cursor->key() : std::string_view();
}
std::string_view Cursor::value() const {
    return valid() ? impl_->cursor->value() : std::string_view();
}
Timestamp Cursor::timestamp() const {
    return valid() ? impl_->cursor->timestamp() : kNoTimestamp;
}

}  // namespace mvkv
