/*
 * test_disk.c: disk images, loop mounts and the mount listing. Creating an
 * image works for any user; mounting needs root and a usable
 * /dev/loop-control, and those tests skip without them.
 */
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "util.h"

#include "disk.h"

struct fixture {
	char	root[64];	/* mkdtemp folder */
	char	img[128];
	char	dir[128];
};

static int	setup(void **);
static int	teardown(void **);
static int	can_mount(void);
static int	loop_has_backing(const char *);

static int
setup(void **state)
{
	struct fixture	*f = calloc(1, sizeof(*f));

	if (f == NULL)
		return -1;
	snprintf(f->root, sizeof(f->root), "/tmp/test_disk." UTIL_MKTEMP_SUFFIX);
	if (mkdtemp(f->root) == NULL)
		return -1;
	snprintf(f->img, sizeof(f->img), "%s/disk.img", f->root);
	snprintf(f->dir, sizeof(f->dir), "%s/work", f->root);
	if (mkdir(f->dir, 0700) == -1)
		return -1;
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture	*f = *state;

	disk_umount(f->dir, NULL);
	rmdir(f->dir);
	unlink(f->img);
	rmdir(f->root);
	free(f);
	return 0;
}

static int
can_mount(void)
{
	return geteuid() == 0 && access("/dev/loop-control", R_OK | W_OK) == 0;
}

/* 1 if some loop device in sysfs is backed by path. */
static int
loop_has_backing(const char *path)
{
	char	 sys[128], buf[4096];
	FILE	*fp;
	int	 i, found = 0;

	for (i = 0; i < 256 && !found; i++) {
		snprintf(sys, sizeof(sys),
		    "/sys/block/loop%d/loop/backing_file", i);
		if ((fp = fopen(sys, "r")) == NULL)
			continue;
		if (fgets(buf, sizeof(buf), fp) != NULL) {
			buf[strcspn(buf, "\n")] = '\0';
			found = strcmp(buf, path) == 0;
		}
		fclose(fp);
	}
	return found;
}

static void
test_is_mounted(void **state)
{
	struct fixture	*f = *state;

	assert_int_equal(disk_is_mounted("/"), 1);
	assert_int_equal(disk_is_mounted("/proc"), 1);
	assert_int_equal(disk_is_mounted(f->dir), 0);
	assert_int_equal(disk_is_mounted("/nonexistent/sandgate"), 0);
}

/* A non-mount unmounts fine; a missing folder too. */
static void
test_umount_idempotent(void **state)
{
	struct fixture	*f = *state;
	char		*cause = NULL;

	assert_int_equal(disk_umount(f->dir, &cause), 0);
	assert_int_equal(disk_umount("/nonexistent/sandgate", &cause), 0);
	assert_null(cause);
}

static void
test_image_create_sparse(void **state)
{
	struct fixture	*f = *state;
	struct stat	 st;
	char		*cause = NULL;

	assert_int_equal(disk_image_create(f->img, (16ull << 20) + 100, 1000,
	    1000, &cause), 0);
	assert_null(cause);
	assert_int_equal(stat(f->img, &st), 0);
	assert_int_equal(st.st_size, 16 << 20);	/* rounded to 4 KiB */
	assert_true((unsigned long long)st.st_blocks * 512 < (16ull << 20));
	assert_int_equal(st.st_mode & 0777, 0600);
	/* It exists now: a second create refuses and leaves it alone. */
	assert_int_equal(disk_image_create(f->img, 16ull << 20, 0, 0,
	    &cause), -1);
	assert_non_null(strstr(cause, "cannot create"));
	free(cause);
	cause = NULL;
	assert_int_equal(stat(f->img, &st), 0);
}

static void
test_image_create_errors(void **state)
{
	struct fixture	*f = *state;
	char		*cause = NULL;

	assert_int_equal(disk_image_create(f->img, 4096, 0, 0, &cause), -1);
	assert_non_null(strstr(cause, "too small"));
	free(cause);
	cause = NULL;
	assert_int_equal(access(f->img, F_OK), -1);
	assert_int_equal(disk_image_create("/nonexistent/d.img", 16ull << 20,
	    0, 0, &cause), -1);
	free(cause);
	cause = NULL;
	/* NULL cause is allowed. */
	assert_int_equal(disk_image_create(f->img, 1, 0, 0, NULL), -1);
}

