# dwriters.sh N: N loops of 4 MiB writes with fsync, which keep tasks in
# uninterruptible sleep (D) so that the cgroup freezer may give up ("unable
# to freeze"), and a ticker appending the time to /workspace/.dtick every
# 0.5 s; then waits. The host checks that the ticker stops at the deadline.
n=${1:-48}
mkdir -p /workspace/.dw
i=0
while [ "$i" -lt "$n" ]; do
	(while :; do dd if=/dev/zero of=/workspace/.dw/f$i bs=1M count=4 \
	    conv=fsync 2>/dev/null; done) &
	i=$((i + 1))
done
(while :; do date +%s >>/workspace/.dtick; sleep 0.5; done) &
echo "started $n writers and a ticker"
sleep 60
