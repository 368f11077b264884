/*
 * What a path is to the engine: the ops row each path implements (in
 * lib/paths/, or a link's own in lib/link/), and what it is handed.  The
 * core (conn/, rxq.c, select.c, xfer.c) calls paths only through these
 * rows, reached by id through the registry (lib/meson.build's
 * rmq_path_rows: a row's id, name and kind are its line there) -- a
 * socket's s->path_ops, a domain's caps.rows.
 */
#ifndef RMQ_PATH_OPS_H
#define RMQ_PATH_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rmq.h"
#include "rmq_path_rows.h"
#include "wire.h"

struct rmq_caps;
struct rmq_config;
struct rmq_peer;
struct rmq_rxent;
struct rmq_slab;
struct rmq_socket;
struct rmq_tx;
struct rmq_waiter;

/*
 * An internal send flag beside RMQ_DONTWAIT: the caller's buffer may not
 * be used once send returns, so a rendezvous keeps a copy instead of
 * waiting for its FIN (a publisher's copies; waits for credits and tx
 * slots stay as the caller's flags say).
 */
#define RMQ_XFER_F_OWN 0x100
/*
 * Another internal one: a frame after the first of its message (frames.c).
 * It takes no credit from the peer (the first took one for the message,
 * and the receiver gives none back for the rest) and it waits for what
 * it needs whatever RMQ_DONTWAIT and RMQ_SNDTIMEO say: once a message's
 * first frame has gone, the rest must, or none of it arrives.
 */
#define RMQ_XFER_F_CONT 0x200

/* Where the frames after a message's first go (frames.c): a peer, by its
 * id, and the msgid its first frame carried. */
struct rmq_frame_to {
	uint32_t peer;
	uint32_t msgid;
	bool     first; /* the message's first frame has not gone to it (a
	                 * ROUTER's routing id is not sent): the next takes
	                 * the message's credit */
};

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

/*
 * The ranges of the path table (select.c), smallest first: a RANGE row
 * (rmq_path_rows.h) carries one, up to that range's threshold
 * (thresholds.inject_max, eager_max, ring_max).
 */
enum rmq_range {
	RMQ_RANGE_NONE = 0,
	RMQ_RANGE_INJECT,
	RMQ_RANGE_EAGER,
	RMQ_RANGE_RING,
	RMQ_RANGES
};

#define RMQ_ROW_F_OWN_HOLD 0x1u /* it holds its messages back for
                                 * coalescing itself (its link's flush):
                                 * batch.c keeps out */
#define RMQ_ROW_F_COALESCE 0x2u /* its messages may be coalesced into a
                                 * batch (batch.c) */
#define RMQ_ROW_F_NO_SLOT  0x4u /* it sends without a tx slot: with none
                                 * free, its message goes alone rather
                                 * than wait to open a batch */
#define RMQ_ROW_F_STRETCH  0x8u /* it takes any size its peer allows, past
                                 * its range: where a larger range's row
                                 * cannot take a message now, it may */
#define RMQ_ROW_F_RTS_READ 0x10u /* an RTS that names no other row (no
                                  * RMQ_RTS_F_* of a row's rts_flag) is
                                  * this row's: its receiver reads it */

struct rmq_path_ops {
	unsigned    flags;    /* RMQ_ROW_F_* */
	int         range;    /* RANGE rows: RMQ_RANGE_*, the one it carries */
	int         rank;     /* LARGE rows: preference when the provider's
	                       * own (its row's rndv) cannot be used, lowest
	                       * first */
	uint32_t    rts_flag; /* the RMQ_RTS_F_* that makes an RTS this
	                       * row's (rndv.c), or 0 */
	uint32_t    rx_types; /* RMQ_MT_* it receives: bit (1u << type) */
	uint32_t    imm_kind; /* RMQ_IMM_* it receives as CQ data; 0: none */

	/*
	 * Can this provider carry it at all?  If not, *why (may be NULL)
	 * says why, for messages.  NULL: always (rmq_path_can, caps.c).
	 */
	bool (*usable)(const struct rmq_caps *c, const char **why);
	/*
	 * For rmq_info, where it is usable: whether the configuration lets
	 * it carry anything (false: no), and what it does here in a few
	 * words into buf ("" for nothing to say).  NULL: yes.
	 */
	bool (*describe)(const struct rmq_caps *c, const struct rmq_config *cfg,
	                 char *buf, size_t len);
	/*
	 * Its short way: a message small enough for it, alone, to a live
	 * peer with credit, in one pass without a wait: 0 sent and counted,
	 * 1 not taken (the general path decides).  NULL: none.  The first
	 * RANGE row's serves the fabric link (link/fabric.c).
	 */
	int  (*send_now)(struct rmq_socket *s, struct rmq_peer *p,
	                 const void *buf, size_t len, uint32_t msgid);
	/*
	 * Coalescing rides rows that have these (batch.c): what a batch into
	 * p may carry after its header now (0: none), and how to post one of
	 * n bytes from tx (its header already in, of type batch_mt): 0,
	 * -FI_EAGAIN, 1 (no room yet) or -error.
	 */
	size_t (*batch_cap)(const struct rmq_socket *s,
	                    const struct rmq_peer *p);
	int    (*batch_post)(struct rmq_socket *s, struct rmq_peer *p,
	                     struct rmq_tx *tx, size_t n);
	uint8_t     batch_mt; /* RMQ_MT_BATCH, RMQ_MT_RBATCH */

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
