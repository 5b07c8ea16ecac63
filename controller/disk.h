/*
 * disk.h: the size-limited filesystem behind a sandbox's /workspace.
 *
 * Each sandbox's working copy lives in an ext4 filesystem inside a sparse
 * file (state_root()/sandboxes/<id>/disk.img), loop-mounted on work/. The
 * kernel then enforces the disk quota: a write past it fails with ENOSPC
 * inside the sandbox, and the host loses at most the image's size.
 *
 * Loop devices are attached with LO_FLAGS_AUTOCLEAR, so unmounting the
 * filesystem frees the device; nothing else has to be remembered. Mounting
 * needs CAP_SYS_ADMIN (root). Every function that can fail takes
 * `char **cause` and on failure sets it to a malloc'd lowercase message
 * (the caller frees it); cause may be NULL.
 */
#ifndef SG_DISK_H
#define SG_DISK_H

#include <sys/types.h>

#include <stddef.h>

/* Smallest image disk_image_create() accepts (ext4 needs room to work). */
#define DISK_MIN_BYTES	(8ull * 1024 * 1024)

/*
 * Create img as a sparse file of `bytes` bytes (rounded down to 4 KiB, at
 * least DISK_MIN_BYTES) and make an ext4 filesystem on it with
 * `mkfs.ext4 -q -F -m 0 -O ^has_journal -E root_owner=uid:gid`, so the
 * filesystem root belongs to the sandbox user. Fails if img exists.
 * On failure the partial file is removed. Returns 0 or -1.
 */
int	disk_image_create(const char *img, unsigned long long bytes,
	    uid_t uid, gid_t gid, char **cause);

/*
 * Attach img to a free loop device (LOOP_CTL_GET_FREE, LOOP_CONFIGURE or
 * LOOP_SET_FD + LOOP_SET_STATUS64, autoclear; creates a missing /dev/loopN
 * node) and mount it as ext4 on dir with nosuid,nodev. dir must exist.
 * On failure the loop device is detached again. Returns 0 or -1.
 */
int	disk_mount(const char *img, const char *dir, char **cause);

/*
 * Unmount dir (umount2, falling back to MNT_DETACH when busy); autoclear
 * then frees the loop device. Unmounting a folder that is not a mount
 * point succeeds (idempotent). Returns 0 or -1.
 */
int	disk_umount(const char *dir, char **cause);

/* 1 if dir is a mount point per /proc/self/mountinfo, 0 if not, -1 on error. */
int	disk_is_mounted(const char *dir);

/* One mount of a loop device whose backing file is under a given root. */
struct disk_mount_info {
	char	*dir;		/* mount point */
	char	*device;	/* /dev/loopN */
	char	*backing;	/* backing file, from /sys/block/loopN/loop */
};

/*
 * List the loop mounts whose backing file lies under `root` (for gc: a
 * crash can leave sandbox disks mounted). On success *out is a malloc'd
 * array of *count entries (NULL when 0), freed with disk_mounts_free().
 * Returns 0 or -1 (with *cause).
 */
int	disk_list_mounts(const char *root, struct disk_mount_info **out,
	    size_t *count, char **cause);
void	disk_mounts_free(struct disk_mount_info *, size_t count);

#endif
