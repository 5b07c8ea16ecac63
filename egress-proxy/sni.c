/*
 * sni.c: ClientHello peeking with OpenSSL; see sni.h.
 *
 * A server-mode SSL reads from a memory BIO. OpenSSL reassembles the
 * ClientHello from however many records and pieces it came in, checks
 * its framing (including duplicate extensions), and then calls our
 * ClientHello callback, which copies what we need and returns
 * SSL_CLIENT_HELLO_ERROR so the handshake stops there. The callback runs
 * before version negotiation and certificate selection, so the context
 * needs no certificate and any TLS version is looked at. The only thing
 * OpenSSL writes before stopping is an alert into the write BIO, which is
 * drained and dropped: the client sees nothing from this module.
 */
#include <openssl/err.h>
#include <openssl/ssl.h>

#include <stdlib.h>
#include <string.h>

#include "sni.h"

/* First byte of a TLS record carrying a handshake message. */
#define SNI_CONTENT_HANDSHAKE	0x16

struct sni_peek {
	SSL		*ssl;	/* NULL once a result is final */
	BIO		*rbio;	/* owned by ssl */
	BIO		*wbio;	/* owned by ssl */
	size_t		 total;	/* bytes fed so far */
	enum sni_result	 result; /* SNI_MORE until final */
	int		 looked; /* the callback ran */
	int		 bad;	/* the callback found a bad extension */
	int		 ech;
	char		*name;	/* host_name as sent, or NULL */
};

/* A bounded cursor over extension bytes: each fetch checks what is left. */
struct sni_cursor {
	const unsigned char	*p;
	size_t			 left;
};

static int	sni_client_hello_cb(SSL *, int *, void *);
static int	sni_cur_u8(struct sni_cursor *, unsigned *);
static int	sni_cur_u16(struct sni_cursor *, size_t *);
static int	sni_cur_take(struct sni_cursor *, size_t,
		    struct sni_cursor *);
static int	sni_parse_server_name(char **, const unsigned char *,
		    size_t);
static int	sni_find_ech(SSL *);
static int	sni_ech_ext(int);
static void	sni_peek_finish(struct sni_peek *, enum sni_result);
static void	sni_drain(struct sni_peek *);

static int
sni_cur_u8(struct sni_cursor *c, unsigned *v)
{
	if (c->left < 1)
		return -1;
	*v = c->p[0];
	c->p++;
	c->left--;
	return 0;
}

static int
sni_cur_u16(struct sni_cursor *c, size_t *v)
{
	if (c->left < 2)
		return -1;
	*v = ((size_t)c->p[0] << 8) | c->p[1];
	c->p += 2;
	c->left -= 2;
	return 0;
}

/* Split n bytes off the front of c into sub. */
static int
sni_cur_take(struct sni_cursor *c, size_t n, struct sni_cursor *sub)
{
	if (c->left < n)
		return -1;
	sub->p = c->p;
	sub->left = n;
	c->p += n;
	c->left -= n;
	return 0;
}

/*
 * RFC 6066 section 3, the extension_data of server_name:
 *
 *   struct {
 *       NameType name_type;
 *       select (name_type) {
 *           case host_name: HostName;
 *       } name;
 *   } ServerName;
 *   enum { host_name(0), (255) } NameType;
 *   opaque HostName<1..2^16-1>;
 *   struct {
 *       ServerName server_name_list<1..2^16-1>
 *   } ServerNameList;
 *
 * Only host_name is defined, and a list "MUST NOT contain more than one
 * name of the same name_type": two host names are refused rather than
 * guessing which one the server will use. An unknown name_type has no
 * defined layout, so the list is refused too.
 */
static int
sni_parse_server_name(char **out, const unsigned char *ext, size_t extlen)
{
	struct sni_cursor	c = { ext, extlen }, list, name;
	size_t			listlen, namelen;
	unsigned		type;

	if (sni_cur_u16(&c, &listlen) == -1 || listlen == 0 ||
	    listlen != c.left || sni_cur_take(&c, listlen, &list) == -1)
		return -1;
	while (list.left > 0) {
		if (sni_cur_u8(&list, &type) == -1 || type != 0)
			return -1;
		if (sni_cur_u16(&list, &namelen) == -1 || namelen == 0 ||
		    sni_cur_take(&list, namelen, &name) == -1)
			return -1;
		if (*out != NULL)
			return -1;
		if (memchr(name.p, '\0', name.left) != NULL)
			return -1;
		*out = malloc(name.left + 1);
		if (*out == NULL)
			return -1;
		memcpy(*out, name.p, name.left);
		(*out)[name.left] = '\0';
	}
	return 0;
}

/* 1 when ext is one of the extensions that hide the server name. */
static int
sni_ech_ext(int ext)
{
	return ext == SNI_EXT_ECH || ext == SNI_EXT_ESNI ||
	    (ext >= SNI_EXT_ECH_DRAFT_FIRST && ext <= SNI_EXT_ECH_DRAFT_LAST);
}

/* 1 when the ClientHello carries ECH, a draft of it, or ESNI. */
static int
sni_find_ech(SSL *ssl)
{
	int	*exts = NULL;
	size_t	 n = 0, i;
	int	 found = 0;

	if (SSL_client_hello_get1_extensions_present(ssl, &exts, &n) != 1)
		return -1;
	for (i = 0; i < n; i++)
		if (sni_ech_ext(exts[i]))
			found = 1;
	OPENSSL_free(exts);
	return found;
}

