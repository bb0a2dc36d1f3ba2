#include "sysinfo.h"

#include <fmt/format.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdint>
#include <ctime>
#include <fstream>
#include <thread>

namespace mvkv::bench {
namespace {

std::string trim(std::string s) {
    size_t b = s.find_first_not_of(" \t");
    size_t e = s.find_last_not_of(" \t\r\n");
    return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

std::string compilerName() {
#if defined(__clang__)
    return fmt::format("clang {}.{}.{}", __clang_major__, __clang_minor__, __clang_patchlevel__);
#elif defined(__GNUC__)
    return fmt::format("gcc {}.{}.{}", __GNUC__, __GNUC_MINOR__, __GNUC_PATCHLEVEL__);
#else
    return "unknown";
#endif
}

// Busy and total jiffies of all CPUs from the first line of /proc/stat.
bool readCpuJiffies(uint64_t& busy, uint64_t& total) {
    std::ifstream stat("/proc/stat");
    std::string cpu;
    uint64_t v[8] = {};
    if (!(stat >> cpu) || cpu != "cpu")
        return false;
    for (uint64_t& x : v) {
        if (!(stat >> x))
            return false;
    }
    // user nice system idle iowait irq softirq steal
    total = v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
    busy = total - v[3] - v[4];
    return true;
}

}  // namespace

MachineInfo collectMachineInfo(int busySampleMs) {
    MachineInfo info;
    std::ifstream cpuinfo("/proc/cpuinfo");
    std::string line;
    int processors = 0;
    while (std::getline(cpuinfo, line)) {
        size_t colon = line.find(':');
        if (colon == std::string::npos)
            continue;
        std::string key = trim(line.substr(0, colon));
        std::string value = trim(line.substr(colon + 1));
        if (key == "processor") {
            ++processors;
        } else if (info.cpuModel.empty() && (key == "model name" || key == "Model")) {
            info.cpuModel = value;
        } else if (info.cpuCache.empty() && key == "cache size") {
            info.cpuCache = value;
        }
    }
    if (info.cpuModel.empty())
        info.cpuModel = "unknown";
    info.cpus = processors > 0 ? processors : int(std::thread::hardware_concurrency());

    struct utsname u {};
    if (uname(&u) == 0) {
        info.kernel = fmt::format("{} {} {}", u.sysname, u.release, u.machine);
    } else {
        info.kernel = "unknown";
    }
    info.compiler = compilerName();
#if defined(__OPTIMIZE__)
    info.optimized = true;
#endif
#if !defined(NDEBUG)
    info.assertions = true;
#endif
    std::ifstream loadavg("/proc/loadavg");
    double load = 0;
    if (loadavg >> load)
        info.loadAverage = load;

    uint64_t busy0 = 0, total0 = 0, busy1 = 0, total1 = 0;
    if (busySampleMs > 0 && readCpuJiffies(busy0, total0)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(busySampleMs));
        if (readCpuJiffies(busy1, total1) && total1 > total0) {
            info.busyCpus = double(busy1 - busy0) / double(total1 - total0) * info.cpus;
        }
    }

    std::time_t now = std::time(nullptr);
    std::tm tm{};
    localtime_r(&now, &tm);
    char buf[64];
    if (std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S %Z", &tm) > 0)
        info.date = buf;
    return info;
}

std::vector<std::string> runWarnings(const MachineInfo& info, int maxThreads) {
    std::vector<std::string> out;
    if (!info.optimized) {
        out.push_back(
            "WARNING: built without optimisation; numbers are meaningless "
            "(meson setup <dir> --buildtype=release)");
    }
    if (info.assertions) {
        out.push_back(
            "WARNING: assertions are enabled (NDEBUG not defined); numbers are pessimistic");
    }
    // Anything else running steals CPU time from the timed threads.
    if (info.busyCpus >= 0.25) {
        out.push_back(fmt::format(
            "WARNING: {:.2f} of {} CPUs were busy just before the run (other processes): "
            "expect noise, use --repeat",
            info.busyCpus, info.cpus));
    }
    if (info.cpus > 0 && maxThreads > info.cpus) {
        out.push_back(
            fmt::format("WARNING: {} threads on {} CPUs: threads share CPUs, scaling figures are "
                        "not meaningful",
                        maxThreads, info.cpus));
    }
    return out;
}

nlohmann::ordered_json toJson(const MachineInfo& info) {
    return {{"cpu_model", info.cpuModel},       {"cpus", info.cpus},
            {"cpu_cache", info.cpuCache},       {"kernel", info.kernel},
            {"compiler", info.compiler},        {"optimized", info.optimized},
            {"assertions", info.assertions},    {"date", info.date},
            {"load_average", info.loadAverage}, {"busy_cpus", info.busyCpus}};
}

double currentRssMb() {
    std::FILE* f = std::fopen("/proc/self/statm", "r");
    if (f == nullptr)
        return 0;
    unsigned long pages = 0, resident = 0;
    int n = std::fscanf(f, "%lu %lu", &pages, &resident);
    std::fclose(f);
    return n == 2 ? double(resident) * double(sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0) : 0;
}

}  // namespace mvkv::bench
