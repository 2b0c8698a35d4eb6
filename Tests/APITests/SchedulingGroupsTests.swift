@testable import API
import TestSupport
import Testing

@Suite(.testThreads) struct SchedulingGroupsTests {
    static let v1Root = "12:pids:/\n4:cpu,cpuacct:/\n1:name=systemd:/\n0::/\n"
    static let v1Service = "4:cpu,cpuacct:/system.slice/exosphere.service\n0::/system.slice/exosphere.service\n"
    static let v1Docker = "4:cpu,cpuacct:/docker/4c9e4a1\n1:name=systemd:/docker/4c9e4a1\n"

    @Test func aTerminalProcessInTheRootCgroupIsAutogrouped() {
        #expect(SchedulingGroups.autogroupsApply(autogroupSetting: "1\n", cgroups: Self.v1Root, topHasCPUWeight: false))
        #expect(SchedulingGroups.autogroupsApply(autogroupSetting: "1\n", cgroups: "0::/\n", topHasCPUWeight: false))
    }

    @Test func servicesAndContainersAreNot() {
        #expect(!SchedulingGroups.autogroupsApply(autogroupSetting: "1", cgroups: Self.v1Service, topHasCPUWeight: false))
        #expect(!SchedulingGroups.autogroupsApply(autogroupSetting: "1", cgroups: Self.v1Docker, topHasCPUWeight: false))
        #expect(!SchedulingGroups.autogroupsApply(autogroupSetting: "1", cgroups: "0::/system.slice/exosphere.service\n", topHasCPUWeight: false))
        // A container's cgroup namespace shows its own cgroup as "/", but that one has a weight.
        #expect(!SchedulingGroups.autogroupsApply(autogroupSetting: "1", cgroups: "0::/\n", topHasCPUWeight: true))
    }

    @Test func disabledOrUnreadableMeansNo() {
        #expect(!SchedulingGroups.autogroupsApply(autogroupSetting: "0\n", cgroups: Self.v1Root, topHasCPUWeight: false))
        #expect(!SchedulingGroups.autogroupsApply(autogroupSetting: nil, cgroups: Self.v1Root, topHasCPUWeight: false))
        #expect(!SchedulingGroups.autogroupsApply(autogroupSetting: "1", cgroups: nil, topHasCPUWeight: false))
        #expect(!SchedulingGroups.autogroupsApply(autogroupSetting: "1", cgroups: "garbage\n", topHasCPUWeight: false))
    }

    /// The cpu hierarchy of cgroup v1 decides, even where the unified line says root.
    @Test func theCPUHierarchyWinsOverTheUnifiedLine() {
        #expect(!SchedulingGroups.autogroupsApply(autogroupSetting: "1", cgroups: "4:cpu:/bench\n0::/\n", topHasCPUWeight: false))
        #expect(SchedulingGroups.autogroupsApply(autogroupSetting: "1", cgroups: "0::/\n4:cpu:/\n", topHasCPUWeight: false))
    }
}
