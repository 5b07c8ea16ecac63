/*
 * disk.c: sparse ext4 images on autoclear loop devices; see disk.h.
 */
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <linux/loop.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "disk.h"
#include "sysrun.h"
#include "util.h"

#define DISK_LOOP_MAJOR		7
#define DISK_LOOP_TRIES		8	/* races for a free loop device */

static int	 disk_run_mkfs(const char *, uid_t, gid_t, char **);
static int	 disk_loop_open(int, char *, size_t, char **);
static int	 disk_loop_bind(int, int, const char *);
static int	 disk_loop_attach(int, const char *, char *, size_t, char **);
static void	 disk_unescape(char *);
static int	 disk_mountinfo_split(char *, char **, char **, char **);
static int	 disk_loop_backing(const char *, char *, size_t);
static int	 disk_under(const char *, const char *);
static int	 disk_add(struct disk_mount_info **, size_t *, const char *,
		    const char *, const char *);

/* In the child: stdout to /dev/null, stderr to the pipe, exec mkfs. */
/* Run mkfs.ext4 on img; its stderr becomes the cause on failure. */
static int
disk_run_mkfs(const char *img, uid_t uid, gid_t gid, char **cause)
{
	static const char *const paths[] = {
		"/usr/sbin/mkfs.ext4", "/sbin/mkfs.ext4", "mkfs.ext4", NULL,
	};
	struct sysrun	 r;
	char		 owner[96], *why = NULL;
	int		 rc;

	snprintf(owner, sizeof(owner), "root_owner=%lu:%lu,nodiscard",
	    (unsigned long)uid, (unsigned long)gid);
	memset(&r, 0, sizeof(r));
	r.paths = paths;
	r.argv = (char *const []){ "mkfs.ext4", "-q", "-F", "-m", "0", "-O",
	    "^has_journal", "-E", owner, (char *)img, NULL };
	if ((rc = sysrun(&r, &why)) == -1) {
		util_cause(cause, "mkfs.ext4 on '%s' failed: %s", img, why);
		free(why);
	}
	return rc;
}

int
disk_image_create(const char *img, unsigned long long bytes, uid_t uid,
    gid_t gid, char **cause)
{
	int	fd;

	bytes &= ~4095ull;
	if (bytes < DISK_MIN_BYTES)
		return util_cause(cause, "disk size %llu too small (minimum "
		    "%llu bytes)", bytes, DISK_MIN_BYTES);
	if (bytes > (unsigned long long)LLONG_MAX)
		return util_cause(cause, "disk size %llu too large", bytes);
	fd = open(img, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd == -1)
		return util_cause(cause, "cannot create '%s': %s", img,
		    strerror(errno));
	if (ftruncate(fd, (off_t)bytes) == -1) {
		util_cause(cause, "cannot size '%s': %s", img,
		    strerror(errno));
		close(fd);
		goto fail;
	}
	close(fd);
	if (disk_run_mkfs(img, uid, gid, cause) == -1)
		goto fail;
	return 0;
fail:
	unlink(img);
	return -1;
}

/*
 * Open a free loop device, creating its node when the /dev we run in
 * lacks it (containers often have only a few /dev/loopN).
 */
static int
disk_loop_open(int ctl, char *dev, size_t size, char **cause)
{
	int	n, fd;

	n = ioctl(ctl, LOOP_CTL_GET_FREE);
	if (n < 0)
		return util_cause(cause, "no free loop device: %s",
		    strerror(errno));
	snprintf(dev, size, "/dev/loop%d", n);
	if (mknod(dev, S_IFBLK | 0660, makedev(DISK_LOOP_MAJOR, n)) == -1 &&
	    errno != EEXIST)
		return util_cause(cause, "cannot create '%s': %s", dev,
		    strerror(errno));
	fd = open(dev, O_RDWR | O_CLOEXEC);
	if (fd == -1)
		return util_cause(cause, "cannot open '%s': %s", dev,
		    strerror(errno));
	return fd;
}

