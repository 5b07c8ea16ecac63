/*
 * policy_tls.c: the parts of an entry that only tls: terminate uses: its
 * extra CA file (read and checked while loading, its bytes in the
 * digest and kept for the proxy's trust store) and the header of its
 * credentials.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
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

/*
 * The bytes of a ca_file, one copy for every load that read the same
 * bytes (by SHA-256), freed with the last: a policy kept in force for an
 * open tunnel holds a reference, not up to 16 MiB of its own.
 */
struct ptls_blob {
	struct ptls_blob	*next;
	size_t			 refs;
	size_t			 len;
	char			 id[65];
	char			 pem[];		/* len bytes, then NUL */
};

static struct ptls_blob	*ptls_blobs;
static pthread_mutex_t	 ptls_blobs_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *ptls_blob_ref(const char *, size_t, const char *);
static void	 ptls_blob_unref(const char *);
static const struct policy_ca *ptls_ca_find(const struct ploader *,
		    const char *);
static const struct policy_ca *ptls_ca_keep(struct ploader *,
		    const char *, const char *, size_t);
static int	 ptls_open(const char *, size_t, const char **);
static char	*ptls_read(const char *, size_t, size_t, size_t *,
		    const char **);

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

int
policy_ca_add(X509_STORE *st, const char *pem, size_t len,
    const char **cause)
{
	BIO		*b;
	X509		*x;
	unsigned long	 err;
	int		 n = 0, ok = 1;

	if ((b = BIO_new_mem_buf(pem, (int)len)) == NULL) {
		*cause = "out of memory";
		return -1;
	}
	/* As X509_load_cert_file() reads a file, from memory. */
	while (ok && (x = PEM_read_bio_X509_AUX(b, NULL, NULL, NULL)) !=
	    NULL) {
		ok = st == NULL || X509_STORE_add_cert(st, x) == 1;
		X509_free(x);
		n++;
	}
	err = ERR_peek_last_error();
	ERR_clear_error();
	BIO_free(b);
	if (!ok)
		*cause = "cannot be added to the trust store";
	else if (ERR_GET_LIB(err) != ERR_LIB_PEM ||
	    ERR_GET_REASON(err) != PEM_R_NO_START_LINE)
		*cause = "holds a broken certificate (not PEM, or not X.509)";
	else if (n == 0)
		*cause = "holds no PEM certificate";
	else
		return n;
	return -1;
}

/* The shared copy of len bytes whose SHA-256 is id, or NULL (oom). */
static const char *
ptls_blob_ref(const char *buf, size_t len, const char *id)
{
	struct ptls_blob	*b;

	pthread_mutex_lock(&ptls_blobs_lock);
	for (b = ptls_blobs; b != NULL; b = b->next)
		if (b->len == len && strcmp(b->id, id) == 0 &&
		    memcmp(b->pem, buf, len) == 0)
			break;
	if (b == NULL && (b = malloc(sizeof(*b) + len + 1)) != NULL) {
		b->refs = 0;
		b->len = len;
		memcpy(b->id, id, sizeof(b->id));
		memcpy(b->pem, buf, len);
		b->pem[len] = '\0';
		b->next = ptls_blobs;
		ptls_blobs = b;
	}
	if (b != NULL)
		b->refs++;
	pthread_mutex_unlock(&ptls_blobs_lock);
	return b != NULL ? b->pem : NULL;
}

/* Drop a reference that ptls_blob_ref gave as pem. */
static void
ptls_blob_unref(const char *pem)
{
	struct ptls_blob	*b, **bp;

	b = (struct ptls_blob *)(void *)(pem - offsetof(struct ptls_blob,
	    pem));
	pthread_mutex_lock(&ptls_blobs_lock);
	if (--b->refs == 0) {
		for (bp = &ptls_blobs; *bp != b; bp = &(*bp)->next)
			;
		*bp = b->next;
		free(b);
	}
	pthread_mutex_unlock(&ptls_blobs_lock);
}

void
policy_cas_release(const struct policy_ca *cas)
{
	for (; cas != NULL; cas = cas->next)
		ptls_blob_unref(cas->pem);
}

/* The ca_file at path read earlier in this load, or NULL. */
static const struct policy_ca *
ptls_ca_find(const struct ploader *ld, const char *path)
{
	const struct policy_ca	*ca;

	for (ca = ld->p->cas; ca != NULL; ca = ca->next)
		if (strcmp(ca->path, path) == 0)
			return ca;
	return NULL;
}

/*
 * Keep len bytes of path for the policy (shared, see ptls_blob): its
 * policy_ca, or NULL (oom).
 */
