/*
 * What a path is to the engine: the ops row each path in lib/paths/
 * implements, and what it is handed.  The core (conn/, rxq.c, xfer.c)
 * calls paths only through these rows; lib/paths/path.h lists them.
 */
#ifndef RMQ_PATH_OPS_H
#define RMQ_PATH_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rmq.h"
#include "wire.h"

struct rmq_peer;
struct rmq_rxent;
struct rmq_slab;
struct rmq_socket;
struct rmq_waiter;

/*
 * An internal send flag beside RMQ_DONTWAIT: the caller's buffer may not
 * be used once send returns, so a rendezvous keeps a copy instead of
 * waiting for its FIN (a publisher's copies; waits for credits and tx
 * slots stay as the caller's flags say).
 */
#define RMQ_XFER_F_OWN 0x100

/* A message to send: a buffer, or a zero-copy message. */
struct rmq_out {
	const void *buf;
	size_t      len;
	rmq_msg    *msg; /* non-NULL: zero-copy, ownership passes on success */
};

/* A fabric message as it arrived, its header decoded. */
struct rmq_rx {
	const struct rmq_hdr *h;
	uint8_t              *ext;     /* what follows the header */
	uint8_t              *payload; /* DATA: the payload */
	struct rmq_slab      *sl;      /* the slab it lies in */
};

struct rmq_path_ops {
	int         id;       /* RMQ_PATH_* */
	const char *name;     /* "ring": config values, rmq_path_name() */
	uint32_t    rx_types; /* RMQ_MT_* it receives: bit (1u << type) */
	uint32_t    imm_kind; /* RMQ_IMM_* it receives as CQ data; 0: none */

	/*
	 * Can it carry len bytes to p?  0, or -RMQ_EMSGSIZE / -RMQ_ENOTSUP
	 * with why filled in.  NULL: any size the table gives it.
	 */
	int  (*can_carry)(struct rmq_socket *s, const struct rmq_peer *p,
	                  size_t len, char *why, size_t whylen);
	/*
	 * Could it take len bytes to p now, without waiting for room of its
	 * own (the ring's slots)?  By size, a row that cannot is passed
	 * over for the next one.  NULL: always.
	 */
	bool (*has_room)(struct rmq_socket *s, const struct rmq_peer *p,
	                 size_t len);
	/*
	 * Send one message to p (credits and the socket's bound already
	 * checked).  0 once it is on its way and accounted; then a
	 * message in o belongs to the engine.  w: the caller's waiter.
	 */
	int  (*send)(struct rmq_socket *s, struct rmq_peer *p,
	             const struct rmq_out *o, uint32_t msgid, int flags,
	             struct rmq_waiter *w);
	/* A fabric message of one of rx_types from p (credits taken). */
	void (*on_rx)(struct rmq_socket *s, struct rmq_peer *p,
	              const struct rmq_rx *rx);
	/* Remote CQ data of imm_kind: a peer's write landed. */
	void (*on_imm)(struct rmq_socket *s, uint32_t imm);
	/*
	 * Move n <= e->len bytes of e's payload into dst (and tell the
	 * sender).  NULL: the payload is in e->data or e->heap already.
	 */
	int  (*fetch)(struct rmq_socket *s, struct rmq_rxent *e, void *dst,
	              size_t n);
	/* e will never be fetched: tell its sender why (err, an errno).  May be
	 * NULL. */
	void (*cancel)(struct rmq_socket *s, struct rmq_rxent *e, int err);
	/* e is being freed: give back what it holds.  May be NULL. */
	void (*release)(struct rmq_socket *s, struct rmq_rxent *e);
	/* p died: fail what is in flight to or from it; its delivered
	 * messages stay.  May be NULL. */
	void (*peer_gone)(struct rmq_socket *s, struct rmq_peer *p);
	/* p said goodbye: is a transfer of ours to it still under way (its
	 * completion or FIN may trail the goodbye)?  May be NULL. */
	bool (*peer_busy)(struct rmq_socket *s, const struct rmq_peer *p);
	/* p is being freed: free this path's state for it.  May be NULL. */
	void (*peer_fini)(struct rmq_socket *s, struct rmq_peer *p);
	/* Handshake: add our fields for p to the HELLO we send; take p's
	 * from the one it sent (0, or -error with why).  May be NULL. */
	void (*hello_out)(struct rmq_socket *s, struct rmq_peer *p,
	                  struct rmq_hello *h);
	int  (*hello_in)(struct rmq_socket *s, struct rmq_peer *p,
	                 const struct rmq_hello *h, char *why, size_t whylen);
	/* The socket's endpoint opened; it closes (fail what is in flight);
	 * its endpoint closed (free).  Rows of a family may share these:
	 * they are idempotent.  May be NULL. */
	int  (*sock_init)(struct rmq_socket *s);
	void (*sock_close)(struct rmq_socket *s);
	void (*sock_fini)(struct rmq_socket *s);
};

#endif /* RMQ_PATH_OPS_H */
