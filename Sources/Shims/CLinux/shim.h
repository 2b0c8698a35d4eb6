#ifndef EXOSPHERE_CLINUX_SHIM_H
#define EXOSPHERE_CLINUX_SHIM_H
// Linux APIs that Glibc's Swift module leaves out. Do not define _GNU_SOURCE here:
// it clashes with Glibc's module; GNU-only functions are declared by hand instead.
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <pthread.h>
#include <sys/types.h>
#include <sys/resource.h>
#include <sys/random.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <malloc.h>

#ifndef SOCK_NONBLOCK
#define SOCK_NONBLOCK 04000
#endif
#ifndef SOCK_CLOEXEC
#define SOCK_CLOEXEC 02000000
#endif

extern int accept4(int sockfd, struct sockaddr *addr, socklen_t *addrlen, int flags);
extern int pthread_setname_np(pthread_t thread, const char *name);
extern pid_t gettid(void);

static inline int clinux_sock_nonblock_cloexec(void) { return SOCK_NONBLOCK | SOCK_CLOEXEC; }
/// Sets glibc's mmap threshold (which also stops its dynamic adjustment).
static inline int clinux_set_mmap_threshold(int bytes) { return mallopt(M_MMAP_THRESHOLD, bytes); }
/// Caps glibc's malloc arenas (8 per core by default).
static inline int clinux_set_arena_max(int arenas) { return mallopt(M_ARENA_MAX, arenas); }
/// Gives the free memory of every malloc arena back to the system (glibc's malloc_trim).
static inline int clinux_malloc_trim(void) { return malloc_trim(0); }
/* SCHED_IDLE (Linux): run only when no other thread wants the CPU. */
static inline int clinux_sched_idle(void) { return 5; }
#include <stddef.h>
#include <errno.h>
#include <sys/prctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <linux/sched.h>

#if defined(__x86_64__)
#define CLINUX_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define CLINUX_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

/// Confines the calling process (all its threads, present and future, and anything it could
/// exec) to the system calls an image decoder needs once its libraries are loaded: memory that is
/// never executable, reading and writing file descriptors already open, threads, time, signals and
/// limits of this process only (`pid`, the caller's own), and exiting. Every other call (open,
/// socket, connect, exec, fork, ptrace, a signal or a limit for another process, a mapping with
/// PROT_EXEC…) fails with EPERM; a call from another architecture's ABI kills the process. Returns
/// 0 when installed, -1 with errno when the kernel refuses, -2 on an architecture this filter does
/// not know.
static inline int clinux_confine_to_decoding(pid_t pid) {
#ifdef CLINUX_AUDIT_ARCH
#define CLINUX_ALLOW(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
#define CLINUX_ARG_LOW(n) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[n]))
// A pid argument is a pid_t: the kernel reads the low 32 bits only.
#define CLINUX_ALLOW_OWN_PID_ONLY(nr) \
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 5), CLINUX_ARG_LOW(0), \
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0), BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)pid, 0, 1), \
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM)
// Every library is loaded before the filter: no mapping needs to be executable any more, so none
// may become one (no JIT, no code written and then run).
#define CLINUX_ALLOW_NOT_EXECUTABLE(nr) \
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 5), CLINUX_ARG_LOW(2), \
        BPF_STMT(BPF_ALU | BPF_AND | BPF_K, PROT_EXEC), BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PROT_EXEC, 1, 0), \
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM)
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, CLINUX_AUDIT_ARCH, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        // clone only for a thread of this process; clone3 hides its flags, so glibc is told it
        // does not exist and falls back to clone.
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone3, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 0, 4),
        CLINUX_ARG_LOW(0),
        BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_THREAD, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        // abort() and raise() signal a thread of this process; setrlimit is prlimit64(0, …).
        CLINUX_ALLOW_OWN_PID_ONLY(__NR_tgkill),
        CLINUX_ALLOW_OWN_PID_ONLY(__NR_prlimit64),
        CLINUX_ALLOW_NOT_EXECUTABLE(__NR_mmap),
        CLINUX_ALLOW_NOT_EXECUTABLE(__NR_mprotect),
        CLINUX_ALLOW(__NR_read), CLINUX_ALLOW(__NR_write), CLINUX_ALLOW(__NR_readv), CLINUX_ALLOW(__NR_writev),
        CLINUX_ALLOW(__NR_close), CLINUX_ALLOW(__NR_fstat), CLINUX_ALLOW(__NR_lseek),
        CLINUX_ALLOW(__NR_munmap), CLINUX_ALLOW(__NR_mremap),
        CLINUX_ALLOW(__NR_brk), CLINUX_ALLOW(__NR_madvise), CLINUX_ALLOW(__NR_futex),
        CLINUX_ALLOW(__NR_set_robust_list), CLINUX_ALLOW(__NR_rseq), CLINUX_ALLOW(__NR_membarrier),
        CLINUX_ALLOW(__NR_exit), CLINUX_ALLOW(__NR_exit_group), CLINUX_ALLOW(__NR_rt_sigreturn),
        CLINUX_ALLOW(__NR_rt_sigprocmask), CLINUX_ALLOW(__NR_rt_sigaction), CLINUX_ALLOW(__NR_sigaltstack),
        CLINUX_ALLOW(__NR_clock_gettime), CLINUX_ALLOW(__NR_clock_nanosleep), CLINUX_ALLOW(__NR_nanosleep),
        CLINUX_ALLOW(__NR_gettimeofday), CLINUX_ALLOW(__NR_getrusage), CLINUX_ALLOW(__NR_setitimer),
        CLINUX_ALLOW(__NR_setrlimit), CLINUX_ALLOW(__NR_getrlimit), CLINUX_ALLOW(__NR_sched_yield),
        CLINUX_ALLOW(__NR_sched_getaffinity), CLINUX_ALLOW(__NR_gettid), CLINUX_ALLOW(__NR_getpid),
        CLINUX_ALLOW(__NR_getppid), CLINUX_ALLOW(__NR_getrandom), CLINUX_ALLOW(__NR_restart_syscall),
