/*
 * rtpid.h: the pids the container runtime itself recorded for a runc
 * container's processes.
 *
 * containerd's runc shim is the parent of the container's init and keeps
 * the container's bundle as its working directory: init.pid names the
 * init and, while an exec runs, "<exec id>.pid" names the process of that
 * exec. runc writes that file (`runc exec --pid-file`, written aside and
 * renamed) as soon as the process started; the shim reads it and Docker's
 * exec inspect later reports the same pid as its Pid, about 10 ms after
 * the process started (the shim waits for runc to exit, then containerd
 * and dockerd pass it on). Only root can read or write the bundle: a
 * sandbox names no pid there.
 */
#ifndef RTPID_H
#define RTPID_H

#include <stddef.h>

/*
 * The bundle folder of the runc container whose init is init_pid into out
 * (the working directory of the init's parent, the shim, checked by its
 * init.pid naming init_pid). 0, or -1: no
 * such layout (another runtime or shim), or not ours to read.
 */
int	rtpid_bundle(int init_pid, char *out, size_t len);

/*
 * The pid in dir/<name>.pid: > 0, or 0 when there is no such file (yet)
 * or it holds anything but a decimal pid (an optional newline after it).
 * name is an exec id: hex digits only, else 0.
 */
int	rtpid_read(const char *dir, const char *name);

#endif
