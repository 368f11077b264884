/*
 * Received messages (rxq.c): an entry per message not yet delivered,
 * queued on the peer it came from, in order.  Entries are recycled from a
 * small per-socket cache: none is malloc'd per message in the steady state.
 */
#ifndef RMQ_RXQ_H
#define RMQ_RXQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire.h"

struct rmq_peer;
struct rmq_slab;
struct rmq_socket;

struct rmq_rxent {
	struct rmq_rxent *next;
	struct rmq_peer  *peer;
	uint32_t          msgid;
	int               path;     /* RMQ_PATH_* that carried it */
	size_t            len;
	uint8_t          *data;     /* payload: in a slab, a ring or heap */
	struct rmq_slab  *slab;     /* reference held, or NULL */
	void             *heap;     /* pulled rendezvous or reassembled */
	struct rmq_rts    rts;      /* rendezvous: where the payload is */
	uint64_t          tag;      /* the path's own (ring: slots taken
	                             * through this message) */
	bool              rndv;     /* queued from an RTS: its row fetches
	                             * the payload (a row may queue both
	                             * kinds) */
	bool              pulling;  /* background pull in progress */
	bool              nocredit; /* brought by its pattern, or a frame
	                             * after a message's first: no credit
	                             * goes back for it */
	bool              more;     /* frames of its message follow it */
	bool              made;     /* made by its pattern (a ROUTER's
	                             * routing id): not traffic, not counted */
	int               pull_status;
};

/*
 * One peer's queue.  The frames of a message come in order; a message is
 * taken only once its last frame is in (msgs counts those), so the frames
 * at the tail after the last whole message (open of them, open_len
 * bytes) wait, and go if the peer dies first.
 */
struct rmq_rxq {
	struct rmq_rxent *head, *tail;
	size_t            len;
	size_t            msgs;     /* whole messages queued */
	uint32_t          open;     /* frames of the message still coming */
	uint64_t          open_len; /* their bytes (RMQ_MAXMSGSIZE) */
	bool              cont;     /* the last frame from the peer had
	                             * more: the next continues its message */
	bool              skip;     /* the rest of a message dropped (too
	                             * large): frames go until its last */
};

/* The socket's: entries queued on all peers, and spare entries. */
struct rmq_rxcache {
	size_t            nqueued;
	size_t            nmsgs; /* whole messages queued on all peers */
	bool              fetch_more; /* a rendezvous frame of a message
	                               * not yet whole may wait for its pull
	                               * (rmq_xfer_pull_pending) */
	size_t            peak;  /* most queued at once (capped): spares kept */
	struct rmq_rxent *free;
	size_t            nfree;
};

struct rmq_rxent *rmq_rxent_new(struct rmq_socket *s);
/* Frees e and what it holds (slab reference, heap, its path's release). */
void rmq_rxent_free(struct rmq_socket *s, struct rmq_rxent *e);
void rmq_rxent_cache_drop(struct rmq_socket *s);
void rmq_rxq_push(struct rmq_socket *s, struct rmq_rxq *q,
                  struct rmq_rxent *e);
/*
 * A path whose messages give back their bytes in order, up to their tag
 * (a ring's): the newest of q's messages by path takes end as its tag
 * too (bytes holding no message of their own go back with it).  false:
 * none is queued, the caller gives them back now.
 */
bool rmq_rxq_hold_to(struct rmq_rxq *q, int path, uint64_t end);
/* The next message of q; NULL if none. */
struct rmq_rxent *rmq_rxq_pop(struct rmq_socket *s, struct rmq_rxq *q);
/* Free every message of q. */
void rmq_rxq_clear(struct rmq_socket *s, struct rmq_rxq *q);
/* Free the frames of the message still coming (q's peer died, or the
 * message grew too large): how many of them held a credit (its first). */
size_t rmq_rxq_trim_open(struct rmq_socket *s, struct rmq_rxq *q);
#endif /* RMQ_RXQ_H */
