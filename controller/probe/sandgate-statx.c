/*
 * sandgate-statx.c: statx(2) for programs in a gVisor sandbox.
 *
 * The gVisor packaged in Debian 12 (runsc 20221219) refuses statx's
 * AT_NO_AUTOMOUNT flag with EINVAL, and GNU coreutils 9 passes it to every
 * statx: under it `ls -l`, `ls DIR`, `stat` and `du` print "Invalid
 * argument" for every file, in every sandbox. sandgate binds this library
 * read-only at /.sandgate/statx.so and names it in /etc/ld.so.preload
 * (also bound read-only) in gVisor sandboxes only (controller/probe.c,
 * probe_statx_paths): a statx that fails with EINVAL while it carried
 * AT_NO_AUTOMOUNT is asked again without it. A sandbox has no automount
 * points, so the answer is the one the flag asks for. Any other call, and
 * any other outcome, is the kernel's own.
 *
 * It links against nothing but the libc that loads it (syscall and errno,
 * both as old as glibc 2.2.5, so any glibc image can load it) and is never
 * built with sanitizers. musl ignores /etc/ld.so.preload; static programs
 * never see it.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef AT_NO_AUTOMOUNT
#define AT_NO_AUTOMOUNT	0x800
#endif

int
statx(int dirfd, const char *path, int flags, unsigned int mask,
    struct statx *buf)
{
	long	r;
	int	saved = errno;

	r = syscall(SYS_statx, dirfd, path, flags, mask, buf);
	if (r == -1 && errno == EINVAL && (flags & AT_NO_AUTOMOUNT)) {
		r = syscall(SYS_statx, dirfd, path, flags & ~AT_NO_AUTOMOUNT,
		    mask, buf);
		if (r == 0)	/* errno as the call that succeeds leaves it */
			errno = saved;
	}
	return (int)r;
}
