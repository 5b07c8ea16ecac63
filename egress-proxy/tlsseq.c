/*
 * tlsseq.c: every ClientHello of a tunnel checked, until the server's
 * ServerHello; see tlsseq.h.
 *
 * RFC 8446 5.1, the record layer (TLSPlaintext):
 *
 *   struct {
 *       ContentType type;            change_cipher_spec(20), alert(21),
 *                                    handshake(22), application_data(23)
 *       ProtocolVersion legacy_record_version;     0x03 0x0N
 *       uint16 length;                             <= 2^14
 *       opaque fragment[TLSPlaintext.length];
 *   } TLSPlaintext;
 *
 * and 4, a handshake message inside the handshake records (one message
 * may span records; records of another type may not come in between):
 *
 *   struct {
 *       HandshakeType msg_type;      client_hello(1), server_hello(2)
 *       uint24 length;
 *       select (msg_type) { ... };
 *   } Handshake;
 *
 *   struct {                         (server_hello; HelloRetryRequest is a
 *       ProtocolVersion legacy_version;    server_hello whose random is
 *       Random random;                     SHA-256("HelloRetryRequest"))
 *       ...
 *   } ServerHello;
 *
 * Both ways are read as a stream of records through a bounded cursor.
 * The caller shows all bytes it has not cleared; what was cleared is gone
 * from the front, so each side keeps its parse position relative to the
 * first uncleared byte and moves it back by what it clears.
 */
#include <stdlib.h>
#include <string.h>

#include "sglimits.h"
#include "sni.h"
#include "tlsseq.h"

#define TLSSEQ_CT_CCS		20
#define TLSSEQ_CT_ALERT		21
#define TLSSEQ_CT_HANDSHAKE	22
#define TLSSEQ_CT_APPDATA	23
#define TLSSEQ_HS_CLIENT_HELLO	1
#define TLSSEQ_HS_SERVER_HELLO	2
#define TLSSEQ_HDR		5	/* record header */
#define TLSSEQ_HS_HDR		4	/* handshake message header */
#define TLSSEQ_SH_LOOK		(TLSSEQ_HS_HDR + 2 + 32) /* to the random */

/* SHA-256("HelloRetryRequest"), the random of a HelloRetryRequest. */
static const unsigned char tlsseq_hrr_random[32] = {
	0xcf, 0x21, 0xad, 0x74, 0xe5, 0x9a, 0x61, 0x11,
	0xbe, 0x1d, 0x8c, 0x02, 0x1e, 0x65, 0xb8, 0x91,
	0xc2, 0xa2, 0x11, 0x16, 0x7a, 0xbb, 0x8c, 0x5e,
	0x07, 0x9e, 0x09, 0xe2, 0xc8, 0xa8, 0x33, 0x9c
};

/* A handshake message being gathered from one or more records. */
struct tlsseq_msg {
	unsigned char	head[TLSSEQ_SH_LOOK];	/* its first bytes */
	size_t		have;			/* bytes of it seen */
	size_t		total;			/* header + body, once known */
};

/* One direction's parse position. */
struct tlsseq_side {
	size_t			scan;	/* next record header, from buf[0] */
	size_t			start;	/* first record of msg, from buf[0] */
	struct tlsseq_msg	msg;	/* a message in progress */
	size_t			seen;	/* bytes before the ServerHello */
};

struct tlsseq {
	SSL_CTX			*ctx;
	struct host		 expected;
	struct tlsseq_side	 client;
	struct tlsseq_side	 server;
	enum sg_reason		 reason;	/* set on refusal */
	int			 refused;
	int			 done;
	char			*name;		/* SNI of a refused hello */
	unsigned		 hellos;
	unsigned		 retries;
};

/* A record header read through a bounded cursor. */
struct tlsseq_rec {
	unsigned	type;
	size_t		len;		/* payload */
};

static int	tlsseq_rec_head(const unsigned char *, size_t, size_t,
		    struct tlsseq_rec *);