static void
test_list_mounts_missing_root(void **state)
{
	struct disk_mount_info	*m = (void *)1;
	size_t			 n = 99;
	char			*cause = NULL;

	assert_int_equal(disk_list_mounts("/nonexistent/sandgate", &m, &n,
	    &cause), 0);
	assert_null(m);
	assert_int_equal(n, 0);
	disk_mounts_free(NULL, 0);
}

/* Mount, see it owned by the sandbox user, list it, fill it, unmount. */
static void
test_mount_cycle(void **state)
{
	struct fixture		*f = *state;
	struct disk_mount_info	*m;
	struct stat		 st;
	char			*cause = NULL, path[256], block[65536];
	size_t			 n;
	ssize_t			 w;
	int			 fd;

	if (!can_mount())
		skip();
	assert_int_equal(disk_image_create(f->img, 16ull << 20, 1234, 2345,
	    &cause), 0);
	if (disk_mount(f->img, f->dir, &cause) == -1)
		fail_msg("mount: %s", cause);
	assert_int_equal(disk_is_mounted(f->dir), 1);
	assert_int_equal(stat(f->dir, &st), 0);
	assert_int_equal(st.st_uid, 1234);
	assert_int_equal(st.st_gid, 2345);
	assert_int_equal(disk_list_mounts(f->root, &m, &n, &cause), 0);
	assert_int_equal(n, 1);
	assert_string_equal(m[0].dir, f->dir);
	assert_string_equal(m[0].backing, f->img);
	assert_non_null(strstr(m[0].device, "/dev/loop"));
	disk_mounts_free(m, n);
	/* The quota holds: writing past 16 MiB ends in ENOSPC. */
	snprintf(path, sizeof(path), "%s/fill", f->dir);
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	assert_true(fd != -1);
	memset(block, 'x', sizeof(block));
	while ((w = write(fd, block, sizeof(block))) > 0)
		;
	assert_int_equal(errno, ENOSPC);
	close(fd);
	assert_int_equal(disk_umount(f->dir, &cause), 0);
	assert_int_equal(disk_is_mounted(f->dir), 0);
	/* Autoclear: no loop device is left holding the image. */
	assert_int_equal(loop_has_backing(f->img), 0);
}

/* A mount point that is busy is detached lazily. */
static void
test_umount_busy(void **state)
{
	struct fixture	*f = *state;
	char		*cause = NULL;
	int		 fd;

	if (!can_mount())
		skip();
	assert_int_equal(disk_image_create(f->img, 16ull << 20, 0, 0, &cause),
	    0);
	assert_int_equal(disk_mount(f->img, f->dir, &cause), 0);
	fd = open(f->dir, O_RDONLY | O_DIRECTORY);
	assert_true(fd != -1);
	assert_int_equal(fchdir(fd), 0);
	assert_int_equal(disk_umount(f->dir, &cause), 0);
	assert_int_equal(chdir("/"), 0);
	close(fd);
	assert_int_equal(disk_is_mounted(f->dir), 0);
}

static void
test_mount_errors(void **state)
{
	struct fixture	*f = *state;
	char		*cause = NULL;
	int		 fd;

	assert_int_equal(disk_mount("/nonexistent/d.img", f->dir, &cause), -1);
	assert_non_null(strstr(cause, "cannot open"));
	free(cause);
	cause = NULL;
	if (!can_mount())
		skip();
	/* Not a filesystem: mount fails and the loop device goes away. */
	fd = open(f->img, O_WRONLY | O_CREAT, 0600);
	assert_true(fd != -1);
	assert_int_equal(ftruncate(fd, 1 << 20), 0);
	close(fd);
	assert_int_equal(disk_mount(f->img, f->dir, &cause), -1);
	assert_non_null(strstr(cause, "cannot mount"));
	free(cause);
	cause = NULL;
	assert_int_equal(loop_has_backing(f->img), 0);
}

int
main(void)
{
	const struct CMUnitTest	tests[] = {
		cmocka_unit_test_setup_teardown(test_is_mounted, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_umount_idempotent, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_image_create_sparse, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_image_create_errors, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_list_mounts_missing_root,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_mount_cycle, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_umount_busy, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_mount_errors, setup,
		    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
