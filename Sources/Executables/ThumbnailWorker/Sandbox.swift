import CLinux
import Glibc

/// Hides the server's files from a thumbnail helper: after its libraries are loaded and before it
/// reads an image, the helper's root becomes an empty, read-only file system of its own, and a
/// helper started by root gives up root. A decoder taken over by a crafted file can then neither
/// open nor stat (`newfstatat`) a path of the server's: the data directory, `/etc/passwd`,
/// `/proc/<server>/environ` do not exist where it looks.
///
/// In order, stopping at the first way that works:
/// 1. a mount namespace of its own (with a user namespace when not root: `unshare(CLONE_NEWUSER |
///    CLONE_NEWNS)`, the helper's own uid and gid mapped, `setgroups` denied), every mount made
///    private, an empty read-only `tmpfs` mounted on `/tmp`, `pivot_root` into it and the old root
///    detached;
/// 2. root without `CAP_SYS_ADMIN` (a container's default seccomp profile refuses `unshare`):
///    `chroot` into a fresh directory (mode 0700, root's) removed at once;
/// 3. then, when root: `setgroups([])`, `setgid(65534)`, `setuid(65534)` (nobody), checked by a
///    `setuid(0)` that must fail; and every capability left (those of the user namespace) is
///    dropped.
///
/// A process with threads could not be confined this way (a namespace and a root are per
/// thread): the helper is single-threaded here, and the `unshare` checks it (`CLONE_VM` fails
/// with `EINVAL` in a process with more than one thread).
public enum Sandbox {
    /// How much of a helper's isolation is required.
    public enum Mode: String, Sendable {
        /// Exit (status 73) when the file system cannot be hidden.
        case required
        /// Hide what can be hidden; say what could not.
        case bestEffort = "best-effort"
        /// No isolation (benchmarks and tests of the confinement's other layers).
        case off
    }

    /// What `enter` achieved: `hidden` when no path of the server's can be reached.
    public struct Outcome: Sendable, CustomStringConvertible {
        public var hidden: Bool
        public var description: String
    }

    /// Nobody: the uid and gid a helper started by root runs as.
    static let nobody: UInt32 = 65_534

    /// Confines the calling process as described above; the first failure's reason when the
    /// file system stays visible.
    public static func enter() -> Outcome {
        let root = geteuid() == 0
        var steps: [String] = []
        var hidden = false
        var failures: [String] = []
        switch emptyRoot(asRoot: root) {
        case .success(let how):
            hidden = true
            steps.append(how)
        case .failure(let reason):
            failures.append(reason)
            if root {
                switch chrootIntoRemovedDirectory() {
                case .success(let how):
                    hidden = true
                    steps.append(how)
                case .failure(let reason): failures.append(reason)
                }
            }
        }
        if root {
            guard setgroups(0, nil) == 0, setgid(nobody) == 0, setuid(nobody) == 0, setuid(0) != 0 else {
                return Outcome(hidden: false, description: "could not become uid \(nobody): \(String(cString: strerror(errno)))")
            }
            steps.append("uid \(nobody)")
        }
        _ = clinux_drop_capabilities()
        if !hidden { return Outcome(hidden: false, description: (failures + steps).joined(separator: "; ")) }
        return Outcome(hidden: true, description: steps.joined(separator: ", "))
    }

    enum Step {
        case success(String)
        case failure(String)
    }

    /// Step 1: a mount namespace whose root is an empty read-only tmpfs.
    static func emptyRoot(asRoot: Bool) -> Step {
        func failed(_ what: String) -> Step { .failure("\(what): \(String(cString: strerror(errno)))") }
        let uid = geteuid()
        let gid = getegid()
        // Root needs no user namespace to make a mount namespace, and can then become nobody,
        // which a user namespace holding only root's own id could not.
        let namespaces = asRoot ? CLONE_NEWNS : CLONE_NEWUSER | CLONE_NEWNS
        guard clinux_unshare(Int32(namespaces | CLONE_VM)) == 0 else {
            return failed(asRoot ? "unshare(CLONE_NEWNS)" : "unshare(CLONE_NEWUSER | CLONE_NEWNS)")
        }
        if !asRoot {
            guard write("deny", to: "/proc/self/setgroups") else { return failed("/proc/self/setgroups") }
            guard write("\(uid) \(uid) 1", to: "/proc/self/uid_map") else { return failed("/proc/self/uid_map") }
            guard write("\(gid) \(gid) 1", to: "/proc/self/gid_map") else { return failed("/proc/self/gid_map") }
        }
        // Nothing mounted here may reach the server's namespace, nor the other way round.
        guard clinux_mount(nil, "/", nil, clinux_ms_rec_private(), nil) == 0 else { return failed("making / private") }
        guard clinux_mount("exosphere-helper", "/tmp", "tmpfs", clinux_ms_rdonly_nosuid_nodev_noexec(), "size=4k,nr_inodes=1,mode=0555") == 0
        else { return failed("mounting an empty tmpfs") }
        guard chdir("/tmp") == 0 else { return failed("chdir to the empty tmpfs") }
        // pivot_root(".", ".") stacks the old root on the new one; detaching it leaves the tmpfs
        // alone, with no path to anything else (pivot_root(2), "NOTES").
        guard clinux_pivot_root(".", ".") == 0 else { return failed("pivot_root") }
        guard clinux_umount_detach(".") == 0 else { return failed("detaching the old root") }
        guard chdir("/") == 0 else { return failed("chdir /") }
        return .success(asRoot ? "mount namespace with an empty root" : "user and mount namespaces with an empty root")
    }

    /// Step 2, for root in a container: chroot into a directory that no longer exists (nothing
    /// can be made in a removed directory), readable by root alone (nobody cannot even search it).
    static func chrootIntoRemovedDirectory() -> Step {
        func failed(_ what: String) -> Step { .failure("\(what): \(String(cString: strerror(errno)))") }
        var template = Array("/tmp/exosphere-helper.XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { return failed("mkdtemp") }
        let path = String(cString: made)
        let entered = chdir(path) == 0
        guard rmdir(path) == 0, entered else { return failed("chdir and rmdir \(path)") }
        guard chroot(".") == 0, chdir("/") == 0 else { return failed("chroot") }
        return .success("chroot into a removed directory")
    }

    private static func write(_ text: String, to path: String) -> Bool {
        let fd = open(path, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        let bytes = Array(text.utf8)
        return Glibc.write(fd, bytes, bytes.count) == bytes.count
    }
}