static enum tlsseq_result tlsseq_refuse(struct tlsseq *, enum sg_reason,
		    const char *);
static size_t	tlsseq_msg_take(struct tlsseq_msg *, const unsigned char *,
		    size_t);
static enum tlsseq_result tlsseq_check_hello(struct tlsseq *,
		    const unsigned char *, size_t);
static int	tlsseq_client_record(struct tlsseq *, const unsigned char *,
		    size_t, const struct tlsseq_rec *, size_t *);
static int	tlsseq_server_record(struct tlsseq *, const unsigned char *,
		    const struct tlsseq_rec *);

struct tlsseq *
tlsseq_new(SSL_CTX *ctx, const struct host *expected)
{
	struct tlsseq	*ts;

	if ((ts = calloc(1, sizeof(*ts))) == NULL)
		return NULL;
	ts->ctx = ctx;
	ts->expected = *expected;
	return ts;
}

void
tlsseq_free(struct tlsseq *ts)
{
	if (ts == NULL)
		return;
	free(ts->name);
	free(ts);
}

/*
 * The record header at buf[off]: 1 when the whole record is there, 0 when
 * more bytes are needed, -1 when it cannot be a TLS record.
 */
static int
tlsseq_rec_head(const unsigned char *buf, size_t len, size_t off,
    struct tlsseq_rec *r)
{
	if (len - off < TLSSEQ_HDR)
		return 0;
	r->type = buf[off];
	r->len = ((size_t)buf[off + 3] << 8) | buf[off + 4];
	if (buf[off + 1] != 0x03 || r->len > TLSSEQ_RECORD_MAX)
		return -1;
	if (r->type < TLSSEQ_CT_CCS || r->type > TLSSEQ_CT_APPDATA)
		return -1;
	return len - off - TLSSEQ_HDR >= r->len ? 1 : 0;
}

static enum tlsseq_result
tlsseq_refuse(struct tlsseq *ts, enum sg_reason r, const char *name)
{
	ts->refused = 1;
	ts->reason = r;
	free(ts->name);
	ts->name = name != NULL ? strdup(name) : NULL;
	return TLSSEQ_REFUSE;
}

/*
 * Add up to n payload bytes to a message in progress; returns how many
 * belong to it (the rest start the next message).
 */
static size_t
tlsseq_msg_take(struct tlsseq_msg *m, const unsigned char *p, size_t n)
{
	size_t	take, i;

	for (i = 0; i < n && m->have < TLSSEQ_HS_HDR; i++)
		m->head[m->have++] = p[i];
	if (m->have == TLSSEQ_HS_HDR && m->total == 0)
		m->total = TLSSEQ_HS_HDR + (((size_t)m->head[1] << 16) |
		    ((size_t)m->head[2] << 8) | m->head[3]);
	if (m->total == 0)
		return i;
	take = n - i;
	if (take > m->total - m->have)
		take = m->total - m->have;
	if (m->have < TLSSEQ_SH_LOOK)
		memcpy(m->head + m->have, p + i, m->have + take <
		    TLSSEQ_SH_LOOK ? take : TLSSEQ_SH_LOOK - m->have);
	m->have += take;
	return i + take;
}

enum sg_reason
tlsseq_name_reason(const struct host *expected, const char *name)
{
	struct host		 sni;
	const char		*cause;

	if (name == NULL)	/* clients send no SNI for IP addresses */
		return expected->type == HOST_DNS ?
		    SG_REASON_SNI_MISSING : SG_REASON_NONE;
	/* RFC 6066 3: ASCII; UTS #46 would map what the server gets raw. */
	if (!host_is_ascii(name, strlen(name)))
		return SG_REASON_SNI_INVALID;
	if (host_normalize(name, strlen(name), &sni, &cause) == -1)
		return SG_REASON_SNI_INVALID;
	return host_equal(&sni, expected) ? SG_REASON_NONE :
	    SG_REASON_SNI_MISMATCH;
}

