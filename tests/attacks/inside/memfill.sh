#!/bin/sh
# memfill.sh: 40 text files of 17 MB each in /workspace/mem.
mkdir -p /workspace/mem || exit 1
for i in $(seq 1 40); do
	yes "row $i of a text file of seventeen megabytes" | head -c 17000000 \
	    >/workspace/mem/f$i.txt
done
echo "written: $(ls /workspace/mem | wc -l) files, $(du -sm /workspace/mem | cut -f1) MB"