/* Bind the image to the device, autoclear; -1 with errno on failure. */
static int
disk_loop_bind(int lfd, int ifd, const char *img)
{
	struct loop_config	cfg;
	struct loop_info64	info;

	memset(&cfg, 0, sizeof(cfg));
	cfg.fd = (__u32)ifd;
	cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR;
	util_strlcpy((char *)cfg.info.lo_file_name, img, LO_NAME_SIZE);
	if (ioctl(lfd, LOOP_CONFIGURE, &cfg) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOTTY)
		return -1;
	/* Kernels before 5.8: two steps. */
	if (ioctl(lfd, LOOP_SET_FD, ifd) == -1)
		return -1;
	memset(&info, 0, sizeof(info));
	info.lo_flags = LO_FLAGS_AUTOCLEAR;
	util_strlcpy((char *)info.lo_file_name, img, LO_NAME_SIZE);
	if (ioctl(lfd, LOOP_SET_STATUS64, &info) == -1) {
		ioctl(lfd, LOOP_CLR_FD, 0);
		return -1;
	}
	return 0;
}

/* Attach img to a loop device; returns the device's open fd. */
static int
disk_loop_attach(int ifd, const char *img, char *dev, size_t size,
    char **cause)
{
	int	ctl, lfd = -1, i;

	ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	if (ctl == -1)
		return util_cause(cause, "cannot open /dev/loop-control: %s",
		    strerror(errno));
	for (i = 0; i < DISK_LOOP_TRIES; i++) {
		lfd = disk_loop_open(ctl, dev, size, cause);
		if (lfd == -1)
			break;
		if (disk_loop_bind(lfd, ifd, img) == 0)
			break;
		close(lfd);
		lfd = -1;
		/* EBUSY: another process took the device first; retry. */
		if (errno != EBUSY) {
			util_cause(cause, "cannot attach '%s' to '%s': %s",
			    img, dev, strerror(errno));
			break;
		}
	}
	if (lfd == -1 && i == DISK_LOOP_TRIES)
		util_cause(cause, "cannot attach '%s': loop devices busy", img);
	close(ctl);
	return lfd;
}

int
disk_mount(const char *img, const char *dir, char **cause)
{
	char	dev[64];
	int	ifd, lfd, rc = -1;

	ifd = open(img, O_RDWR | O_CLOEXEC);
	if (ifd == -1)
		return util_cause(cause, "cannot open '%s': %s", img,
		    strerror(errno));
	lfd = disk_loop_attach(ifd, img, dev, sizeof(dev), cause);
	if (lfd == -1)
		goto out;
	if (mount(dev, dir, "ext4", MS_NOSUID | MS_NODEV, NULL) == -1) {
		util_cause(cause, "cannot mount '%s' on '%s': %s", img, dir,
		    strerror(errno));
		goto out;
	}
	rc = 0;
out:
	/* Autoclear: the device goes away with its last user, the mount. */
	if (lfd != -1)
		close(lfd);
	close(ifd);
	return rc;
}

int
disk_umount(const char *dir, char **cause)
{
	int	m;

	m = disk_is_mounted(dir);
	if (m == 0)
		return 0;
	if (umount2(dir, 0) == 0)
		return 0;
	if (errno == EINVAL && m == -1)
		return 0;
	if (errno == EBUSY && umount2(dir, MNT_DETACH) == 0)
		return 0;
	return util_cause(cause, "cannot unmount '%s': %s", dir,
	    strerror(errno));
}

/* Undo mountinfo's octal escapes (\040 space, \011, \012, \134) in place. */
static void
disk_unescape(char *s)
{
	char	*w = s;

	while (*s != '\0') {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' &&
		    s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*w++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 +
			    (s[3] - '0'));
			s += 4;
		} else
			*w++ = *s++;
	}
	*w = '\0';
}

/*
 * Split one mountinfo line:
 *   id parent maj:min root MOUNTPOINT opts [optional...] - FSTYPE SOURCE super
 * into its mount point, fs type and source (unescaped, in place).
 */
static int
disk_mountinfo_split(char *line, char **mnt, char **fstype, char **src)
{
	char	*p = line, *f;
	int	 i;

	*mnt = *fstype = *src = NULL;
	for (i = 0; (f = strsep(&p, " \n")) != NULL; i++) {
		if (i == 4)
			*mnt = f;
		else if (i >= 6 && strcmp(f, "-") == 0)
			break;
	}
	if (f == NULL || *mnt == NULL)
		return -1;
	*fstype = strsep(&p, " \n");
	*src = strsep(&p, " \n");
	if (*fstype == NULL || *src == NULL)
		return -1;
	disk_unescape(*mnt);
	disk_unescape(*src);
	return 0;
}

