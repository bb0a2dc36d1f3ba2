// Machine and build facts printed above the results (and stored in --json),
// so a number can always be traced to the machine and build that made it.
#pragma once

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace mvkv::bench {

struct MachineInfo {
    std::string cpuModel;  // /proc/cpuinfo "model name" (or "unknown")
    int cpus = 0;          // logical CPUs ("processor" entries / hardware_concurrency)
    std::string cpuCache;  // /proc/cpuinfo "cache size", may be empty
    std::string kernel;    // uname: sysname release machine
    std::string compiler;
    bool optimized = false;   // __OPTIMIZE__ when this file was compiled
    bool assertions = false;  // !NDEBUG
    std::string date;         // local time of the run
    double loadAverage = -1;  // 1-minute load average when the run started (-1: unknown)
    double busyCpus = -1;     // CPUs busy (all processes) over a short sample before the run
};

/// Also samples /proc/stat for `busySampleMs` to see how busy the machine is.
MachineInfo collectMachineInfo(int busySampleMs = 200);

/// Warnings about the build or the run (unoptimised build, assertions on,
/// more threads than CPUs). Empty when there is nothing to warn about.
std::vector<std::string> runWarnings(const MachineInfo& info, int maxThreads);

nlohmann::ordered_json toJson(const MachineInfo& info);

/// This process's resident memory now (/proc/self/statm), in MiB; 0 when
/// unknown.
double currentRssMb();

}  // namespace mvkv::bench
