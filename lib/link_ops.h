/*
 * Links: how the bytes reach a peer, under the paths (UCX keeps its
 * transports, uct/, under the protocols of ucp/ in the same way).
 *
 *   fabric   the socket's libfabric endpoint (ep.c): every peer starts
 *            on it, and its rows are the path table's (select.c)
 *   local    rings in memory shared with a process on this host, and
 *            copies straight from its memory (link/local*.c): a peer
 *            moves to it during the handshake when both sides can
 *
 * A peer is on one link at a time (p->link).  xfer.c asks that link for
 * the row that carries a message (choose) after trying its short way
 * (send_now); the rows post their two-sided messages -- DATA, RTS, FIN,
 * CREDIT... -- through it (put), so that everything to a peer keeps one
 * order; coalescing asks it to show the peer what it holds back (flush).
 * A link's own rows (the local link's "local") live in its files and
 * carry its own wire messages; nothing outside them knows how it works.
 */
#ifndef RMQ_LINK_OPS_H
#define RMQ_LINK_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rmq_peer;
struct rmq_socket;
struct rmq_waiter;

#define RMQ_LINK_F_HOST 0x1u /* peers on it share this host's memory: a
                              * copy to each costs no more than one read
                              * by each (a PUB pushes to them rather
                              * than have them read its log) */

struct rmq_link_ops {
	const char *name;  /* "fabric", "local": for logs and rmq_info */
	unsigned    flags; /* RMQ_LINK_F_* */
	/*
	 * The row (RMQ_PATH_*) that carries len bytes to p now, or -error
	 * (a forced path that cannot carry it: the reason is logged).
	 */
	int  (*choose)(struct rmq_socket *s, struct rmq_peer *p, size_t len);
	/*
	 * The common send in one pass, where nothing needs a wait: 0 sent
	 * and counted, 1 not taken (nothing was sent: xfer.c chooses,
	 * waits and retries).  NULL: never.
	 */
	int  (*send_now)(struct rmq_socket *s, struct rmq_peer *p,
	                 const void *buf, size_t len, uint32_t msgid);
	/*
	 * A two-sided message of na + nb bytes (a: its header, or all of
	 * it) to p, in order with everything else to p, waiting for room as
	 * w allows: 0 or -error.  NULL: the link is the socket's endpoint
	 * and the rows post to it themselves (paths/tx.c).
	 */
	int  (*put)(struct rmq_socket *s, struct rmq_peer *p,
	            struct rmq_waiter *w, const void *a, size_t na,
	            const void *b, size_t nb);
	/* What p's link holds back (coalesced records): p sees it now.
	 * NULL: it holds nothing back. */
	void (*flush)(struct rmq_socket *s, struct rmq_peer *p);
};

/* The link every peer starts on (link/fabric.c), and its ops by name:
 * xfer.c calls them directly for a peer on it, the common case, so that
 * the compiler may inline them there. */
extern const struct rmq_link_ops rmq_link_fabric;
int rmq_fabric_choose(struct rmq_socket *s, struct rmq_peer *p, size_t len);
int rmq_fabric_send_now(struct rmq_socket *s, struct rmq_peer *p,
                        const void *buf, size_t len, uint32_t msgid);

#endif /* RMQ_LINK_OPS_H */
