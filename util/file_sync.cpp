#include "util/file_sync.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

namespace mvkv {

namespace {

std::atomic<IoFaultProbe> probe{nullptr};

// Fails the caller's system call as `fault` says: errno set, -1 returned.
int forced(const IoFault& fault) {
    errno = fault.err;
    return -1;
}

}  // namespace

void installIoFaultProbe(IoFaultProbe p) {
    probe.store(p, std::memory_order_release);
}

std::optional<IoFault> ioFault(std::string_view site, std::string_view op) {
    IoFaultProbe p = probe.load(std::memory_order_acquire);
    return p ? p(site, op) : std::nullopt;
}

Status ioError(std::string_view what, const std::string& path) {
    return Status::IOError(fmt::format("{} {}: {}", what, path, std::strerror(errno)));
}

Status writeFully(int fd, std::string_view bytes, std::string_view site, std::string_view what,
                  const std::string& path) {
    const char* p = bytes.data();
    size_t left = bytes.size();
    if (auto fault = ioFault(site, "write")) {
        if (fault->shortWrite && left > 1) {
            // Half of it reaches the file, as when the disk fills mid-write.
            for (size_t half = left / 2; half > 0;) {
                ssize_t n = ::write(fd, p, half);
                if (n < 0 && errno == EINTR)
                    continue;
                if (n <= 0)
                    break;
                p += n;
                half -= static_cast<size_t>(n);
            }
        }
        forced(*fault);
        return ioError(fmt::format("{} (forced by failpoint failIO {}.write{})", what, site,
                                   fault->shortWrite ? ", a short write" : ""),
                       path);
    }
    while (left > 0) {
        ssize_t n = ::write(fd, p, left);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return ioError(what, path);
        }
        p += n;
        left -= static_cast<size_t>(n);
    }
    return Status::OK();
}

Status syncFile(int fd, bool dataOnly, std::string_view site, const std::string& path) {
    const char* what = dataOnly ? "fdatasync" : "fsync";
    if (auto fault = ioFault(site, "fsync")) {
        forced(*fault);
        return ioError(fmt::format("{} (forced by failpoint failIO {}.fsync)", what, site), path);
    }
    if ((dataOnly ? ::fdatasync(fd) : ::fsync(fd)) != 0)
        return ioError(what, path);
    return Status::OK();
}

Status renameFile(const std::string& from, const std::string& to, std::string_view site) {
    if (auto fault = ioFault(site, "rename")) {
        forced(*fault);
        return ioError(
            fmt::format("rename {} (forced by failpoint failIO {}.rename) to", from, site), to);
    }
    if (::rename(from.c_str(), to.c_str()) != 0)
        return ioError(fmt::format("rename {} to", from), to);
    return Status::OK();
}

Status syncDirectory(const std::string& dir, std::string_view site) {
    if (auto fault = ioFault(site, "dirsync")) {
        forced(*fault);
        return ioError(fmt::format("fsync directory (forced by failpoint failIO {}.dirsync)", site),
                       dir);
    }
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return ioError("open directory", dir);
    int rc = ::fsync(fd);
    Status s = rc == 0 ? Status::OK() : ioError("fsync directory", dir);
    ::close(fd);
    return s;
}

Status writeFileAtomically(const std::string& dir, const std::string& name, std::string_view text,
                           std::string_view site) {
    const std::string path = dir + "/" + name;
    const std::string tmp = path + ".tmp";
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return ioError("create", tmp);
    Status s = writeFully(fd, text, site, "write", tmp);
    if (s.ok())
        s = syncFile(fd, false, site, tmp);
    ::close(fd);
    if (s.ok())
        s = renameFile(tmp, path, site);
    if (!s.ok()) {
        ::unlink(tmp.c_str());  // the old file (or none) stands; no stray temp file
        return s;
    }
    return syncDirectory(dir, site);
}

Status removeFile(const std::string& path, std::string_view site) {
    if (auto fault = ioFault(site, "remove")) {
        forced(*fault);
        return ioError(fmt::format("remove (forced by failpoint failIO {}.remove)", site), path);
    }
    if (::unlink(path.c_str()) != 0 && errno != ENOENT)
        return ioError("remove", path);
    return Status::OK();
}

Status removeFileDurably(const std::string& dir, const std::string& name, std::string_view site) {
    const std::string path = dir + "/" + name;
    if (Status s = removeFile(path, site); !s.ok())
        return s;
    return syncDirectory(dir, site);
}

}  // namespace mvkv