int
disk_is_mounted(const char *dir)
{
	char	 real[PATH_MAX], *line = NULL, *mnt, *fs, *src;
	size_t	 cap = 0;
	FILE	*fp;
	int	 found = 0;

	if (realpath(dir, real) == NULL)
		return errno == ENOENT ? 0 : -1;
	fp = fopen("/proc/self/mountinfo", "re");
	if (fp == NULL)
		return -1;
	while (getline(&line, &cap, fp) != -1) {
		if (disk_mountinfo_split(line, &mnt, &fs, &src) == 0 &&
		    strcmp(mnt, real) == 0) {
			found = 1;
			break;
		}
	}
	free(line);
	fclose(fp);
	return found;
}

/* The backing file of /dev/loopN from sysfs; -1 if none. */
static int
disk_loop_backing(const char *dev, char *buf, size_t size)
{
	char	 path[128];
	FILE	*fp;

	if (strncmp(dev, "/dev/loop", 9) != 0 ||
	    strspn(dev + 9, "0123456789") != strlen(dev + 9) || dev[9] == '\0')
		return -1;
	snprintf(path, sizeof(path), "/sys/block/%s/loop/backing_file",
	    dev + 5);
	fp = fopen(path, "re");
	if (fp == NULL)
		return -1;
	if (fgets(buf, (int)size, fp) == NULL) {
		fclose(fp);
		return -1;
	}
	fclose(fp);
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* 1 if path lies strictly under root (both absolute, root canonical). */
static int
disk_under(const char *path, const char *root)
{
	size_t	len = strlen(root);

	while (len > 1 && root[len - 1] == '/')
		len--;
	return strncmp(path, root, len) == 0 && path[len] == '/';
}

static int
disk_add(struct disk_mount_info **v, size_t *n, const char *dir,
    const char *dev, const char *backing)
{
	struct disk_mount_info	*nv;

	nv = reallocarray(*v, *n + 1, sizeof(**v));
	if (nv == NULL)
		return -1;
	*v = nv;
	nv[*n].dir = strdup(dir);
	nv[*n].device = strdup(dev);
	nv[*n].backing = strdup(backing);
	(*n)++;
	if (nv[*n - 1].dir == NULL || nv[*n - 1].device == NULL ||
	    nv[*n - 1].backing == NULL)
		return -1;
	return 0;
}

int
disk_list_mounts(const char *root, struct disk_mount_info **out,
    size_t *count, char **cause)
{
	char	 real[PATH_MAX], backing[PATH_MAX];
	char	*line = NULL, *mnt, *fs, *src;
	size_t	 cap = 0;
	FILE	*fp;
	int	 rc = -1;

	*out = NULL;
	*count = 0;
	if (realpath(root, real) == NULL)
		return errno == ENOENT ? 0 : util_cause(cause,
		    "cannot resolve '%s': %s", root, strerror(errno));
	fp = fopen("/proc/self/mountinfo", "re");
	if (fp == NULL)
		return util_cause(cause, "cannot read /proc/self/mountinfo: "
		    "%s", strerror(errno));
	while (getline(&line, &cap, fp) != -1) {
		if (disk_mountinfo_split(line, &mnt, &fs, &src) == -1 ||
		    disk_loop_backing(src, backing, sizeof(backing)) == -1 ||
		    !disk_under(backing, real))
			continue;
		if (disk_add(out, count, mnt, src, backing) == -1) {
			util_cause(cause, "out of memory");
			goto out;
		}
	}
	rc = 0;
out:
	free(line);
	fclose(fp);
	if (rc == -1) {
		disk_mounts_free(*out, *count);
		*out = NULL;
		*count = 0;
	}
	return rc;
}

void
disk_mounts_free(struct disk_mount_info *v, size_t count)
{
	size_t	i;

	if (v == NULL)
		return;
	for (i = 0; i < count; i++) {
		free(v[i].dir);
		free(v[i].device);
		free(v[i].backing);
	}
	free(v);
}
