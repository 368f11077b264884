/*
 * Shared-secret authentication of the handshake (auth.h): the key file,
 * and the challenge and response, with libsodium's HMAC-SHA-256.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "conn/auth.h"
#include "ctx.h"
#include "socket.h"
#include "util.h"

static const char binder_label[]    = "librmq auth 1 binder";
static const char connecter_label[] = "librmq auth 1 connecter";

bool
rmq_auth_on(const struct rmq_socket *s)
{
	return s->ctx->auth_key != NULL;
}

/* HMAC(key, label | connecter's nonce | binder's nonce). */
static void
proof(const struct rmq_socket *s, const char *label, const uint8_t *nc,
      const uint8_t *nb, uint8_t mac[RMQ_AUTH_MAC])
{
	crypto_auth_hmacsha256_state st;

	crypto_auth_hmacsha256_init(&st, s->ctx->auth_key,
	                            s->ctx->auth_key_len);
	crypto_auth_hmacsha256_update(&st, (const uint8_t *) label,
	                              strlen(label) + 1);
	crypto_auth_hmacsha256_update(&st, nc, RMQ_AUTH_NONCE);
	crypto_auth_hmacsha256_update(&st, nb, RMQ_AUTH_NONCE);
	crypto_auth_hmacsha256_final(&st, mac);
	sodium_memzero(&st, sizeof(st));
}

/* Our nonce and our proof under label, to fd. */
static int
send_proof(const struct rmq_socket *s, const char *label, const uint8_t *nc,
           const uint8_t *nb, const uint8_t *ours, int fd, char *reason,
           size_t rl)
{
	uint8_t b[RMQ_CTRL_HDR_SIZE + RMQ_AUTH_NONCE + RMQ_AUTH_MAC];
	uint8_t mac[RMQ_AUTH_MAC];
	int     rc;

	proof(s, label, nc, nb, mac);
	rc = rmq_write_all(fd, b, rmq_ctrl_encode_auth(b, ours, mac), 1000);
	if (rc != 0)
		snprintf(reason, rl, "cannot send our proof");
	return rc;
}

/* Counted; the peer told why as a REJECT on fd (-1: the caller does). */
static int
refuse(struct rmq_socket *s, int fd, const char *why, char *reason,
       size_t rl)
{
	uint8_t           b[RMQ_CTRL_HDR_SIZE + 4 + 200];
	struct rmq_reject r = {.code = RMQ_EAUTH};

	snprintf(r.reason, sizeof(r.reason), "%s", why);
	if (fd >= 0)
		(void) rmq_write_all(fd, b, rmq_ctrl_encode_reject(b, &r),
		                     1000);
	snprintf(reason, rl, "%s", why);
	s->stats.auth_failures++;
	return -RMQ_EAUTH;
}

size_t
rmq_auth_start(struct rmq_socket *s, struct rmq_auth *a, uint8_t *b)
{
	static const uint8_t none[RMQ_AUTH_MAC];

	RMQ_UNUSED(s);
	randombytes_buf(a->mine, sizeof(a->mine));
	a->step = RMQ_AUTH_WANT;
	return rmq_ctrl_encode_auth(b, a->mine, none);
}

int
rmq_auth_connecter(struct rmq_socket *s, struct rmq_auth *a, int fd,
                   int kind, const uint8_t *body, size_t len, char *reason,
                   size_t rl)
{
	uint8_t mac[RMQ_AUTH_MAC], want[RMQ_AUTH_MAC];
	int     rc;

	if (kind == RMQ_CK_REJECT)
		return 0;
	if (kind != RMQ_CK_AUTH ||
	    rmq_ctrl_decode_auth(a->theirs, mac, body, len) != 0) {
		snprintf(reason, rl, "expected the binder's AUTH");
		return -RMQ_EPROTO;
	}
	proof(s, binder_label, a->mine, a->theirs, want);
	if (sodium_memcmp(mac, want, RMQ_AUTH_MAC) != 0)
		return refuse(s, fd,
		              "the binder's proof is wrong: it holds another "
		              "key", reason, rl);
	rc = send_proof(s, connecter_label, a->mine, a->theirs, a->mine, fd,
	                reason, rl);
	if (rc != 0)
		return rc;
	a->step = RMQ_AUTH_DONE;
	return 1;
}

int
rmq_auth_binder(struct rmq_socket *s, struct rmq_auth *a, int fd, int kind,
                const uint8_t *body, size_t len, char *reason, size_t rl)
{
	uint8_t nonce[RMQ_AUTH_NONCE], mac[RMQ_AUTH_MAC], want[RMQ_AUTH_MAC];
	int     rc;

	if (kind == RMQ_CK_HELLO) {
		if (!rmq_auth_on(s) || a->step == RMQ_AUTH_DONE)
			return 0;
		return refuse(s, -1,
		              a->step == RMQ_AUTH_START
		                  ? "authentication required (this socket has "
		                    "an auth.key_file)"
		                  : "HELLO before the proof", reason, rl);
	}
	if (kind == RMQ_CK_REJECT && a->step == RMQ_AUTH_WANT) {
		snprintf(reason, rl, "the connecter refused our proof: it "
		         "holds another key");
		s->stats.auth_failures++;
		return -RMQ_EAUTH;
	}
	if (kind != RMQ_CK_AUTH || a->step == RMQ_AUTH_DONE) {
		snprintf(reason, rl, "expected HELLO");
		return -RMQ_EPROTO;
	}
	if (!rmq_auth_on(s))
		return refuse(s, -1,
		              "this socket takes no authentication (no "
		              "auth.key_file)", reason, rl);
	if (rmq_ctrl_decode_auth(nonce, mac, body, len) != 0) {
		snprintf(reason, rl, "malformed AUTH");
		return -RMQ_EPROTO;
	}
	if (a->step == RMQ_AUTH_START) {
		memcpy(a->theirs, nonce, RMQ_AUTH_NONCE);
		randombytes_buf(a->mine, sizeof(a->mine));
		rc = send_proof(s, binder_label, a->theirs, a->mine, a->mine,
		                fd, reason, rl);
		if (rc != 0)
			return rc;
		a->step = RMQ_AUTH_WANT;
		return 1;
	}
	proof(s, connecter_label, a->theirs, a->mine, want);
	if (sodium_memcmp(mac, want, RMQ_AUTH_MAC) != 0 ||
	    sodium_memcmp(nonce, a->theirs, RMQ_AUTH_NONCE) != 0)
		return refuse(s, -1,
		              "the connecter's proof is wrong: it holds another "
		              "key", reason, rl);
	a->step = RMQ_AUTH_DONE;
	return 1;
}