int
sni_hello_look(SSL *ssl, char **name, int *ech)
{
	const unsigned char	*ext;
	size_t			 extlen;
	int			 bad = 0, e;

	*name = NULL;
	if (SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_server_name, &ext,
	    &extlen) == 1 && sni_parse_server_name(name, ext, extlen) == -1)
		bad = 1;
	e = sni_find_ech(ssl);
	*ech = e == 1;
	return bad || e == -1 ? -1 : 0;
}

/* Look, remember, and stop the handshake. */
static int
sni_client_hello_cb(SSL *ssl, int *alert, void *arg)
{
	struct sni_peek		*sp = SSL_get_app_data(ssl);

	(void)arg;
	*alert = SSL_AD_INTERNAL_ERROR;
	if (sp == NULL)
		return SSL_CLIENT_HELLO_ERROR;
	sp->looked = 1;
	free(sp->name);
	if (sni_hello_look(ssl, &sp->name, &sp->ech) == -1)
		sp->bad = 1;
	return SSL_CLIENT_HELLO_ERROR;
}

/*
 * OpenSSL drops extensions it does not know before the ClientHello
 * callback runs: neither SSL_client_hello_get1_extensions_present() nor
 * SSL_client_hello_get0_ext() sees them. So every extension that hides
 * the server name is registered as a custom extension (no callbacks:
 * nothing is parsed or sent back), unless this OpenSSL knows it natively,
 * in which case it is listed anyway.
 */
int
sni_ctx_add_ech(SSL_CTX *ctx)
{
	unsigned	ext;

	for (ext = SNI_EXT_ECH_DRAFT_FIRST; ext <= SNI_EXT_ESNI; ext++) {
		if (!sni_ech_ext((int)ext) || SSL_extension_supported(ext))
			continue;
		if (SSL_CTX_add_custom_ext(ctx, ext, SSL_EXT_CLIENT_HELLO,
		    NULL, NULL, NULL, NULL, NULL) != 1)
			return -1;
	}
	return 0;
}

SSL_CTX *
sni_ctx_new(void)
{
	SSL_CTX		*ctx;

	ctx = SSL_CTX_new(TLS_server_method());
	if (ctx == NULL)
		return NULL;
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_client_hello_cb(ctx, sni_client_hello_cb, NULL);
	if (sni_ctx_add_ech(ctx) == -1) {
		SSL_CTX_free(ctx);
		return NULL;
	}
	return ctx;
}

struct sni_peek *
sni_peek_new(SSL_CTX *ctx)
{
	struct sni_peek	*sp;

	sp = calloc(1, sizeof(*sp));
	if (sp == NULL)
		return NULL;
	sp->result = SNI_MORE;
	sp->ssl = SSL_new(ctx);
	sp->rbio = BIO_new(BIO_s_mem());
	sp->wbio = BIO_new(BIO_s_mem());
	if (sp->ssl == NULL || sp->rbio == NULL || sp->wbio == NULL)
		goto fail;
	/* An empty memory BIO means "try again", not end of file. */
	BIO_set_mem_eof_return(sp->rbio, -1);
	SSL_set_bio(sp->ssl, sp->rbio, sp->wbio);
	SSL_set_app_data(sp->ssl, sp);
	SSL_set_accept_state(sp->ssl);
	return sp;
fail:
	/* Not yet attached to the SSL, so freed on their own. */
	BIO_free(sp->rbio);
	BIO_free(sp->wbio);
	SSL_free(sp->ssl);
	free(sp);
	ERR_clear_error();
	return NULL;
}

/* Drop whatever OpenSSL wrote (only ever an alert). */
static void
sni_drain(struct sni_peek *sp)
{
	if (sp->wbio != NULL)
		(void)BIO_reset(sp->wbio);
}

/* Settle on a result and let go of the SSL object and its buffers. */
static void
sni_peek_finish(struct sni_peek *sp, enum sni_result r)
{
	sp->result = r;
	if (r != SNI_DONE) {
		free(sp->name);
		sp->name = NULL;
		sp->ech = 0;
	}
	SSL_free(sp->ssl);
	sp->ssl = NULL;
	sp->rbio = sp->wbio = NULL;
	/* Leave no error behind for the next user of this thread's queue. */
	ERR_clear_error();
}

enum sni_result
sni_peek_feed(struct sni_peek *sp, const unsigned char *buf, size_t len)
{
	int	rc, err;

	if (sp->result != SNI_MORE)
		return sp->result;
	if (len == 0)
		return SNI_MORE;
	if (sp->total == 0 && buf[0] != SNI_CONTENT_HANDSHAKE) {
		sni_peek_finish(sp, SNI_NOT_TLS);
		return sp->result;
	}
	if (len > SG_CLIENTHELLO_MAX - sp->total ||
	    BIO_write(sp->rbio, buf, (int)len) != (int)len) {
		sni_peek_finish(sp, SNI_ERROR);
		return sp->result;
	}
	sp->total += len;
	rc = SSL_do_handshake(sp->ssl);
	err = SSL_get_error(sp->ssl, rc);
	sni_drain(sp);
	if (sp->looked)
		sni_peek_finish(sp, sp->bad ? SNI_ERROR : SNI_DONE);
	else if (rc <= 0 && err == SSL_ERROR_WANT_READ)
		ERR_clear_error();
	else
		sni_peek_finish(sp, SNI_ERROR);
	return sp->result;
}

const char *
sni_peek_name(const struct sni_peek *sp)
{
	return sp->result == SNI_DONE ? sp->name : NULL;
}

int
sni_peek_ech(const struct sni_peek *sp)
{
	return sp->result == SNI_DONE && sp->ech;
}

void
sni_peek_free(struct sni_peek *sp)
{
	if (sp == NULL)
		return;
	SSL_free(sp->ssl);
	free(sp->name);
	free(sp);
}
