// The shell's input and output of byte strings: splitLine (tokenizer.h) on
// words, quotes, escapes, `;`, comments, every error with its column, random
// garbage and 1 MB lines; and bytes.h: the lossless JSON form
// and the human display form (which the tokenizer reads back when it has no
// escapes). Randomized cases print their seed; MVKV_TEST_SEED=<n> replays one.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "mvkv/utf8.h"
#include "tests/status_check.h"
#include "tools/shell/bytes.h"
#include "tools/shell/tokenizer.h"

using mvkv::isValidUtf8;
using mvkv::StatusCode;
using mvkv::tools::bytesFromJson;
using mvkv::tools::bytesToJson;
using mvkv::tools::Command;
using mvkv::tools::displayBytes;
using mvkv::tools::splitLine;
using mvkv::tools::Token;
using json = nlohmann::ordered_json;
using namespace std::literals;

using Commands = std::vector<Command>;

namespace doctest {
template <>
struct StringMaker<Commands> {
    static String convert(const Commands& commands) {
        std::string out;
        for (const Command& c : commands) {
            out += "[";
            for (size_t i = 0; i < c.size(); ++i)
                out += (i ? " " : "") + std::string(c[i].quoted ? "Q" : "W") + "(" +
                       displayBytes(c[i].text) + ")";
            out += "]";
        }
        return out.empty() ? "(none)" : out.c_str();
    }
};
}  // namespace doctest

namespace {

Token W(std::string text) {
    return {std::move(text), false};
}
Token Q(std::string text) {
    return {std::move(text), true};
}

Commands split(std::string_view line) {
    auto result = splitLine(line);
    REQUIRE_MESSAGE(result.ok(), result.status().toString());
    return std::move(result).value();
}

/// The message of the error splitLine must return for `line`.
std::string splitError(std::string_view line) {
    auto result = splitLine(line);
    REQUIRE_FALSE(result.ok());
    CHECK(result.status().code() == StatusCode::kInvalidArgument);
    return result.status().message();
}

uint64_t baseSeed() {
    const char* v = std::getenv("MVKV_TEST_SEED");
    if (v != nullptr && *v != '\0')
        return std::strtoull(v, nullptr, 10);
    return (uint64_t(std::random_device{}()) << 32) ^ std::random_device{}();
}

/// A line the tokenizer reads back as `commands`: quoted tokens in quotes with
/// \" and \\, unquoted ones as they are.
std::string joinCommands(const Commands& commands) {
    std::string line;
    for (const Command& c : commands) {
        for (const Token& t : c) {
            if (t.quoted) {
                line += '"';
                for (char ch : t.text) {
                    if (ch == '"' || ch == '\\')
                        line += '\\';
                    line += ch;
                }
                line += '"';
            } else {
                line += t.text;
            }
            line += ' ';
        }
        line += ";";
    }
    return line;
}

/// Code points in valid UTF-8 text.
size_t codePoints(std::string_view s) {
    size_t n = 0;
    for (unsigned char c : s)
        n += (c & 0xc0) != 0x80;
    return n;
}

std::string randomBytes(std::mt19937_64& rng, size_t maxLength, std::string_view alphabet) {
    std::string s(rng() % (maxLength + 1), '\0');
    for (char& c : s)
        c = rng() % 2 == 0 ? alphabet[rng() % alphabet.size()] : static_cast<char>(rng());
    return s;
}

}  // namespace

// ---- splitLine ----

TEST_CASE("splitLine: words separated by blanks") {
    CHECK(split("put a b") == Commands{{W("put"), W("a"), W("b")}});
    CHECK(split("  put\t\ta  b \t") == Commands{{W("put"), W("a"), W("b")}});
    CHECK(split("get k\r\n") == Commands{{W("get"), W("k")}});
    CHECK(split("") == Commands{});
    CHECK(split(" \t  ") == Commands{});
}

TEST_CASE("splitLine: outside quotes a backslash is an ordinary byte") {
    CHECK(split(R"(a\b \\ \n)") == Commands{{W(R"(a\b)"), W(R"(\\)"), W(R"(\n)")}});
}

TEST_CASE("splitLine: any bytes are data, NUL and 0xff included") {
    CHECK(split("put a\0b \xff\xfe"s) == Commands{{W("put"), W("a\0b"s), W("\xff\xfe")}});
    CHECK(split("\"\0;\xff\""s) == Commands{{Q("\0;\xff"s)}});
    CHECK(split("caf\xc3\xa9 \xe6\x97\xa5") == Commands{{W("caf\xc3\xa9"), W("\xe6\x97\xa5")}});
}

