// Printing a Reply: human text (results on stdout; "error: Code: message"
// and a hint on stderr) or exactly one JSON object per reply on stdout.
#pragma once

#include <cstdio>

#include "reply.h"

namespace mvkv::tools {

void printReply(const Reply& reply, bool json, std::FILE* out, std::FILE* err);
/// The JSON object of a reply (what --json prints on one line).
nlohmann::ordered_json replyJson(const Reply& reply);

}  // namespace mvkv::tools