#ifdef __NR_newfstatat
        CLINUX_ALLOW(__NR_newfstatat),
#endif
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
    };
#undef CLINUX_ALLOW
#undef CLINUX_ARG_LOW
#undef CLINUX_ALLOW_OWN_PID_ONLY
#undef CLINUX_ALLOW_NOT_EXECUTABLE
    struct sock_fprog program = {(unsigned short)(sizeof(filter) / sizeof(filter[0])), filter};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
    return (int)syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, &program) == 0 ? 0 : -1;
#else
    (void)pid;
    return -2;
#endif
}

/// tgkill(2) and a read of prlimit64(2), for the tests' simulation of a taken-over helper: what
/// the seccomp filter answers for another process and for this one. 0, or -1 with errno.
static inline int clinux_tgkill(pid_t tgid, pid_t tid, int sig) { return (int)syscall(__NR_tgkill, tgid, tid, sig); }
static inline int clinux_read_prlimit(pid_t pid) {
    struct rlimit limit;
    return (int)syscall(__NR_prlimit64, pid, RLIMIT_NOFILE, (void *)0, &limit);
}

/// The system calls that hide the file system from a thumbnail helper (`Sandbox`), made with
/// syscall(2): glibc declares unshare only under _GNU_SOURCE, and <sys/mount.h> clashes with the
/// kernel's headers. 0, or -1 with errno.
static inline int clinux_unshare(int flags) { return (int)syscall(__NR_unshare, flags); }
static inline int clinux_mount(const char *source, const char *target, const char *type, unsigned long flags, const char *data) {
    return (int)syscall(__NR_mount, source, target, type, flags, data);
}
static inline int clinux_umount_detach(const char *target) { return (int)syscall(__NR_umount2, target, 2 /* MNT_DETACH */); }
static inline int clinux_pivot_root(const char *new_root, const char *put_old) { return (int)syscall(__NR_pivot_root, new_root, put_old); }
/// Clears every capability of the calling thread (effective, permitted, inheritable), as
/// capset(2) with version 3 and zeroed sets.
static inline int clinux_drop_capabilities(void) {
    struct { unsigned int version; int pid; } header = {0x20080522 /* _LINUX_CAPABILITY_VERSION_3 */, 0};
    struct { unsigned int effective, permitted, inheritable; } data[2] = {{0, 0, 0}, {0, 0, 0}};
    return (int)syscall(__NR_capset, &header, data);
}
static inline unsigned long clinux_ms_rdonly_nosuid_nodev_noexec(void) { return 1 | 2 | 4 | 8; /* MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC */ }
static inline unsigned long clinux_ms_rec_private(void) { return 16384 | (1 << 18); /* MS_REC | MS_PRIVATE */ }

/// close_range(first, ~0U, 0): closes every descriptor from `first` up.
static inline int clinux_close_from(unsigned int first) { return (int)syscall(__NR_close_range, first, ~0U, 0); }
#endif
