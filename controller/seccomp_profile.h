/*
 * seccomp_profile.h: the one list of what sandgate's seccomp profile
 * allows, shared by the container spec (controller/sandbox.c, Docker's JSON
 * profile, applied by runc) and by `sandgate-probe run`, which installs the
 * same filter itself for commands that gVisor starts without one.
 *
 * An allowlist: every syscall it does not name is refused with EPERM,
 * whatever kernel comes later (runc answers syscalls newer than its
 * libseccomp knows with ENOSYS, so libc falls back). The list is Docker's
 * default profile (moby profiles/seccomp/default.json: the names it allows
 * without a capability, for x86-64 and arm64) minus SG_SECCOMP_REFUSED,
 * the ways for one process of the sandbox to read or steer another's
 * memory (ptrace, process_vm_readv/writev), io_uring, and handles that
 * name files by inode. Arguments are checked as Docker does: clone(2)
 * only without a namespace flag, clone3 answers ENOSYS (so libc falls back
 * to clone, whose flags a filter can see), socket(2) never AF_VSOCK, and
 * personality(2) only the personas below (READ_IMPLIES_EXEC is refused).
 * Only the host's native ABI is allowed: 32-bit (int 0x80) and x32
 * syscalls are refused.
 */
#ifndef SG_SECCOMP_PROFILE_H
#define SG_SECCOMP_PROFILE_H

#define SG_SECCOMP_ALLOW_NAMES \
	"accept", "accept4", "access", "adjtimex", "alarm", "bind", "brk", \
	"capget", "capset", "chdir", "chmod", "chown", "chown32", \
	"clock_adjtime", "clock_adjtime64", "clock_getres", \
	"clock_getres_time64", "clock_gettime", "clock_gettime64", \
	"clock_nanosleep", "clock_nanosleep_time64", "close", "close_range", \
	"connect", "copy_file_range", "creat", "dup", "dup2", "dup3", \
	"epoll_create", "epoll_create1", "epoll_ctl", "epoll_ctl_old", \
	"epoll_pwait", "epoll_pwait2", "epoll_wait", "epoll_wait_old", \
	"eventfd", "eventfd2", "execve", "execveat", "exit", "exit_group", \
	"faccessat", "faccessat2", "fadvise64", "fadvise64_64", "fallocate", \
	"fanotify_mark", "fchdir", "fchmod", "fchmodat", "fchown", \
	"fchown32", "fchownat", "fcntl", "fcntl64", "fdatasync", \
	"fgetxattr", "flistxattr", "flock", "fork", "fremovexattr", \
	"fsetxattr", "fstat", "fstat64", "fstatat64", "fstatfs", \
	"fstatfs64", "fsync", "ftruncate", "ftruncate64", "futex", \
	"futex_time64", "futex_waitv", "futimesat", "getcpu", "getcwd", \
	"getdents", "getdents64", "getegid", "getegid32", "geteuid", \
	"geteuid32", "getgid", "getgid32", "getgroups", "getgroups32", \
	"getitimer", "getpeername", "getpgid", "getpgrp", "getpid", \
	"getppid", "getpriority", "getrandom", "getresgid", "getresgid32", \
	"getresuid", "getresuid32", "getrlimit", "get_robust_list", \
	"getrusage", "getsid", "getsockname", "getsockopt", \
	"get_thread_area", "gettid", "gettimeofday", "getuid", "getuid32", \
	"getxattr", "inotify_add_watch", "inotify_init", "inotify_init1", \
	"inotify_rm_watch", "io_cancel", "ioctl", "io_destroy", \
	"io_getevents", "io_pgetevents", "io_pgetevents_time64", \
	"ioprio_get", "ioprio_set", "io_setup", "io_submit", "ipc", "kill", \
	"landlock_add_rule", "landlock_create_ruleset", \
	"landlock_restrict_self", "lchown", "lchown32", "lgetxattr", "link", \
	"linkat", "listen", "listxattr", "llistxattr", "_llseek", \
	"lremovexattr", "lseek", "lsetxattr", "lstat", "lstat64", "madvise", \
	"membarrier", "memfd_create", "memfd_secret", "mincore", "mkdir", \
	"mkdirat", "mknod", "mknodat", "mlock", "mlock2", "mlockall", \
	"mmap", "mmap2", "mprotect", "mq_getsetattr", "mq_notify", \
	"mq_open", "mq_timedreceive", "mq_timedreceive_time64", \
	"mq_timedsend", "mq_timedsend_time64", "mq_unlink", "mremap", \
	"msgctl", "msgget", "msgrcv", "msgsnd", "msync", "munlock", \
	"munlockall", "munmap", "nanosleep", "newfstatat", "_newselect", \
	"open", "openat", "openat2", "pause", "pidfd_open", \
	"pidfd_send_signal", "pipe", "pipe2", "pkey_alloc", "pkey_free", \
	"pkey_mprotect", "poll", "ppoll", "ppoll_time64", "prctl", \
	"pread64", "preadv", "preadv2", "prlimit64", "process_mrelease", \
	"pselect6", "pselect6_time64", "pwrite64", "pwritev", "pwritev2", \
	"read", "readahead", "readlink", "readlinkat", "readv", "recv", \
	"recvfrom", "recvmmsg", "recvmmsg_time64", "recvmsg", \
	"remap_file_pages", "removexattr", "rename", "renameat", \
	"renameat2", "restart_syscall", "rmdir", "rseq", "rt_sigaction", \
	"rt_sigpending", "rt_sigprocmask", "rt_sigqueueinfo", \
	"rt_sigreturn", "rt_sigsuspend", "rt_sigtimedwait", \
	"rt_sigtimedwait_time64", "rt_tgsigqueueinfo", "sched_getaffinity", \
	"sched_getattr", "sched_getparam", "sched_get_priority_max", \
	"sched_get_priority_min", "sched_getscheduler", \
	"sched_rr_get_interval", "sched_rr_get_interval_time64", \
	"sched_setaffinity", "sched_setattr", "sched_setparam", \
	"sched_setscheduler", "sched_yield", "seccomp", "select", "semctl", \
	"semget", "semop", "semtimedop", "semtimedop_time64", "send", \
	"sendfile", "sendfile64", "sendmmsg", "sendmsg", "sendto", \
	"setfsgid", "setfsgid32", "setfsuid", "setfsuid32", "setgid", \
	"setgid32", "setgroups", "setgroups32", "setitimer", "setpgid", \
	"setpriority", "setregid", "setregid32", "setresgid", \
	"setresgid32", "setresuid", "setresuid32", "setreuid", \
	"setreuid32", "setrlimit", "set_robust_list", "setsid", \
	"setsockopt", "set_thread_area", "set_tid_address", "setuid", \
	"setuid32", "setxattr", "shmat", "shmctl", "shmdt", "shmget", \
	"shutdown", "sigaltstack", "signalfd", "signalfd4", "sigprocmask", \
	"sigreturn", "socketcall", "socketpair", "splice", "stat", \
	"stat64", "statfs", "statfs64", "statx", "symlink", "symlinkat", \
	"sync", "sync_file_range", "syncfs", "sysinfo", "tee", "tgkill", \
	"time", "timer_create", "timer_delete", "timer_getoverrun", \
	"timer_gettime", "timer_gettime64", "timer_settime", \
	"timer_settime64", "timerfd_create", "timerfd_gettime", \
	"timerfd_gettime64", "timerfd_settime", "timerfd_settime64", \
	"times", "tkill", "truncate", "truncate64", "ugetrlimit", "umask", \
	"uname", "unlink", "unlinkat", "utime", "utimensat", \
	"utimensat_time64", "utimes", "vfork", "vmsplice", "wait4", \
	"waitid", "waitpid", "write", "writev", \
	"arch_prctl", "modify_ldt", "arm_fadvise64_64", \
	"arm_sync_file_range", "sync_file_range2", "breakpoint", \
	"cacheflush", "set_tls"

