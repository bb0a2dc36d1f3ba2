// Small helpers for crash-safe file handling, shared by the oplog and the
// checkpoints: an errno Status that names the file, whole writes, syncs and
// renames, fsync of a directory (so a created, renamed or removed entry
// survives a crash), and the I/O fault probe the tests drive.
//
// I/O faults: every helper here takes a `site` ("oplogAppend", "checkpoint",
// "marker", ...) and asks the fault probe before its system call, under the
// key "<site>.<op>" with op one of write, fsync, rename, dirsync, remove.
// util sits below the failpoint library, so the failpoint failIO installs
// the probe (failpoint/failpoints.cpp; docs/failpoints.md, "I/O faults").
// With none installed, or failIO off, a probe is one relaxed load.
//
// Thread safety: every function from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "util/status.h"

namespace mvkv {

/// A forced failure: the call fails with `err`; a short write first writes
/// half of its bytes for real (a torn write on disk), then fails.
struct IoFault {
    int err = 0;
    bool shortWrite = false;
};
using IoFaultProbe = std::optional<IoFault> (*)(std::string_view site, std::string_view op);
/// Installed once, at start-up, by the failpoint library.
void installIoFaultProbe(IoFaultProbe probe);
/// The fault to force at `site`'s `op` now, if any.
std::optional<IoFault> ioFault(std::string_view site, std::string_view op);

/// IOError "<what> <path>: <strerror(errno)>"; call right after the failing call.
Status ioError(std::string_view what, const std::string& path);

/// write(2)s all of `bytes` (again after EINTR or a partial write).
/// IOError "<what> <path>: ..." on failure; some bytes may have been written.
Status writeFully(int fd, std::string_view bytes, std::string_view site, std::string_view what,
                  const std::string& path);
/// fdatasync (dataOnly) or fsync of `fd`. IOError naming the file on failure.
Status syncFile(int fd, bool dataOnly, std::string_view site, const std::string& path);
/// rename(2). IOError naming both on failure.
Status renameFile(const std::string& from, const std::string& to, std::string_view site);

/// Opens `dir` and fsyncs it. IOError naming the directory on failure.
Status syncDirectory(const std::string& dir, std::string_view site);

/// Replaces `dir`/`name` with `text` so that a crash leaves the old file or
/// the new one, never a mix: writes "<name>.tmp", fsyncs it, renames it over
/// `name` and fsyncs the directory. IOError naming the file on failure.
Status writeFileAtomically(const std::string& dir, const std::string& name, std::string_view text,
                           std::string_view site);

/// Removes `dir`/`name` (absent is fine) and fsyncs the directory.
Status removeFileDurably(const std::string& dir, const std::string& name, std::string_view site);

/// Removes `path` (absent is fine). IOError naming it on failure.
Status removeFile(const std::string& path, std::string_view site);

}  // namespace mvkv
