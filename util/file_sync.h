// Small helpers for crash-safe file handling, shared by the oplog and the
// checkpoints: an errno Status that names the file, and fsync of a directory
// (so a created, renamed or removed entry survives a crash).
#pragma once

#include <string>
#include <string_view>

#include "util/status.h"

namespace mvkv {

/// IOError "<what> <path>: <strerror(errno)>"; call right after the failing call.
Status ioError(std::string_view what, const std::string& path);

/// Opens `dir` and fsyncs it. IOError naming the directory on failure.
Status syncDirectory(const std::string& dir);

/// Replaces `dir`/`name` with `text` so that a crash leaves the old file or
/// the new one, never a mix: writes "<name>.tmp", fsyncs it, renames it over
/// `name` and fsyncs the directory. IOError naming the file on failure.
Status writeFileAtomically(const std::string& dir, const std::string& name, std::string_view text);

/// Removes `dir`/`name` (absent is fine) and fsyncs the directory.
Status removeFileDurably(const std::string& dir, const std::string& name);

}  // namespace mvkv
