/* evidence.c: the evidence folder's cap; see evidence.h. */
#include <sys/stat.h>

#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "evidence.h"
#include "sglimits.h"

unsigned long long
evidence_room(const char *dir, unsigned long long cap)
{
	unsigned long long	 used = 0;
	struct dirent		*de;
	struct stat		 st;
	DIR			*d;
	int			 fd;

	if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1 || (d = fdopendir(fd)) == NULL) {
		if (fd != -1)
			close(fd);
		return 0;
	}
	while ((de = readdir(d)) != NULL) {
		if (fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode))
			used += (unsigned long long)st.st_blocks * 512;
	}
	closedir(d);
	return used >= cap ? 0 : cap - used;
}

unsigned long long
evidence_stream_cap(const char *dir, unsigned long long max)
{
	unsigned long long	room;

	if (max == 0)
		return SG_EVIDENCE_CAP_DEFAULT;
	room = evidence_room(dir, max) / 2;
	return room < SG_EVIDENCE_CAP_DEFAULT ? room : SG_EVIDENCE_CAP_DEFAULT;
}