/*
 * What Docker's default profile allows and sandgate does not: never in
 * SG_SECCOMP_ALLOW_NAMES (tests/unit/test_seccomp.c checks).
 */
#define SG_SECCOMP_REFUSED_NAMES \
	"ptrace", "process_vm_readv", "process_vm_writev", \
	"io_uring_setup", "io_uring_enter", "io_uring_register", \
	"name_to_handle_at"

/*
 * personality(2) values allowed: PER_LINUX, PER_LINUX32, UNAME26,
 * UNAME26 | PER_LINUX32 and 0xffffffff (the query). Anything else, such
 * as READ_IMPLIES_EXEC (0x0400000: every readable mapping executable),
 * is refused.
 */
#define SG_SECCOMP_PERSONAS	0x0, 0x8, 0x20000, 0x20008, 0xffffffff
#define SG_SECCOMP_READ_IMPLIES_EXEC	0x0400000

/*
 * socket(2) of this family is refused (AF_VSOCK). The kernel takes the
 * family as an int, but seccomp compares the whole 64-bit register: a
 * rule "family != 40" lets (1 << 32) | 40 through, and the kernel makes
 * an AF_VSOCK socket of it. So socket is allowed only for a family below
 * 40 or equal to one of SG_SECCOMP_SOCKET_ABOVE (the families up to
 * AF_MAX, 46 in Linux 6.x: AF_KCM, AF_QIPCRTR, AF_SMC, AF_XDP, AF_MCTP),
 * each compared on all 64 bits, so any high bit set means EPERM.
 */
#define SG_SECCOMP_SOCKET_REFUSED	40
#define SG_SECCOMP_SOCKET_ABOVE		41, 42, 43, 44, 45

/*
 * clone(2) flags that make namespaces: clone only when none is set. The
 * kernel reads the low 32 bits of the flags, and the mask lies in them.
 * personality(2) takes an unsigned int too; its values are compared
 * exactly, so a high bit set makes the call refused.
 */
#define SG_SECCOMP_CLONE_NS_MASK	0x7e020000

#endif
