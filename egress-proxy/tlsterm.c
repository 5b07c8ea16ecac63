/* tlsterm.c: both sides of a terminated session's TLS; see tlsterm.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "sni.h"
#include "tlsseq.h"
#include "tlsterm.h"
#include "util.h"

/*
 * One upstream context: the system store plus the CAs of one ca_file as
 * its policy loaded it (by the SHA-256 of those bytes), or alone.
 */
struct tlsterm_ctx {
	char		 ca_id[65];	/* "": the system store alone */
	SSL_CTX		*ctx;
};

/*
 * An upstream SSL's session key (SSL ex data): the cache generation it
 * was made in, then "generation|ca_id|host|port" (ca_id: the SHA-256 of
 * the ca_file's bytes the policy loaded, or empty).
 */
struct tlsterm_key {
	unsigned long long	 gen;
	char			 key[];
};

/* A kept upstream session, direct-mapped by its key. */
struct tlsterm_sess {
	char		*key;		/* a tlsterm_key's key */
	SSL_SESSION	*sess;
	size_t		 size;		/* counted in tlsterm.sess_bytes */
	uint64_t	 seq;		/* when kept: the oldest goes first */
};

struct tlsterm {
	SSL_CTX			*server;
	struct tlsterm_ctx	 up[TLSTERM_CTX_MAX];
	size_t			 nup;
	struct tlsterm_sess	 sess[TLSTERM_SESSIONS_MAX];
	size_t			 sess_bytes;	/* of every kept session */
	uint64_t		 sess_seq;
	/*
	 * Bumped by every flush: a session an SSL of an earlier one gets
	 * (a TLS 1.3 ticket may come at any time after the handshake) was
	 * verified under the policy's ca_file bytes then, and is not kept.
	 */
	unsigned long long	 gen;
};

static const unsigned char tlsterm_alpn[] = "\x08http/1.1";

static int	tlsterm_key_idx = -1;	/* SSL ex data: a tlsterm_key */
static int	tlsterm_self_idx = -1;	/* SSL_CTX ex data: the tlsterm */

static int	tlsterm_hello_cb(SSL *, int *, void *);
static int	tlsterm_alpn_cb(SSL *, const unsigned char **, unsigned char *,
		    const unsigned char *, unsigned int, void *);
static SSL_CTX	*tlsterm_up_ctx(struct tlsterm *, const struct policy_ca *,
		    const char **);
static int	tlsterm_new_session(SSL *, SSL_SESSION *);
static void	tlsterm_key_free(void *, void *, CRYPTO_EX_DATA *, int, long,
		    void *);
static unsigned	tlsterm_slot(const char *);
static void	tlsterm_sess_drop(struct tlsterm *, struct tlsterm_sess *);
static void	tlsterm_sess_evict(struct tlsterm *, size_t);
static size_t	tlsterm_sess_size(SSL *, SSL_SESSION *, const char *);

static void
tlsterm_key_free(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx,
    long argl, void *argp)
{
	free(ptr);
}

