/*
 * The out-of-band control channel (ctrl.c).  Every connection has a
 * stream socket (TCP at HOST:PORT, or an abstract Unix socket for
 * shm://NAME) beside its fabric path.  It carries the handshake (magic,
 * wire version, pattern, provider, fabric address, credits, limits, and
 * what each path adds), the goodbye, and tells at once when a peer dies
 * (EOF).  Data never goes over it.
 *
 * The binding side accepts without blocking: an accepted connection waits
 * as a pending handshake until its HELLO is complete or handshake_ms
 * passes, so a slow or garbage client cannot stall the socket.
 */
#ifndef RMQ_CTRL_H
#define RMQ_CTRL_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>

#include "conn/auth.h"
#include "progress.h"
#include "wire.h"

struct rmq_addr;
union rmq_inaddr;
struct rmq_peer;
struct rmq_socket;

struct rmq_listener {
	struct rmq_listener *next;
	struct rmq_source    src;
	char                 endpoint[256]; /* as RMQ_LAST_ENDPOINT says */
	char                 given[256];    /* as given to rmq_bind */
};

/* An accepted control connection whose HELLO has not arrived yet. */
struct rmq_pending {
	struct rmq_pending *next;
	struct rmq_source   src;
	int64_t             deadline;
	size_t              have;
	uint8_t             buf[RMQ_CTRL_HDR_SIZE + RMQ_CTRL_BODY_MAX];
	char                name[64];
	struct rmq_auth     auth; /* with auth.key_file: its proofs */
};

struct rmq_dialer;

/* The socket's. */
struct rmq_ctrl {
	struct rmq_listener *listeners;
	struct rmq_pending  *pendings;   /* newest first */
	int                  npendings;
	struct rmq_timer     timer; /* handshake deadlines, closing peers */
	struct rmq_dialer   *dialers;    /* its connects (dial.c) */
	struct rmq_timer     dial_timer; /* their next tries */
	uint32_t             dials_seed; /* their jitter */
};

void rmq_ctrl_init(struct rmq_socket *s);
/* Listen at a (sin: resolved, unless a Unix name); accepts as progress
 * polls.  Sets the socket's last endpoint. */
int  rmq_ctrl_listen(struct rmq_socket *s, const struct rmq_addr *a,
                     const union rmq_inaddr *sin, const char *given);
bool rmq_ctrl_listening(const struct rmq_socket *s);
/* The handshake on a dialled channel (fd is consumed): a LIVE peer, in
 * *pp (held: rmq_peer_release it). */
int  rmq_ctrl_handshake(struct rmq_socket *s, const struct rmq_addr *a,
                        int fd, int64_t deadline, struct rmq_peer **pp);
/*
 * The binder's answer to our HELLO, read from fd: a LIVE peer p watching
 * fd (0), or why not (a REJECT's code, a malformed or refused HELLO),
 * logged at level; then fd is still the caller's and p still NEW.
 */
int  rmq_ctrl_answer(struct rmq_socket *s, struct rmq_peer *p, int fd,
                     int kind, const uint8_t *b, size_t body, int level);
/* Keepalives (timeouts.keepalive_ms) and no Nagle on a TCP control
 * channel. */
void rmq_ctrl_tune(const struct rmq_socket *s, int fd);
/* Stop listening at endpoint (as bound, or as RMQ_LAST_ENDPOINT shows
 * it): 0, or -ENOENT. */
int  rmq_ctrl_unlisten(struct rmq_socket *s, const char *endpoint);
/* Tell p how many messages we sent it (BYE) and, if it reads it, how many
 * of its we took (RMQ_BYE_NO_TOOK: we cannot say, a disconnect's are still
 * coming and stay readable); it acknowledges when all of ours are in
 * (chan.bye_acked). */
void rmq_ctrl_bye(struct rmq_socket *s, struct rmq_peer *p, uint64_t took);
/* At close: tell every peer how many messages we sent it and how many of
 * its we took (those still queued go unread); each acknowledges when all
 * of ours are in. */
void rmq_ctrl_bye_all(struct rmq_socket *s);
/* Peers we said goodbye to that have not acknowledged it (nor gone); with
 * owed, only those we sent messages to (which may be lost). */
int  rmq_ctrl_byes_unacked(struct rmq_socket *s, bool owed);
/* A pattern frame (RMQ_CK_PAT) to p: 0, or -error (p is then failed). */
int  rmq_ctrl_send_pat(struct rmq_socket *s, struct rmq_peer *p,
                       const uint8_t *body, size_t len);
/* Listeners and pending handshakes go. */
void rmq_ctrl_close(struct rmq_socket *s);

#endif /* RMQ_CTRL_H */