/* A whole ClientHello in records buf[0..len): OpenSSL reads it. */
static enum tlsseq_result
tlsseq_check_hello(struct tlsseq *ts, const unsigned char *buf, size_t len)
{
	struct sni_peek	*sp;
	enum sni_result	 r;
	enum sg_reason	 why;
	const char	*name;

	if ((sp = sni_peek_new(ts->ctx)) == NULL)
		return tlsseq_refuse(ts, SG_REASON_SNI_INVALID, NULL);
	r = sni_peek_feed(sp, buf, len);
	name = sni_peek_name(sp);
	if (r != SNI_DONE)
		why = SG_REASON_SNI_INVALID;
	else if (sni_peek_ech(sp))
		why = SG_REASON_ECH;
	else
		why = tlsseq_name_reason(&ts->expected, name);
	if (why != SG_REASON_NONE) {
		tlsseq_refuse(ts, why, name);
		sni_peek_free(sp);
		return TLSSEQ_REFUSE;
	}
	sni_peek_free(sp);
	ts->hellos++;
	return TLSSEQ_MORE;
}

/*
 * One whole client record at buf[off]. Returns 0 and sets *clear (bytes
 * from buf[0] that may go) when it is fine, -1 when refused.
 */
static int
tlsseq_client_record(struct tlsseq *ts, const unsigned char *buf,
    size_t off, const struct tlsseq_rec *r, size_t *clear)
{
	struct tlsseq_side	*s = &ts->client;
	struct tlsseq_msg	*m = &s->msg;
	const unsigned char	*p = buf + off + TLSSEQ_HDR;
	size_t			 end = off + TLSSEQ_HDR + r->len, used;

	if (r->type != TLSSEQ_CT_HANDSHAKE) {
		/* Nothing may come between the records of one message. */
		if (m->have > 0 || (r->type == TLSSEQ_CT_APPDATA &&
		    ts->hellos == 0) || (r->type == TLSSEQ_CT_CCS &&
		    (r->len != 1 || p[0] != 1))) {
			tlsseq_refuse(ts, SG_REASON_NOT_TLS, NULL);
			return -1;
		}
		*clear = end;
		return 0;
	}
	if (m->have == 0)
		s->start = off;		/* a ClientHello starts here */
	if (r->len == 0 || end - s->start > SG_CLIENTHELLO_MAX) {
		tlsseq_refuse(ts, SG_REASON_SNI_INVALID, NULL);
		return -1;
	}
	used = tlsseq_msg_take(m, p, r->len);
	if ((m->have >= 1 && m->head[0] != TLSSEQ_HS_CLIENT_HELLO) ||
	    (m->total > 0 && m->total > SG_CLIENTHELLO_MAX) ||
	    used != r->len) {
		/* Not a ClientHello, too long, or bytes after it. */
		tlsseq_refuse(ts, SG_REASON_SNI_INVALID, NULL);
		return -1;
	}
	if (m->total == 0 || m->have < m->total)
		return 0;		/* it goes on in the next record */
	memset(m, 0, sizeof(*m));
	if (tlsseq_check_hello(ts, buf + s->start, end - s->start) ==
	    TLSSEQ_REFUSE)
		return -1;
	*clear = end;
	return 0;
}

enum tlsseq_result
tlsseq_client(struct tlsseq *ts, const unsigned char *buf, size_t len,
    size_t *ok)
{
	struct tlsseq_side	*s = &ts->client;
	struct tlsseq_rec	 r;
	size_t			 clear = 0;
	int			 rc;

	*ok = 0;
	if (ts->refused)
		return TLSSEQ_REFUSE;
	while ((rc = tlsseq_rec_head(buf, len, s->scan, &r)) == 1) {
		if (tlsseq_client_record(ts, buf, s->scan, &r, &clear) == -1)
			return TLSSEQ_REFUSE;
		s->scan += TLSSEQ_HDR + r.len;
	}
	if (rc == -1)
		return tlsseq_refuse(ts, SG_REASON_NOT_TLS, NULL);
	if (s->scan - clear > SG_CLIENTHELLO_MAX)
		return tlsseq_refuse(ts, SG_REASON_SNI_INVALID, NULL);
	s->scan -= clear;
	if (s->msg.have > 0)
		s->start -= clear;
	*ok = clear;
	return TLSSEQ_MORE;
}

