/*
 * Shared-secret authentication of the handshake (auth.c), on when the
 * context's auth.key_file names a key.
 *
 * Before any HELLO, so before a fabric address, a memory key or memory is
 * given, each side proves it holds the key:
 *
 *   connecter -> binder   AUTH {nc, 0}
 *   binder -> connecter   AUTH {nb, HMAC(key, "binder"    | nc | nb)}
 *   connecter -> binder   AUTH {nc, HMAC(key, "connecter" | nc | nb)}, HELLO
 *   binder -> connecter   HELLO (or REJECT)
 *
 * nc and nb are 32 bytes from the kernel's CSPRNG (libsodium's
 * randombytes), fresh for every handshake, so no proof can be replayed;
 * the two labels keep one side's proof from being reflected as the
 * other's.  MACs are compared in constant time.  A side that finds the
 * other's proof wrong refuses with RMQ_EAUTH.  This authenticates peers;
 * it neither encrypts nor protects what follows from an attacker who can
 * rewrite packets on the path (rmq(7), SECURITY).
 */
#ifndef RMQ_AUTH_H
#define RMQ_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire.h"

struct rmq_socket;

enum rmq_auth_step {
	RMQ_AUTH_START = 0, /* nothing exchanged yet */
	RMQ_AUTH_WANT,      /* our nonce went: the peer's proof next */
	RMQ_AUTH_DONE,      /* proven: the HELLO may come */
};

/* One handshake's. */
struct rmq_auth {
	int     step; /* RMQ_AUTH_* */
	uint8_t mine[RMQ_AUTH_NONCE];
	uint8_t theirs[RMQ_AUTH_NONCE];
};

/* Does s authenticate its peers? */
bool rmq_auth_on(const struct rmq_socket *s);

/* Connecter: our first frame (our nonce) into b; its length. */
size_t rmq_auth_start(struct rmq_socket *s, struct rmq_auth *a, uint8_t *b);
/*
 * Connecter: a frame from the binder before its HELLO, while our first
 * went and the binder's proof has not come (a->step RMQ_AUTH_WANT).  An
 * AUTH whose proof holds: our proof is written to fd, 1 (then send the
 * HELLO).  A REJECT: 0, for the caller to read.  Else -RMQ_EAUTH (a REJECT
 * written to fd) or -RMQ_EPROTO, with reason.
 */
int  rmq_auth_connecter(struct rmq_socket *s, struct rmq_auth *a, int fd,
                        int kind, const uint8_t *body, size_t len,
                        char *reason, size_t rl);
/*
 * Binder: each frame of a pending handshake before its HELLO is taken.
 * 0: it is the HELLO and may be taken; 1: an AUTH step, done (our answer
 * written to fd): read on; else -RMQ_EAUTH or -RMQ_EPROTO, with reason,
 * for the caller to send as a REJECT.
 */
int  rmq_auth_binder(struct rmq_socket *s, struct rmq_auth *a, int fd,
                     int kind, const uint8_t *body, size_t len,
                     char *reason, size_t rl);

#endif /* RMQ_AUTH_H */
