/*
 * policy_tls.c: the parts of an entry that only tls: terminate uses: its
 * extra CA file (read and checked while loading, its bytes in the
 * digest) and the header of its credentials.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "policy_int.h"
#include "sglimits.h"
#include "util.h"

/* Fields a credential may not set: framing, routing, hop-by-hop. */
static const char *const ptls_refused[] = {
	"host", "content-length", "transfer-encoding", "connection",
	"keep-alive", "te", "trailer", "upgrade", "expect", NULL
};

static int	ptls_count_certs(const char *, size_t);

int
policy_method_echoes(const char *method)
{
	return strcasecmp(method, "TRACE") == 0 ||
	    strcasecmp(method, "TRACK") == 0;
}

const char *
policy_cred_header_invalid(const char *h)
{
	size_t	i;

	if (*h == '\0' || strlen(h) > 64)
		return "must be a header name of 1 to 64 characters";
	for (i = 0; h[i] != '\0'; i++) {
		if (!((h[i] >= 'a' && h[i] <= 'z') || (h[i] >= 'A' &&
		    h[i] <= 'Z') || (h[i] >= '0' && h[i] <= '9') ||
		    strchr("!#$%&'*+-.^_`|~", h[i]) != NULL))
			return "is not an HTTP header name";
	}
	for (i = 0; ptls_refused[i] != NULL; i++) {
		if (strcasecmp(h, ptls_refused[i]) == 0)
			return "frames or routes the request; a credential "
			    "cannot set it";
	}
	if (strncasecmp(h, "proxy-", 6) == 0)
		return "is a Proxy-* header, which is never forwarded";
	return NULL;
}

/* How many PEM certificates buf holds (0 when none or broken). */
static int
ptls_count_certs(const char *buf, size_t len)
{
	BIO	*b;
	X509	*x;
	int	 n = 0;

	if ((b = BIO_new_mem_buf(buf, (int)len)) == NULL)
		return 0;
	while ((x = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL) {
		X509_free(x);
		n++;
	}
	ERR_clear_error();
	BIO_free(b);
	return n;
}

int
ploader_ca_file(struct ploader *ld, const char *path, const char **cause)
{
	struct stat	 st;
	char		*buf = NULL;
	ssize_t		 n;
	size_t		 got = 0;
	int		 fd, rc = -1;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) == -1) {
		*cause = errno == ELOOP ? "is a symbolic link" :
		    errno == ENOENT ? "does not exist" : "cannot be opened";
		return -1;
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    st.st_size > SG_POLICY_CA_FILE_MAX) {
		*cause = "is not a regular file of at most 1 MiB";
		goto out;
	}
	buf = util_xmalloc((size_t)st.st_size + 1);
	while (got < (size_t)st.st_size && (n = read(fd, buf + got,
	    (size_t)st.st_size - got)) > 0)
		got += (size_t)n;
	if (got != (size_t)st.st_size) {
		*cause = "cannot be read";
		goto out;
	}
	if (ptls_count_certs(buf, got) == 0) {
		*cause = "holds no PEM certificate";
		goto out;
	}
	ploader_digest_file(ld, path + (strrchr(path, '/') ?
	    strrchr(path, '/') - path + 1 : 0), buf, got);
	rc = 0;
out:
	free(buf);
	close(fd);
	return rc;
}

int
policy_secret_value_valid(const char *value, size_t len)
{
	size_t	i;

	if (len == 0 || len > SG_SECRET_VALUE_MAX)
		return 0;
	for (i = 0; i < len; i++)
		if (((unsigned char)value[i] < 0x20 && value[i] != '\t') ||
		    (unsigned char)value[i] == 0x7f)
			return 0;
	return 1;
}