/*
 * One whole server record: 1 when its ServerHello came (done), 0 when it
 * may go on (a HelloRetryRequest, an alert, ChangeCipherSpec), -1 when it
 * is refused.
 */
static int
tlsseq_server_record(struct tlsseq *ts, const unsigned char *p,
    const struct tlsseq_rec *r)
{
	struct tlsseq_msg	*m = &ts->server.msg;
	size_t			 used = 0, n;

	if (r->type == TLSSEQ_CT_ALERT || r->type == TLSSEQ_CT_CCS)
		return m->have == 0 ? 0 : -1;
	if (r->type != TLSSEQ_CT_HANDSHAKE || r->len == 0)
		return -1;
	while (used < r->len) {
		n = tlsseq_msg_take(m, p + used, r->len - used);
		used += n;
		if (m->have >= 1 && m->head[0] != TLSSEQ_HS_SERVER_HELLO)
			return -1;
		if (m->have < TLSSEQ_SH_LOOK && (m->total == 0 ||
		    m->have < m->total))
			return 0;	/* the rest comes in the next record */
		if (m->total < TLSSEQ_SH_LOOK)
			return -1;	/* too short to hold a random */
		if (memcmp(m->head + TLSSEQ_HS_HDR + 2, tlsseq_hrr_random,
		    sizeof(tlsseq_hrr_random)) != 0)
			return 1;	/* a ServerHello: the choice is made */
		if (m->have < m->total)
			return 0;	/* the rest of the retry request */
		ts->retries++;
		memset(m, 0, sizeof(*m));
	}
	return 0;
}

enum tlsseq_result
tlsseq_server(struct tlsseq *ts, const unsigned char *buf, size_t len,
    size_t *ok)
{
	struct tlsseq_side	*s = &ts->server;
	struct tlsseq_rec	 r;
	size_t			 clear = 0;
	int			 rc, sh;

	*ok = 0;
	if (ts->refused)
		return TLSSEQ_REFUSE;
	if (ts->done) {
		*ok = len;
		return TLSSEQ_DONE;
	}
	while ((rc = tlsseq_rec_head(buf, len, s->scan, &r)) == 1) {
		sh = tlsseq_server_record(ts, buf + s->scan + TLSSEQ_HDR, &r);
		if (sh == -1)
			return tlsseq_refuse(ts, SG_REASON_NOT_TLS, NULL);
		s->scan += TLSSEQ_HDR + r.len;
		s->seen += TLSSEQ_HDR + r.len;
		if (sh == 1) {
			/* A ServerHello to no checked ClientHello is forged. */
			if (ts->hellos == 0)
				return tlsseq_refuse(ts, SG_REASON_NOT_TLS,
				    NULL);
			ts->done = 1;
			*ok = len;
			return TLSSEQ_DONE;
		}
		if (ts->server.msg.have == 0)
			clear = s->scan;
	}
	if (rc == -1 || s->seen > SG_CLIENTHELLO_MAX)
		return tlsseq_refuse(ts, SG_REASON_NOT_TLS, NULL);
	s->scan -= clear;
	*ok = clear;
	return TLSSEQ_MORE;
}

enum sg_reason
tlsseq_reason(const struct tlsseq *ts)
{
	return ts->refused ? ts->reason : SG_REASON_NONE;
}

const char *
tlsseq_name(const struct tlsseq *ts)
{
	return ts->name;
}

unsigned
tlsseq_hellos(const struct tlsseq *ts)
{
	return ts->hellos;
}

unsigned
tlsseq_retries(const struct tlsseq *ts)
{
	return ts->retries;
}
