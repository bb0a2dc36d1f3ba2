// JsonText: appends a JSON object to a string, field by field, with no
// intermediate tree. The slow-op line and the profile document are written
// for every profiled operation; building them through a JSON library's
// document model cost several times the operation itself.
//
// Usage: JsonText j(&out); j.begin(); j.field("a", 1); j.key("b"); j.begin();
// ... j.end(); j.end();  Keys and string values are escaped as JSON needs.
// Thread safety: a plain value on the caller's stack.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace mvkv::engine {

class JsonText {
  public:
    explicit JsonText(std::string* out) : out_(*out) {}

    void begin() {
        comma();
        out_ += '{';
        first_ = true;
    }
    void end() {
        out_ += '}';
        first_ = false;
    }
    void key(std::string_view k) {
        comma();
        string(k);
        out_ += ':';
        first_ = true;  // the value follows without a comma
    }
    void value(std::string_view s) {
        comma();
        string(s);
    }
    void value(const char* s) { value(std::string_view(s)); }
    void value(uint64_t n) {
        comma();
        out_ += std::to_string(n);
    }
    void value(int64_t n) {
        comma();
        out_ += std::to_string(n);
    }
    void value(int n) { value(static_cast<int64_t>(n)); }
    void value(bool b) {
        comma();
        out_ += b ? "true" : "false";
    }
    /// Text that is already JSON (a nested document).
    void raw(std::string_view json) {
        comma();
        out_ += json;
    }
    template <typename T>
    void field(std::string_view k, const T& v) {
        key(k);
        value(v);
    }

  private:
    void comma() {
        if (!first_)
            out_ += ',';
        first_ = false;
    }
    void string(std::string_view s);

    std::string& out_;
    bool first_ = true;
};

}  // namespace mvkv::engine
