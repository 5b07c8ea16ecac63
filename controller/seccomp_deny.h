/*
 * seccomp_deny.h: the one list of what sandgate's seccomp profile refuses,
 * shared by the container spec (controller/sandbox.c, Docker's JSON
 * profile, applied by runc) and by `sandgate-probe run`, which installs
 * the same filter itself for commands that gVisor starts without one.
 *
 * Refused with EPERM: what Docker's default profile refuses (kernel
 * modules, mounts, namespaces, keyrings, bpf, clocks, reboot...) and every
 * way for one process of the sandbox to read or steer another's memory
 * (ptrace, process_vm_readv/writev, pidfd_getfd, kcmp), userfaultfd and
 * io_uring; clone(2) with a namespace flag; clone3 with ENOSYS, so that
 * libc falls back to clone, whose flags a filter can see. Everything
 * else is allowed.
 */
#ifndef SG_SECCOMP_DENY_H
#define SG_SECCOMP_DENY_H

#define SG_SECCOMP_DENY_NAMES \
	"acct", "add_key", "bpf", "clock_adjtime", "clock_settime", \
	"create_module", "delete_module", "finit_module", \
	"get_kernel_syms", "init_module", "ioperm", "iopl", "kcmp", \
	"kexec_file_load", "kexec_load", "keyctl", "lookup_dcookie", \
	"mount", "move_mount", "open_tree", "fsopen", "fsconfig", \
	"fsmount", "fspick", "name_to_handle_at", "nfsservctl", \
	"open_by_handle_at", "perf_event_open", "pivot_root", \
	"process_vm_readv", "process_vm_writev", "process_madvise", \
	"pidfd_getfd", "ptrace", "query_module", "quotactl", "reboot", \
	"request_key", "setns", "settimeofday", "stime", "swapon", \
	"swapoff", "sysfs", "_sysctl", "syslog", "umount", "umount2", \
	"unshare", "uselib", "userfaultfd", "ustat", "vm86", \
	"vm86old", "fanotify_init", "io_uring_setup", \
	"io_uring_enter", "io_uring_register"

/* clone(2) flags that make namespaces (CLONE_NEWNS ... CLONE_NEWNET). */
#define SG_SECCOMP_CLONE_NS \
	0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, \
	0x20000000, 0x40000000

#endif
