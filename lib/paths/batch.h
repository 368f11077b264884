/*
 * Coalescing (batch.c): small messages sent back to back to one peer
 * travel together, in one batch fabric message (wire.h: BATCH into its
 * slabs, RBATCH into its ring), with one header, one provider operation
 * and one completion on each side.
 *
 * A message joins a batch only when another one to the same peer left
 * within coalesce.window_us and nothing came back from that peer since
 * (a request/reply exchange never waits), or when a batch to the peer is
 * already open.  Nothing waits to fill a batch: it leaves when it is
 * full, before any other message to the peer (order holds), at every
 * progress pass of its socket (any rmq_send, rmq_recv, rmq_poll or wait),
 * and, when the application makes no call, from the context's flusher
 * thread within about coalesce.flush_us.  Each message keeps its own
 * credit, so RMQ_SNDHWM/RMQ_RCVHWM and backpressure are unchanged.
 *
 * A batch rides a row that can carry one (its batch_cap and batch_post:
 * eager's BATCH, the ring's RBATCH), whichever takes more to the peer
 * when the batch opens.  A link may hold records back itself (the local
 * link): the same after-pass hook and flusher show them to the peer.
 */
#ifndef RMQ_BATCH_H
#define RMQ_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conn/peer.h"
#include "wire.h"

struct rmq_out;
struct rmq_rx;
struct rmq_socket;
struct rmq_tx;
struct rmq_waiter;

/* The socket's (struct rmq_path_sock, path.h). */
struct rmq_bsock {
	bool    on;        /* coalesce.enabled */
	int64_t window_ns; /* coalesce.window_us */
	int     nopen;     /* peers with a batch open or records held */
	int     hook;      /* its after-pass hook */
};

/* A peer's (p->bat; NULL until its handshake: no batches to it). */
struct rmq_bpeer {
	struct rmq_tx *tx;   /* the batch being filled, or NULL */
	uint32_t       n;    /* messages in it */
	uint32_t       used; /* bytes after its header */
	uint32_t       cap;  /* bytes it may hold after its header */
	int            row;  /* the row that carries it */
	bool           can;  /* p takes batches (RMQ_FEAT_BATCH) */
	bool           held; /* p's link holds records back, not yet shown
	                      * to p */
};

/* The socket's endpoint opened: its after-pass hook. 0 or -error. */
int  rmq_batch_sock_init(struct rmq_socket *s);
/* Handshake: we take batches, and does p?  (The eager row's fields.) */
void rmq_batch_hello_out(struct rmq_socket *s, struct rmq_peer *p,
                         struct rmq_hello *h);
int  rmq_batch_hello_in(struct rmq_socket *s, struct rmq_peer *p,
                        const struct rmq_hello *h, char *why, size_t whylen);
/* No batch open and no records held back, to any peer. */
bool rmq_batch_idle(const struct rmq_socket *s);
/* Is coalescing on for the socket: its window in ns, else 0. */
int64_t rmq_batch_window(const struct rmq_socket *s);

/*
 * May a message to p wait to be packed with others?  Not a reply to what
 * p sent (heard: it waits for it, ping-pong latency), unless more of p's
 * messages wait for the application here: with many requests in flight
 * the answers to all it has queued go out together, when it has taken
 * them and waits, or by the flusher (coalesce.flush_us).  The figures:
 * docs/INTERNALS.md, coalescing.
 */
static inline bool
rmq_batch_may(const struct rmq_peer *p)
{
	return !p->heard || p->q.msgs > 0;
}

/* Nothing open to p, and nothing would open: a message to it goes alone
 * (the short ways' test). */
static inline bool
rmq_batch_alone(const struct rmq_peer *p, bool on)
{
	const struct rmq_bpeer *b = p->bat;

	return b == NULL ||
	       (b->tx == NULL && !(on && b->can && rmq_batch_may(p)));
}

/* Does p's link hold records back (then its flush shows them)? */
static inline bool
rmq_batch_held(const struct rmq_peer *p)
{
	const struct rmq_bpeer *b = p->bat;

	return b != NULL && b->held;
}

/* Is a batch open to p? */
static inline bool
rmq_batch_open(const struct rmq_peer *p)
{
	const struct rmq_bpeer *b = p->bat;

	return b != NULL && b->tx != NULL;
}

/* Should a len-byte message to p (the chosen row: path) be coalesced?
 * Rows flagged RMQ_ROW_F_COALESCE may (the ring by size only where the
 * domain orders writes with sends, so a batch sent before a ring write
 * still lands first).  *now: the clock, read here when needed (0: not
 * read). */
bool rmq_batch_takes(struct rmq_socket *s, struct rmq_peer *p, int path,
                     size_t len, int64_t *now);
/*
 * Add o to p's batch, opening one (or sending a full one first, waiting
 * per w, also for a free tx slot unless path, its path alone, needs none).
 * 0: it is in, counted as sent; 1: no tx slot free (by w's deadline), or
 * too big for p's batches: send it alone; < 0 an error (the message is
 * not in; what was before is kept).
 */
int  rmq_batch_add(struct rmq_socket *s, struct rmq_peer *p, int path,
                   const struct rmq_out *o, uint32_t msgid, int64_t now,
                   struct rmq_waiter *w);
/* Send p's open batch, if any: waiting per w, or once (w NULL: then
 * -FI_EAGAIN leaves it open).  0 or -error. */
int  rmq_batch_flush(struct rmq_socket *s, struct rmq_peer *p,
                     struct rmq_waiter *w);
/* A message went to p alone (at now, 0: unknown), or came from p. */
void rmq_batch_sent_alone(struct rmq_peer *p, int64_t now);
/* p's link holds records back (not yet shown to p), or no longer: false
 * if that cannot be noted (then the link shows them now). */
bool rmq_batch_hold(struct rmq_socket *s, struct rmq_peer *p, bool held);
/* p is dead: its open batch is lost with it. */
void rmq_batch_drop(struct rmq_socket *s, struct rmq_peer *p);
/* p is being freed: the same, and its state goes. */
void rmq_batch_peer_fini(struct rmq_socket *s, struct rmq_peer *p);
/* A batch from p landed (on row path): queue each of its messages in
 * order. */
void rmq_batch_rx(struct rmq_socket *s, struct rmq_peer *p,
                  const struct rmq_rx *rx, int path);

#endif /* RMQ_BATCH_H */