static const struct policy_ca *
ptls_ca_keep(struct ploader *ld, const char *path, const char *buf,
    size_t len)
{
	struct policy_ca	*ca;
	unsigned char		 md[32];

	if ((ca = parena_alloc(&ld->p->arena, sizeof(*ca))) == NULL ||
	    (ca->path = parena_strndup(&ld->p->arena, path,
	    strlen(path))) == NULL ||
	    EVP_Digest(buf, len, md, NULL, EVP_sha256(), NULL) != 1) {
		ld->oom = 1;
		return NULL;
	}
	util_hex(md, sizeof(md), ca->id);
	if ((ca->pem = ptls_blob_ref(buf, len, ca->id)) == NULL) {
		ld->oom = 1;
		return NULL;
	}
	ca->len = len;
	ca->next = ld->p->cas;
	ld->p->cas = ca;
	ld->ncas++;
	ld->ca_bytes += len;
	return ca;
}

/*
 * path, its first dirlen bytes the policy folder, the rest inside it
 * (the loader refused ".."), opened one name at a time beneath that
 * folder, none a link (O_NOFOLLOW alone covers only the last name: a
 * linked folder on the way would lead anywhere). O_NONBLOCK: a FIFO's
 * open would wait for a writer, inside the proxy's event loop; the
 * caller's fstat refuses it. The descriptor, or -1 with *cause set.
 */
static int
ptls_open(const char *path, size_t dirlen, const char **cause)
{
	struct stat	 st;
	char		*dir = NULL, *rel, *name, *slash;
	int		 dfd, fd = -1, nfd;

	util_xasprintf(&dir, "%.*s", dirlen > 0 ? (int)dirlen : 1,
	    dirlen > 0 ? path : ".");
	rel = util_xstrdup(path + dirlen);
	*cause = "cannot be opened";
	if ((dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		goto out;
	for (name = rel; (slash = strchr(name, '/')) != NULL;
	    name = slash + 1) {
		*slash = '\0';
		if (*name == '\0' || strcmp(name, ".") == 0)
			continue;
		if ((nfd = openat(dfd, name, O_RDONLY | O_DIRECTORY |
		    O_NOFOLLOW | O_CLOEXEC)) == -1) {
			/* A link to a folder fails as ENOTDIR, as a file. */
			if (errno == ENOENT)
				*cause = "does not exist";
			else if (errno == ENOTDIR || errno == ELOOP)
				*cause = fstatat(dfd, name, &st,
				    AT_SYMLINK_NOFOLLOW) == 0 &&
				    S_ISLNK(st.st_mode) ? "passes through a "
				    "symbolic link" : "passes through a file "
				    "that is not a folder";
			goto out;
		}
		close(dfd);
		dfd = nfd;
	}
	if ((fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW |
	    O_NONBLOCK)) == -1) {
		if (errno == ELOOP)
			*cause = "is a symbolic link";
		else if (errno == ENOENT)
			*cause = "does not exist";
	}
out:
	if (dfd != -1)
		close(dfd);
	free(rel);
	free(dir);
	return fd;
}

/*
 * The bytes of path (as ptls_open opens it), a regular file of at most
 * 1 MiB and max bytes; or NULL with *cause set.
 */
static char *
ptls_read(const char *path, size_t dirlen, size_t max, size_t *len,
    const char **cause)
{
	struct stat	 st;
	char		*buf = NULL;
	ssize_t		 n;
	size_t		 got = 0;
	int		 fd;

	if ((fd = ptls_open(path, dirlen, cause)) == -1)
		return NULL;
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    st.st_size > SG_POLICY_CA_FILE_MAX)
		*cause = "is not a regular file of at most 1 MiB";
	else if ((size_t)st.st_size > max)
		*cause = "would take the policy's ca_files past 16 MiB in all";
	else
		*cause = NULL;
	if (*cause != NULL) {
		close(fd);
		return NULL;
	}
	buf = util_xmalloc((size_t)st.st_size + 1);
	while (got < (size_t)st.st_size && (n = read(fd, buf + got,
	    (size_t)st.st_size - got)) > 0)
		got += (size_t)n;
	close(fd);
	if (got != (size_t)st.st_size) {
		*cause = "cannot be read";
		free(buf);
		return NULL;
	}
	*len = got;
	return buf;
}

const struct policy_ca *
ploader_ca_file(struct ploader *ld, const char *path, size_t dirlen,
    const char **cause)
{
	const struct policy_ca	*ca;
	char			*buf;
	size_t			 len = 0, room;

	if ((ca = ptls_ca_find(ld, path)) == NULL) {
		if (ld->ncas == SG_POLICY_CA_FILES_MAX) {
			*cause = "one ca_file too many (a policy names at "
			    "most 256)";
			return NULL;
		}
		room = SG_POLICY_CA_BYTES_MAX - ld->ca_bytes;
		if ((buf = ptls_read(path, dirlen, room <
		    SG_POLICY_CA_FILE_MAX ? room : SG_POLICY_CA_FILE_MAX, &len,
		    cause)) == NULL)
			return NULL;
		if (policy_ca_add(NULL, buf, len, cause) > 0)
			ca = ptls_ca_keep(ld, path, buf, len);
		free(buf);
		if (ca == NULL)
			return NULL;
	}
	ploader_digest_file(ld, path + (strrchr(path, '/') ?
	    strrchr(path, '/') - path + 1 : 0), ca->pem, ca->len);
	return ca;
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