struct tlsterm *
tlsterm_new(char **cause)
{
	struct tlsterm	*t = util_xcalloc(1, sizeof(*t));

	if (tlsterm_key_idx == -1)
		tlsterm_key_idx = SSL_get_ex_new_index(0, NULL, NULL, NULL,
		    tlsterm_key_free);
	if (tlsterm_self_idx == -1)
		tlsterm_self_idx = SSL_CTX_get_ex_new_index(0, NULL, NULL,
		    NULL, NULL);
	t->server = SSL_CTX_new(TLS_server_method());
	if (t->server == NULL || tlsterm_key_idx == -1 ||
	    tlsterm_self_idx == -1 ||
	    SSL_CTX_set_min_proto_version(t->server, TLS1_2_VERSION) != 1 ||
	    SSL_CTX_set1_groups_list(t->server, TLSTERM_GROUPS) != 1 ||
	    sni_ctx_add_ech(t->server) == -1) {
		util_xasprintf(cause, "cannot set up TLS termination: %s",
		    ERR_reason_error_string(ERR_get_error()));
		tlsterm_free(t);
		return NULL;
	}
	/*
	 * No resumption: a session (or ticket) made for one terminated
	 * name must never complete a handshake for another name or
	 * another sandbox, so every handshake shows a freshly checked
	 * certificate for its CONNECT host.
	 */
	SSL_CTX_set_options(t->server, SSL_OP_NO_RENEGOTIATION |
	    SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_NO_TICKET);
	SSL_CTX_set_session_cache_mode(t->server, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_num_tickets(t->server, 0);
	SSL_CTX_set_client_hello_cb(t->server, tlsterm_hello_cb, NULL);
	SSL_CTX_set_alpn_select_cb(t->server, tlsterm_alpn_cb, NULL);
	return t;
}

void
tlsterm_free(struct tlsterm *t)
{
	if (t == NULL)
		return;
	tlsterm_flush(t);
	SSL_CTX_free(t->server);
	free(t);
}

void
tlsterm_flush(struct tlsterm *t)
{
	size_t	i;

	for (i = 0; i < t->nup; i++)
		SSL_CTX_free(t->up[i].ctx);
	t->nup = 0;
	for (i = 0; i < TLSTERM_SESSIONS_MAX; i++)
		tlsterm_sess_drop(t, &t->sess[i]);
	t->gen++;
}

/* Forget a kept session (an empty slot is left as it is). */
static void
tlsterm_sess_drop(struct tlsterm *t, struct tlsterm_sess *s)
{
	SSL_SESSION_free(s->sess);
	free(s->key);
	t->sess_bytes -= s->size;
	memset(s, 0, sizeof(*s));
}

/* Past the byte bound the oldest sessions go, whatever their slot. */
static void
tlsterm_sess_evict(struct tlsterm *t, size_t more)
{
	struct tlsterm_sess	*old;
	size_t			 i;

	while (t->sess_bytes + more > TLSTERM_SESSIONS_BYTES) {
		old = NULL;
		for (i = 0; i < TLSTERM_SESSIONS_MAX; i++) {
			if (t->sess[i].sess != NULL && (old == NULL ||
			    t->sess[i].seq < old->seq))
				old = &t->sess[i];
		}
		if (old == NULL)
			return;
		tlsterm_sess_drop(t, old);
	}
}

/*
 * What a session weighs: its encoding (the leaf, a TLS 1.3 ticket of up
 * to 64 KB) plus the peer's chain, which it holds parsed, plus its key.
 */
static size_t
tlsterm_sess_size(SSL *ssl, SSL_SESSION *sess, const char *key)
{
	STACK_OF(X509)	*chain = SSL_get_peer_cert_chain(ssl);
	size_t		 n = strlen(key) + 1;
	int		 i, k;

	if ((k = i2d_SSL_SESSION(sess, NULL)) > 0)
		n += (size_t)k;
	for (i = 0; chain != NULL && i < sk_X509_num(chain); i++) {
		if ((k = i2d_X509(sk_X509_value(chain, i), NULL)) > 0)
			n += (size_t)k;
	}
	return n;
}

void
tlsterm_hello_release(struct tlsterm_hello *h)
{
	free(h->name);
	h->name = NULL;
}

/*
 * Every ClientHello of the session (a second one after a
 * HelloRetryRequest too) must name the CONNECT host, without ECH.
 */
static int
tlsterm_hello_cb(SSL *ssl, int *alert, void *arg)
{
	struct tlsterm_hello	*h = SSL_get_app_data(ssl);
	int			 ech = 0;

	*alert = SSL_AD_ACCESS_DENIED;
	if (h == NULL)
		return SSL_CLIENT_HELLO_ERROR;
	tlsterm_hello_release(h);
	if (sni_hello_look(ssl, &h->name, &ech) == -1)
		h->reason = SG_REASON_SNI_INVALID;
	else if (ech)
		h->reason = SG_REASON_ECH;
	else
		h->reason = tlsseq_name_reason(h->expected, h->name);
	return h->reason == SG_REASON_NONE ? SSL_CLIENT_HELLO_SUCCESS :
	    SSL_CLIENT_HELLO_ERROR;
}

/* ALPN: http/1.1 or nothing (a client offering only h2 gets no ALPN). */
static int
tlsterm_alpn_cb(SSL *ssl, const unsigned char **out, unsigned char *outlen,
    const unsigned char *in, unsigned int inlen, void *arg)
{
	unsigned char	*sel;

	if (SSL_select_next_proto(&sel, outlen, tlsterm_alpn,
	    sizeof(tlsterm_alpn) - 1, in, inlen) != OPENSSL_NPN_NEGOTIATED)
		return SSL_TLSEXT_ERR_NOACK;
	*out = sel;
	return SSL_TLSEXT_ERR_OK;
}

SSL *
tlsterm_accept_ssl(struct tlsterm *t, struct tlsterm_hello *h)
{
	SSL	*ssl;

	h->reason = SG_REASON_NONE;
	h->name = NULL;
	if ((ssl = SSL_new(t->server)) == NULL) {
		ERR_clear_error();
		return NULL;
	}
	SSL_set_app_data(ssl, h);
	return ssl;
}

/* The slot of a session key. */
static unsigned
tlsterm_slot(const char *s)
{
	return util_hash_str(s) % TLSTERM_SESSIONS_MAX;
}

/*
 * A new upstream session (after a verified handshake): keep it, unless
 * its SSL was made before the last flush (a reload): resuming skips the
 * certificate checks, so the session must come from a handshake
 * verified under the ca_file now in force.
 */
static int
tlsterm_new_session(SSL *ssl, SSL_SESSION *sess)
{
	struct tlsterm		*t;
	struct tlsterm_sess	*s;
	struct tlsterm_key	*k = SSL_get_ex_data(ssl, tlsterm_key_idx);
	const char		*key;
	size_t			 size;

	t = SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), tlsterm_self_idx);
	if (t == NULL || k == NULL || k->gen != t->gen ||
	    !SSL_SESSION_is_resumable(sess))
		return 0;
	key = k->key;
	if ((size = tlsterm_sess_size(ssl, sess, key)) >
	    TLSTERM_SESSIONS_BYTES / 8)
		return 0;	/* too big to keep */
	s = &t->sess[tlsterm_slot(key)];
	tlsterm_sess_drop(t, s);
	tlsterm_sess_evict(t, size);
	s->key = util_xstrdup(key);
	s->sess = sess;
	s->size = size;
	s->seq = ++t->sess_seq;
	t->sess_bytes += size;
	return 1;	/* the reference is ours now */
}

