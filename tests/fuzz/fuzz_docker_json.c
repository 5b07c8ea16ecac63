/*
 * fuzz_docker_json.c: Docker answers the controller parses: the attach
 * stream demultiplexer (fed in pieces whose sizes come from the input),
 * container/exec inspect bodies, Api-Version values and meta.json.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <jansson.h>

#include "docker.h"
#include "sandbox.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static int	fuzz_out(void *, int, const unsigned char *, size_t);
static void	fuzz_demux(const uint8_t *, size_t);

static int
fuzz_out(void *arg, int stream, const unsigned char *p, size_t n)
{
	size_t	*total = arg;

	if (stream != 1 && stream != 2)
		__builtin_trap();
	*total += n;
	return 0;
}

/* The same bytes whole and in pieces must give the same total. */
static void
fuzz_demux(const uint8_t *data, size_t size)
{
	struct docker_demux	a, b;
	size_t			ta = 0, tb = 0, off = 0, step;
	int			ra, rb = 0;

	docker_demux_init(&a);
	ra = docker_demux_feed(&a, data, size, fuzz_out, &ta);
	docker_demux_init(&b);
	while (off < size && rb == 0) {
		step = 1 + data[off] % 13;
		if (step > size - off)
			step = size - off;
		rb = docker_demux_feed(&b, data + off, step, fuzz_out, &tb);
		off += step;
	}
	if (ra != rb || (ra == 0 && ta != tb))
		__builtin_trap();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct docker_cinfo	 ci;
	struct docker_einfo	 ei;
	struct sandbox_meta	 m;
	json_t			*j;

	fuzz_demux(data, size);
	(void)docker_parse_api_version((const char *)data, size);
	j = json_loadb((const char *)data, size, 0, NULL);
	if (j == NULL)
		return 0;
	(void)docker_parse_cinfo(j, &ci);
	(void)docker_parse_einfo(j, &ei);
	(void)docker_error_message(j);
	sandbox_meta_init(&m);
	(void)sandbox_meta_from_json(j, &m);
	sandbox_meta_release(&m);
	json_decref(j);
	return 0;
}
