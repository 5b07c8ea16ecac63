/*
 * fuzz_checkpoint.c: arbitrary bytes as a log for the checkpoint checks
 * (ckverify.h) on top of the chain, with one trusted key: the key that
 * signed the seed corpus (tests/fuzz/corpus/checkpoint, written by the
 * proxy with --checkpoint-every 3, a key rotation and a close; its private
 * half is not kept). The input is split into two "files" at the first NUL
 * byte, if any.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <openssl/evp.h>

#include "checkpoint.h"
#include "ckverify.h"

/* The corpus's first key; it hands over to a second one in the corpus. */
#define FUZZ_KEY	"D8frUSgxvXwptR6nKNjjo//FuDrPldQb7vd4I1NVChc="
/* "Now" for the tail rules: 2026-12-01T15:00:00Z. */
#define FUZZ_NOW_US	1796137200000000LL

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ckverify	 v;
	static EVP_PKEY		*key;
	const char		*buf = (const char *)data;
	const char		*nul = memchr(buf, '\0', size);
	size_t			 first = nul ? (size_t)(nul - buf) : size;
	enum ckverify_result	 r;

	if (key == NULL && (key = checkpoint_key_from_id(FUZZ_KEY)) == NULL)
		__builtin_trap();
	ckverify_init(&v);
	if (ckverify_add_key(&v, key) == -1)
		__builtin_trap();
	ckverify_file(&v, "log.1");
	ckverify_buf(&v, buf, first);
	if (nul != NULL) {
		ckverify_file(&v, "log");
		ckverify_buf(&v, nul + 1, size - first - 1);
	}
	r = ckverify_finish(&v, FUZZ_NOW_US);
	/* Results stay consistent with the input. */
	if (v.good > v.checkpoints || v.checkpoints > v.chain.events ||
	    v.nkeys > CKVERIFY_KEYS_MAX ||
	    (r == CKVERIFY_UNTRUSTED && (!v.failed || v.what[0] == '\0')) ||
	    (r == CKVERIFY_OK && v.failed))
		__builtin_trap();
	ckverify_release(&v);
	return 0;
}