/*
 * The context for ca (NULL: the system store alone), made once from the
 * bytes its policy loaded: the file itself is never read here, so what
 * is trusted is what the policy in force digested, whenever the first
 * request comes and whatever the file holds by then.
 */
static SSL_CTX *
tlsterm_up_ctx(struct tlsterm *t, const struct policy_ca *ca,
    const char **cause)
{
	const char	*id = ca != NULL ? ca->id : "", *why = NULL;
	SSL_CTX		*ctx;
	size_t		 i;

	for (i = 0; i < t->nup; i++)
		if (strcmp(id, t->up[i].ca_id) == 0)
			return t->up[i].ctx;
	if (t->nup == TLSTERM_CTX_MAX)
		tlsterm_flush(t);
	if ((ctx = SSL_CTX_new(TLS_client_method())) == NULL ||
	    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1 ||
	    SSL_CTX_set1_groups_list(ctx, TLSTERM_GROUPS) != 1 ||
	    SSL_CTX_set_cipher_list(ctx, TLSTERM_UP_CIPHERS) != 1 ||
	    SSL_CTX_set_default_verify_paths(ctx) != 1 ||
	    (ca != NULL && policy_ca_add(SSL_CTX_get_cert_store(ctx),
	    ca->pem, ca->len, &why) == -1) || SSL_CTX_set_alpn_protos(ctx,
	    tlsterm_alpn, sizeof(tlsterm_alpn) - 1) != 0) {
		ERR_clear_error();
		SSL_CTX_free(ctx);
		*cause = why != NULL ? "cannot load the entry's ca_file" :
		    "cannot load the system trust store";
		return NULL;
	}
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT |
	    SSL_SESS_CACHE_NO_INTERNAL_STORE);
	SSL_CTX_sess_set_new_cb(ctx, tlsterm_new_session);
	SSL_CTX_set_ex_data(ctx, tlsterm_self_idx, t);
	snprintf(t->up[t->nup].ca_id, sizeof(t->up[t->nup].ca_id), "%s", id);
	t->up[t->nup].ctx = ctx;
	t->nup++;
	return ctx;
}

