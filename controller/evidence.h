/*
 * evidence.h: the cap on what a sandbox's evidence folder (runs/: the
 * full output of each exec) may take on the host's disk in all.
 */
#ifndef SG_EVIDENCE_H
#define SG_EVIDENCE_H

/*
 * How many bytes the folder dir may still take before its files hold cap
 * bytes of disk (allocated blocks, so a sparse file counts what it
 * holds); 0 when it is full or cannot be read. Regular files directly in
 * dir only (the evidence folder has no subfolders).
 */
unsigned long long	evidence_room(const char *dir, unsigned long long cap);

/*
 * What one stream of an exec may keep: the per-stream cap, or half of
 * the room left under the sandbox's cap (max), whichever is less; max 0:
 * the per-stream cap alone.
 */
unsigned long long	evidence_stream_cap(const char *dir,
			    unsigned long long max);

#endif
