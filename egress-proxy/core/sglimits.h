/*
 * sglimits.h: every ceiling of the project, named once. A growable buffer
 * or a count that an untrusted peer can drive has its limit here.
 */
#ifndef SG_LIMITS_H
#define SG_LIMITS_H

/* Host names (RFC 1035: 253 characters in text form, 63 per label). */
#define SG_HOST_MAX		253
#define SG_LABEL_MAX		63

/* HTTP request and response heads. */
#define SG_HTTP_HEAD_MAX	(32 * 1024)	/* whole head; 431 past it */
#define SG_HTTP_HEADERS_MAX	100		/* header lines; 431 past it */
#define SG_HTTP_LINE_MAX	(8 * 1024)	/* request line; 414 past it */
#define SG_HTTP_CHUNK_LINE_MAX	1024		/* chunk-size line + exts */

/* TLS ClientHello peeking before a tunnel is forwarded. */
#define SG_CLIENTHELLO_MAX	(64 * 1024)

/* Policy files. */
#define SG_POLICY_FILE_MAX	(16 * 1024 * 1024)
#define SG_POLICY_ENTRIES_MAX	1000000
/*
 * A tls: terminate entry's ca_file, and the distinct ca_files of one
 * policy: their bytes stay in memory while it is in force, or kept for a
 * tunnel decided under it; one copy of the same bytes for every policy
 * that read them, so reloads do not multiply them.
 */
#define SG_POLICY_CA_FILE_MAX	(1024 * 1024)
#define SG_POLICY_CA_FILES_MAX	256
#define SG_POLICY_CA_BYTES_MAX	(16 * 1024 * 1024)

/* Security-event log lines. */
#define SG_LOG_LINE_MAX		(64 * 1024)
/*
 * A log line's seq, at most: 2^53 - 1, the largest integer every JSON
 * parser holds exactly; a line past it is not a log line, and a writer
 * there stops rather than overflow.
 */
#define SG_LOG_SEQ_MAX		9007199254740991LL
/*
 * A log that ends this close to SG_LOG_SEQ_MAX in a run of lines that
 * fills the first tail window is read further back (eventlog.c): a
 * planted run there would leave the writer no room to write.
 */
#define SG_LOG_SEQ_ROOM		(1LL << 20)

/* Controller: captured output per stream handed to the agent. */
#define SG_OUTPUT_CAP_DEFAULT	(8u * 1024 * 1024)
/* Controller: output kept as evidence in the sandbox folder per stream. */
#define SG_EVIDENCE_CAP_DEFAULT	(256ull * 1024 * 1024)

/* Policy diagnostics kept per load, and the length of a set name. */
#define SG_POLICY_DIAGS_MAX	1000
#define SG_POLICY_SET_NAME_MAX	64
#define SG_SECRET_VALUE_MAX	8192	/* a credential's value */

/* Raw bytes of a host before IDN conversion (UTS #46 drops some code
   points, so the input may be longer than the name it becomes). */
#define SG_HOST_INPUT_MAX	1024

/* Addresses in an addr_set (the proxy's own interface addresses). */
#define SG_ADDR_SET_MAX		4096

/*
 * Security-event log: one untrusted string field, counted as escaped JSON
 * (longer strings are cut and end in "...").
 */
#define SG_LOG_FIELD_MAX	2048
/* Rotated files of one log (name.1 .. name.N) an eventlog looks for. */
#define SG_LOG_ROTATED_MAX	100000
/* How far back from the end eventlog_open() looks for the last event. */
#define SG_LOG_TAIL_SCAN	(4 * SG_LOG_LINE_MAX)

/* Controller: one Docker Engine API JSON response (inspect, lists). */
#define SG_DOCKER_RESPONSE_MAX	(16u * 1024 * 1024)

/*
 * Controller: a text file is shown as a unified diff in `sandgate diff`
 * and `export` only when each side has at most this many bytes and lines
 * (else its sizes and SHA-256 are shown, and the reviewer is told);
 * bounds the diff's memory to a few MiB.
 */
#define SG_DIFF_FILE_MAX	(1024u * 1024)
#define SG_DIFF_LINES_MAX	65536u
/* Controller: folders nested in a source tree that create copies. */
#define SG_COPY_DEPTH_MAX	200
/*
 * Controller: what one diff lists (`diff`, `apply --all` and `--review`,
 * export's diff.patch): at most this many changed paths and this many
 * bytes of their names in all; past either the diff is refused, naming
 * the bound. Bounds the diff's memory (each path is kept whole) and the
 * saved review (about 15 MiB at most).
 */
#define SG_DIFF_PATHS_MAX	32768u
#define SG_DIFF_NAMES_MAX	(4u * 1024 * 1024)
/*
 * Controller: bytes a walk of the working copy holds for the listings of
 * the folders on its way down (each folder's names, sorted, and a pointer
 * per name, counted as allocated); past it the walk stops naming the
 * folder and the bound. Keeps diff, export and apply within their memory
 * bound whatever the sandbox nests.
 */
#define SG_WALK_NAMES_MAX	(8u * 1024 * 1024)
/*
 * Controller: bytes of entry names an export's work/ and runs/ trees add
 * to the zip (libzip keeps every name in memory until the zip is
 * written); the entries past it are left out and listed in skipped.txt.
 */
#define SG_EXPORT_NAMES_MAX	(4u * 1024 * 1024)
/* Controller: reviews (`diff`'s digests) kept per sandbox for apply. */
#define SG_REVIEWS_KEPT		16
/*
 * ... and their bytes in all: the oldest go first past it (the newest is
 * always kept; one review of 32,768 paths and 4 MiB of names is at most
 * about 12 MiB), atk16u F4.
 */
#define SG_REVIEWS_BYTES_MAX	(32u * 1024 * 1024)

/* `sandgate policy suggest`: destination hosts, and ports per host, kept. */
#define SG_SUGGEST_DESTS_MAX	4096
#define SG_SUGGEST_PORTS_MAX	64

#endif
