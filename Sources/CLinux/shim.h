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
/* SCHED_IDLE (Linux): run only when no other thread wants the CPU. */
static inline int clinux_sched_idle(void) { return 5; }
#endif