SSL *
tlsterm_connect_ssl(struct tlsterm *t, const struct host *h, uint16_t port,
    const struct policy_ca *ca, const char **cause)
{
	struct tlsterm_sess	*s;
	struct tlsterm_key	*k;
	SSL_CTX			*ctx;
	SSL			*ssl;
	char			*key;
	int			 ok;

	if ((ctx = tlsterm_up_ctx(t, ca, cause)) == NULL)
		return NULL;
	if ((ssl = SSL_new(ctx)) == NULL) {
		*cause = "out of memory";
		return NULL;
	}
	/* The name must be in subjectAltName: no fallback to the CN. */
	SSL_set_hostflags(ssl, X509_CHECK_FLAG_NEVER_CHECK_SUBJECT);
	if (h->type == HOST_DNS)
		ok = SSL_set_tlsext_host_name(ssl, h->name) == 1 &&
		    SSL_set1_host(ssl, h->name) == 1;
	else
		ok = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl),
		    h->name) == 1;
	util_xasprintf(&key, "%llu|%s|%s|%u", t->gen, ca ? ca->id : "",
	    h->name, port);
	k = util_xcalloc(1, sizeof(*k) + strlen(key) + 1);
	k->gen = t->gen;
	memcpy(k->key, key, strlen(key) + 1);
	free(key);
	if (!ok || SSL_set_ex_data(ssl, tlsterm_key_idx, k) != 1) {
		free(k);
		SSL_free(ssl);
		ERR_clear_error();
		*cause = "cannot set the upstream's name";
		return NULL;
	}
	s = &t->sess[tlsterm_slot(k->key)];
	if (s->key != NULL && strcmp(s->key, k->key) == 0)
		SSL_set_session(ssl, s->sess);
	return ssl;
}

enum sg_reason
tlsterm_failure(SSL *ssl, unsigned long err, char *detail, size_t size)
{
	long	v = SSL_get_verify_result(ssl);

	if (v == X509_V_OK) {
		if (err != 0)
			ERR_error_string_n(err, detail, size);
		else
			snprintf(detail, size, "handshake failed");
		return SG_REASON_UPSTREAM_TLS;
	}
	snprintf(detail, size, "%s", X509_verify_cert_error_string(v));
	switch (v) {
	case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
	case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
		return SG_REASON_UPSTREAM_SELF_SIGNED;
	case X509_V_ERR_CERT_HAS_EXPIRED:
	case X509_V_ERR_CERT_NOT_YET_VALID:
	case X509_V_ERR_ERROR_IN_CERT_NOT_BEFORE_FIELD:
	case X509_V_ERR_ERROR_IN_CERT_NOT_AFTER_FIELD:
		return SG_REASON_UPSTREAM_EXPIRED;
	case X509_V_ERR_HOSTNAME_MISMATCH:
	case X509_V_ERR_IP_ADDRESS_MISMATCH:
		return SG_REASON_UPSTREAM_NAME;
	default:
		return SG_REASON_UPSTREAM_UNTRUSTED;
	}
}
