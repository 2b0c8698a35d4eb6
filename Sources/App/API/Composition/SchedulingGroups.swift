import Files
import Glibc

/// Whether the kernel's autogroups schedule this process, which matters to the hashing pool.
///
/// The hashing threads run in the idle scheduling class, and that class only yields to threads of
/// the same scheduling group. Under autogroups (the root cgroup with
/// `kernel.sched_autogroup_enabled` = 1, that is a server started from a terminal) each session
/// is a group of its own, and PostgreSQL gives each backend a session of its own (`setsid`). Then
/// the server's group, kept runnable by its hashing threads, competes with the backends that
/// answer its queries as an equal, and during a storm of sign-ins other requests wait for them:
/// `GET /users/me` p99 of 22–107 ms in 9 of 39 eight-second storms, against 3–9 ms in every
/// storm in a cgroup of its own (systemd, a container) or without autogroups.
public enum SchedulingGroups {
    /// Whether autogroups apply, from the `kernel.sched_autogroup_enabled` setting, the text of
    /// `/proc/self/cgroup` (`id:controllers:path` lines) and whether the unified hierarchy's top
    /// has a `cpu.weight` (the real root has none; a container's namespaced root does).
    static func autogroupsApply(autogroupSetting: String?, cgroups: String?, topHasCPUWeight: Bool) -> Bool {
        guard autogroupSetting?.trimmingCharacters(in: " \t\n") == "1", let cgroups else { return false }
        var unifiedPath: Substring?
        for line in cgroups.split(separator: "\n") {
            let fields = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard fields.count == 3 else { continue }
            if fields[1].split(separator: ",").contains("cpu") {
                return fields[2] == "/"  // cgroup v1: the cpu hierarchy decides
            }
            if fields[0] == "0", fields[1].isEmpty { unifiedPath = fields[2] }
        }
        return unifiedPath == "/" && !topHasCPUWeight
    }

    /// `autogroupsApply` for this process.
    public static func autogroupsApplyHere() -> Bool {
        autogroupsApply(
            autogroupSetting: try? FileReader.text("/proc/sys/kernel/sched_autogroup_enabled", limit: 64),
            cgroups: try? FileReader.text("/proc/self/cgroup", limit: 64 << 10),
            topHasCPUWeight: access("/sys/fs/cgroup/cpu.weight", F_OK) == 0)
    }
}