TEST_CASE("splitLine: quoted strings hold spaces, `;`, `#` and escaped quotes and backslashes") {
    CHECK(split(R"(put "a b" "x;y")") == Commands{{W("put"), Q("a b"), Q("x;y")}});
    CHECK(split(R"("say \"hi\"" "c:\\dir\\")") == Commands{{Q(R"(say "hi")"), Q(R"(c:\dir\)")}});
    CHECK(split(R"("#" x)") == Commands{{Q("#"), W("x")}});
    CHECK(split("\"  \t \"") == Commands{{Q("  \t ")}});
}

TEST_CASE("splitLine: \"\" is an empty argument") {
    CHECK(split(R"(put k "")") == Commands{{W("put"), W("k"), Q("")}});
    CHECK(split(R"("")") == Commands{{Q("")}});
    CHECK(split(R"("" "")") == Commands{{Q(""), Q("")}});
    CHECK(split(R"(""; "")") == Commands{{Q("")}, {Q("")}});
}

TEST_CASE("splitLine: a quote in the middle of a word joins the word") {
    CHECK(split(R"(ab"c d"e)") == Commands{{Q("abc de")}});
    CHECK(split(R"(a""b)") == Commands{{Q("ab")}});
    CHECK(split(R"("a"b"c" d)") == Commands{{Q("abc"), W("d")}});
    CHECK(split(R"(k="a;b";x)") == Commands{{Q("k=a;b")}, {W("x")}});
}

TEST_CASE("splitLine: `;` separates commands and empty commands are dropped") {
    CHECK(split("a;b") == Commands{{W("a")}, {W("b")}});
    CHECK(split("put a 1; get a") == Commands{{W("put"), W("a"), W("1")}, {W("get"), W("a")}});
    CHECK(split("a; ;b") == Commands{{W("a")}, {W("b")}});
    CHECK(split(";;; ;") == Commands{});
    CHECK(split("a;") == Commands{{W("a")}});
    CHECK(split(";a") == Commands{{W("a")}});
    CHECK(split(R"(";")") == Commands{{Q(";")}});
}

TEST_CASE("splitLine: `#` at the start of a command comments out the rest of the line") {
    CHECK(split("# a comment") == Commands{});
    CHECK(split("   #put a b") == Commands{});
    CHECK(split("put a b; # note") == Commands{{W("put"), W("a"), W("b")}});
    CHECK(split("put a b;# note") == Commands{{W("put"), W("a"), W("b")}});
    // Not at the start of a command: an ordinary byte.
    CHECK(split("a #b") == Commands{{W("a"), W("#b")}});
    CHECK(split("a#b") == Commands{{W("a#b")}});
    CHECK(split(R"(""#x)") == Commands{{Q("#x")}});
    // The comment is not parsed: quotes and `;` in it are text.
    CHECK(split(R"(# don't "quote)") == Commands{});
    CHECK(split("a; # b; c") == Commands{{W("a")}});
    CHECK(split(R"(# "\q)") == Commands{});
}

TEST_CASE("splitLine: an unterminated quote is reported at its column") {
    CHECK(splitError(R"(")") == "unterminated quote starting at column 1");
    CHECK(splitError(R"("abc)") == "unterminated quote starting at column 1");
    CHECK(splitError(R"(put "a b)") == "unterminated quote starting at column 5");
    CHECK(splitError(R"(put "a" "b)") == "unterminated quote starting at column 9");
    CHECK(splitError(R"(ok; ab"c)") == "unterminated quote starting at column 7");
    // The escaped quote does not close it; a lone backslash at the end neither.
    CHECK(splitError(R"(x "b\")") == "unterminated quote starting at column 3");
    CHECK(splitError(R"(x "b\)") == "unterminated quote starting at column 3");
    // A backslash outside quotes escapes nothing.
    CHECK(splitError(R"(a\"b)") == "unterminated quote starting at column 3");
}

TEST_CASE("splitLine: an unknown escape inside quotes is reported at its backslash") {
    CHECK(splitError(R"("a\nb")") ==
          R"(unknown escape \n at column 3; inside quotes use \" or \\)");
    CHECK(splitError(R"(put k "\x41")") ==
          R"(unknown escape \x at column 8; inside quotes use \" or \\)");
    CHECK(splitError("\"\\\0\""s) ==
          R"(unknown escape \x00 at column 2; inside quotes use \" or \\)");
    CHECK(splitError("\"\\\xff\"") ==
          R"(unknown escape \xff at column 2; inside quotes use \" or \\)");
    CHECK(splitError("\"\\ \"") ==
          R"(unknown escape \x20 at column 2; inside quotes use \" or \\)");
    // The first error in the line wins, even after a good command.
    CHECK(splitError(R"(put a 1; "\t" "b)") ==
          R"(unknown escape \t at column 11; inside quotes use \" or \\)");
}

TEST_CASE("splitLine: random garbage errors cleanly or splits into tokens that read back") {
    const uint64_t seed = baseSeed();
    MESSAGE("seed ", seed, " (replay with MVKV_TEST_SEED=", seed, ")");
    std::mt19937_64 rng(seed);
    const std::string_view alphabet =
        " \t;\"\\#\0\xff"
        "ab\n"sv;
    int errors = 0;
    for (int i = 0; i < 10000; ++i) {
        const std::string line = randomBytes(rng, 200, alphabet);
        CAPTURE(i);
        CAPTURE(displayBytes(line));
        auto result = splitLine(line);
        if (!result.ok()) {
            ++errors;
            REQUIRE(result.status().code() == StatusCode::kInvalidArgument);
            const std::string& m = result.status().message();
            const size_t at = m.find(" at column ");
            REQUIRE(at != std::string::npos);
            const size_t column = std::strtoull(m.c_str() + at + 11, nullptr, 10);
            REQUIRE(column >= 1);
            REQUIRE(column <= line.size());
            if (m.starts_with("unterminated quote"))
                CHECK(line[column - 1] == '"');
            else
                CHECK((m.starts_with("unknown escape") && line[column - 1] == '\\'));
            continue;
        }
        const Commands& commands = result.value();
        for (const Command& c : commands) {
            REQUIRE(!c.empty());
            if (!c.front().quoted)  // a `#` there would have begun a comment
                CHECK(c.front().text.rfind('#', 0) == std::string::npos);
            for (const Token& t : c) {
                if (t.quoted)
                    continue;
                CHECK(!t.text.empty());
                CHECK(t.text.find_first_of(" \t\r\n;\"") == std::string::npos);
            }
        }
        // Quoting what was quoted, as it is what was not, gives the same commands.
        CHECK(split(joinCommands(commands)) == commands);
    }
    MESSAGE(errors, " of 10000 lines were errors");
    CHECK(errors > 100);
    CHECK(errors < 9900);
}

TEST_CASE("splitLine: 1 MB lines") {
    const size_t mb = 1 << 20;
    std::string words;
    size_t wordCount = 0;
    for (size_t i = 0; words.size() < mb; ++i) {
        words += (i % 7 == 6 ? "; " : "wd ");
        wordCount += i % 7 != 6;
    }
    const Commands commands = split(words);
    size_t tokens = 0;
    for (const Command& c : commands) {
        CHECK(c.size() <= 6);
        tokens += c.size();
    }
    CHECK(tokens == wordCount);
    CHECK(commands.size() == (wordCount + 5) / 6);

    const std::string body(mb, 'x');
    CHECK(split("put k \"" + body + " \\\" \\\\\"") ==
          Commands{{W("put"), W("k"), Q(body + " \" \\")}});
    CHECK(split(body) == Commands{{W(body)}});
    CHECK(split(std::string(mb, ';')) == Commands{});
    CHECK(split("#" + std::string(mb, '"')) == Commands{});
    CHECK(splitError("a \"" + body) == "unterminated quote starting at column 3");
    CHECK(splitError(body + " \"\\" + body + "\"") == "unknown escape \\x at column " +
                                                          std::to_string(mb + 3) +
                                                          "; inside quotes use \\\" or \\\\");
}

// ---- bytesToJson / bytesFromJson ----

TEST_CASE("bytesToJson: UTF-8 is a string, anything else Extended JSON $binary") {
    CHECK(bytesToJson("abc") == json("abc"));
    CHECK(bytesToJson("") == json(""));
    CHECK(bytesToJson("caf\xc3\xa9") == json("caf\xc3\xa9"));
    CHECK(bytesToJson("a\0b"s).dump() == R"("a\u0000b")");
    CHECK(bytesToJson("\xff").dump() == R"({"$binary":{"base64":"/w==","subType":"00"}})");
    CHECK(bytesToJson("\xff\xfe").dump() == R"({"$binary":{"base64":"//4=","subType":"00"}})");
    CHECK(bytesToJson("\xff\xfe\xfd").dump() == R"({"$binary":{"base64":"//79","subType":"00"}})");
    CHECK(bytesToJson("fooba\xff").dump() == R"({"$binary":{"base64":"Zm9vYmH/","subType":"00"}})");
}

TEST_CASE("bytesFromJson: RFC 4648 vectors, and anything else is refused") {
    const auto binary = [](const char* base64) {
        return json::parse(std::string(R"({"$binary":{"base64":")") + base64 +
                           R"(","subType":"00"}})");
    };
    CHECK(bytesFromJson(binary("")) == "");
    CHECK(bytesFromJson(binary("Zg==")) == "f");
    CHECK(bytesFromJson(binary("Zm8=")) == "fo");
    CHECK(bytesFromJson(binary("Zm9v")) == "foo");
    CHECK(bytesFromJson(binary("Zm9vYg==")) == "foob");
    CHECK(bytesFromJson(binary("Zm9vYmE=")) == "fooba");
    CHECK(bytesFromJson(binary("Zm9vYmFy")) == "foobar");
    CHECK(bytesFromJson(binary("AP8=")) == "\0\xff"s);
    CHECK(bytesFromJson(json("plain")) == "plain");

    for (const char* bad : {"Zg=", "Zg", "Z===", "====", "Zh==", "Zm9=", "Zg==Zg==", "Zg!=",
                            "Zm 9v", "Zm9v\\n", "=Zm9"}) {
        CAPTURE(bad);
        CHECK(bytesFromJson(binary(bad)) == std::nullopt);
    }
    for (const char* bad : {
             "null",
             "1",
             "true",
             "[]",
             "{}",
             R"(["a"])",
             R"({"$binary":"Zg=="})",
             R"({"$binary":{"base64":"Zg=="}})",
             R"({"$binary":{"base64":"Zg==","subType":"01"}})",
             R"({"$binary":{"base64":"Zg==","subType":0}})",
             R"({"$binary":{"base64":7,"subType":"00"}})",
             R"({"$binary":{"base64":"Zg==","subType":"00","x":1}})",
             R"({"$binary":{"base64":"Zg==","subType":"00"},"x":1})",
             R"({"$binery":{"base64":"Zg==","subType":"00"}})",
         }) {
        CAPTURE(bad);
        CHECK(bytesFromJson(json::parse(bad)) == std::nullopt);
    }
}

TEST_CASE("bytesToJson and bytesFromJson round-trip random bytes, through JSON text too") {
    const uint64_t seed = baseSeed();
    MESSAGE("seed ", seed, " (replay with MVKV_TEST_SEED=", seed, ")");
    std::mt19937_64 rng(seed);
    int binaries = 0;
    for (int i = 0; i < 5000; ++i) {
        // Half the strings from UTF-8 pieces (and stray bytes), half any bytes.
        std::string s;
        if (i % 2 == 0) {
            const std::vector<std::string> pieces = {
                "a",  " ",  "\0"s, "\xc3\xa9", "\xe6\x97\xa5", "\xf0\x9f\x98\x80",
                "\"", "\\", "\xff"};
            for (size_t n = rng() % 20; n > 0; --n)
                s += pieces[rng() % (pieces.size() - (rng() % 4 == 0 ? 0 : 1))];
        } else {
            s = randomBytes(rng, 64, "a\0\xff"sv);
        }
        CAPTURE(i);
        CAPTURE(displayBytes(s));
        const json j = bytesToJson(s);
        CHECK(j.is_string() == isValidUtf8(s));
        binaries += j.is_object();
        CHECK(bytesFromJson(j) == s);
        CHECK(bytesFromJson(json::parse(j.dump())) == s);
    }
    CHECK(binaries > 1000);
    CHECK(binaries < 4000);
}

// ---- displayBytes ----

TEST_CASE("displayBytes: printable UTF-8 as it is, anything else quoted with escapes") {
    CHECK(displayBytes("abc") == "abc");
    CHECK(displayBytes("caf\xc3\xa9") == "caf\xc3\xa9");
    CHECK(displayBytes(R"(c:\dir)") == R"(c:\dir)");
    CHECK(displayBytes("a#b") == "a#b");
    // Quoted so that a table stays readable and the tokenizer reads it back.
    CHECK(displayBytes("a b") == R"("a b")");
    CHECK(displayBytes("") == R"("")");
    CHECK(displayBytes("a;b") == R"("a;b")");
    CHECK(displayBytes("#x") == R"("#x")");
    CHECK(displayBytes(R"(say "hi" \o/)") == R"("say \"hi\" \\o/")");
    // Controls and invalid UTF-8: display-only escapes.
    CHECK(displayBytes("a\nb\tc\rd") == R"("a\nb\tc\rd")");
    CHECK(displayBytes("\0\x01\x1b\x7f"s) == R"("\x00\x01\x1b\x7f")");
    CHECK(displayBytes("\xc2\x85") == R"("\xc2\x85")");  // U+0085, a C1 control
    CHECK(displayBytes("\xff"
                       "A") == R"("\xffA")");
    CHECK(displayBytes("caf\xc3\xa9\xc3") == "\"caf\xc3\xa9\\xc3\"");
    CHECK(displayBytes("\xed\xa0\x80") == R"("\xed\xa0\x80")");
}

TEST_CASE("displayBytes with maxChars: cut at a whole character, \"...\" included") {
    CHECK(displayBytes("abcdefghij", 0) == "abcdefghij");
    CHECK(displayBytes("abcdefghij", 10) == "abcdefghij");
    CHECK(displayBytes("abcdefghij", 9) == "abcdef...");
    CHECK(displayBytes("abcdefghij", 5) == "ab...");
    CHECK(displayBytes("abcdefghij", 1) == "ab...");                     // below 5 acts as 5
    const std::string nihongo = "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e";  // three characters
    CHECK(displayBytes(nihongo + nihongo + nihongo, 6) == nihongo + "...");
    CHECK(displayBytes(nihongo + nihongo + nihongo, 7) == nihongo + "\xe6\x97\xa5...");
    CHECK(displayBytes("hello world", 11) == R"("hello "...)");
    CHECK(displayBytes("hello world", 13) == R"("hello world")");
    CHECK(displayBytes("", 5) == R"("")");
    // Never inside an escape: "\xff" is one piece of four characters.
    CHECK(displayBytes("a\xff\xff\xff", 12) == R"("a\xff"...)");
    CHECK(displayBytes("a\xff\xff\xff", 9) == R"("a"...)");
    CHECK(displayBytes("a\nbcdefg", 10) == R"("a\nbc"...)");
    CHECK(displayBytes("x\xc2\x85yz", 12) == R"("x"...)");  // a C1 control is cut whole
}

TEST_CASE("displayBytes: always printable UTF-8, within maxChars, and read back when unescaped") {
    const uint64_t seed = baseSeed();
    MESSAGE("seed ", seed, " (replay with MVKV_TEST_SEED=", seed, ")");
    std::mt19937_64 rng(seed);
    int readBack = 0;
    for (int i = 0; i < 5000; ++i) {
        std::string s;
        const std::vector<std::string> pieces = {"a",
                                                 "b",
                                                 " ",
                                                 ";",
                                                 "#",
                                                 "\"",
                                                 "\\",
                                                 "\t",
                                                 "\xc3\xa9",
                                                 "\xe6\x97\xa5",
                                                 "\xf0\x9f\x98\x80",
                                                 "\0"s,
                                                 "\xff",
                                                 "\xc2\x85",
                                                 "\x7f"};
        // Every third string only from printable pieces.
        const size_t choices = i % 3 == 0 ? 11 : pieces.size();
        for (size_t n = rng() % 24; n > 0; --n)
            s += pieces[rng() % choices];
        CAPTURE(i);
        CAPTURE(bytesToJson(s).dump());
        const std::string shown = displayBytes(s);
        REQUIRE(isValidUtf8(shown));
        for (unsigned char c : shown)
            CHECK((c >= 0x20 && c != 0x7f));
        const size_t maxChars = 5 + rng() % 30;
        const std::string cut = displayBytes(s, maxChars);
        CHECK(codePoints(cut) <= maxChars);
        CHECK(isValidUtf8(cut));
        if (cut != shown)
            CHECK(cut.ends_with("..."));

        if (isValidUtf8(s) && s.find_first_of("\t\0\x7f"s) == std::string::npos &&
            s.find("\xc2\x85") == std::string::npos) {
            ++readBack;
            const Commands got = split(shown);
            REQUIRE(got.size() == 1);
            REQUIRE(got[0].size() == 1);
            CHECK(got[0][0].text == s);
            CHECK(got[0][0].quoted == (shown.front() == '"'));
        }
    }
    CHECK(readBack > 500);
}
