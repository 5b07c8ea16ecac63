#!/bin/sh
# filldisk.sh: write to the workspace until the filesystem refuses; the
# file stays (the host measures its free space meanwhile).
dd if=/dev/zero of=/workspace/fill bs=1M count=4096 2>&1
ls -l /workspace/fill | awk '{ print "written " $5 }'
df -k /workspace | tail -1
