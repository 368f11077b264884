/*
 * Peers of a socket (peer.c): the table, and each peer's life.
 *
 * A peer's id is its slot in the table plus a 16-bit generation, so a
 * header naming a peer that has gone (and whose slot was reused) is
 * recognised and dropped.
 *
 *   new --handshake--> LIVE --BYE--> CLOSING --all in--> DEAD --empty--> freed
 *                        \________EOF / fabric error____/
 *
 * A peer's death reaches the paths through their peer_gone ops and the
 * pattern through its peer_gone op; its delivered messages stay queued
 * until taken, and the peer is freed once nothing refers to it.
 */
#ifndef RMQ_PEER_H
#define RMQ_PEER_H

#include <stdbool.h>
#include <stdint.h>

#include <rdma/fabric.h>

#include "progress.h"
#include "rmq.h"
#include "rmq_path_rows.h"
#include "rxq.h"
#include "wire.h"

/*
 * Tx slots one peer may hold (of the first block's 32).  A peer that
 * stops taking (paused; or dead on shm, whose sends to it then never
 * complete) keeps its slots: the cap, and the pool's growth, leave the
 * other peers theirs.
 */
#define RMQ_TX_PEER_MAX 24

enum rmq_peer_state {
	RMQ_PEER_NEW = 0, /* handshake under way */
	RMQ_PEER_LIVE,
	RMQ_PEER_CLOSING, /* said BYE: gone once its messages are in */
	RMQ_PEER_DEAD,
};

/* The peer's control channel (ctrl.c). */
struct rmq_chan {
	struct rmq_source src;      /* src.fd: -1 once closed */
	uint8_t           buf[RMQ_CTRL_HDR_SIZE + RMQ_CTRL_BODY_MAX];
	                            /* partial control frame */
	size_t            have;
	uint64_t          bye_count; /* its BYE: messages it sent us */
	bool              bye_acked; /* it confirmed all ours arrived */
	bool              bye_sent;  /* we said BYE */
	bool              took_ok;   /* it reads our BYE's took (FEAT_TOOK) */
	int64_t           closing_deadline; /* CLOSING: give up waiting */
};

struct rmq_peer {
	uint32_t        id;        /* our id for it: slot | gen << 16 */
	uint32_t        rid;       /* its id for us: goes in our headers */
	fi_addr_t       fiaddr;    /* in its shard's address table */
	struct fid_ep  *ep;        /* the endpoint of ours it talks to */
	int             shard;     /* which (ep.c); -1 before the handshake */
	int             state;     /* RMQ_PEER_* */
	int             pending;   /* ops (tx, rndv) and holds referring to it */
	char            name[160]; /* for logs: its control address */
	/* Flow control, from its HELLO and our traffic. */
	int64_t         credits;   /* messages we may still send it */
	uint32_t        owed;      /* messages consumed, not yet granted */
	uint32_t        rcvhwm;    /* its grant at handshake */
	uint64_t        maxmsg;    /* its limit */
	size_t          eager_max; /* its slabs' limit per message */
	int             ntx;       /* tx slots it holds (paths/tx.c) */
	uint64_t        sent;      /* DATA, RTS and FIN sent to it */
	uint64_t        recvd;     /* DATA, RTS and FIN received from it */
	uint64_t        recvd_tx;  /* recvd when we last sent it a message
	                            * by eager or ring (tx.c, in place) */
	int64_t         last_tx;   /* when our last message or batch to it
	                            * left, or the open batch opened (ns) */
	bool            heard;     /* a message came from it since then */
	struct rmq_chan chan;
	struct rmq_rxq  q;         /* its messages not yet delivered */
	const struct rmq_link_ops *link; /* the link it is reached on
	                                  * (link_ops.h) */
	void           *path[RMQ_PATHS]; /* each row's state for it */
	struct rmq_bpeer *bat;     /* coalescing's state for it (batch.c) */
	void           *pat;       /* the pattern's state for it */
	/* Whoever made it hears of its death or end (dial.c: its connect
	 * tries again), once; NULL: nobody. */
	void          (*gone)(struct rmq_socket *s, struct rmq_peer *p);
	void           *maker;     /* gone's own pointer */
};

/* The socket's table. */
struct rmq_peers {
	struct rmq_peer **slot;  /* NULL: free */
	uint16_t         *gen;
	int               cap;
	int               hi;    /* slots from hi on are all free */
	int               n;     /* slots in use (live or draining) */
	int               nlive;
	bool              lost;  /* a peer died: report once */
};

struct rmq_bpeer;
struct rmq_link_ops;
struct rmq_socket;
struct rmq_tx;

/* A new peer (state NEW), with the pattern's per-peer state. */
struct rmq_peer *rmq_peer_new(struct rmq_socket *s);
struct rmq_peer *rmq_peer_lookup(struct rmq_socket *s, uint32_t id);
/* The handshake completed: LIVE; the pattern hears of it. */
void rmq_peer_live(struct rmq_socket *s, struct rmq_peer *p);
bool rmq_peer_usable(const struct rmq_peer *p);

/*
 * Give p an endpoint of ours (ep.c's shards), once: at our HELLO or at
 * its, whichever comes first.  0, or -RMQ_EPEERFULL with the reason.
 */
int rmq_peer_shard_pick(struct rmq_socket *s, struct rmq_peer *p,
                        char *reason, size_t rl);

/* The endpoint of ours that talks to p (its shard's; ep.c).  A macro:
 * struct rmq_socket is complete only where it is used. */
#define rmq_peer_ep(s, p) ((p)->ep != NULL ? (p)->ep : (s)->ep)
/* LIVE, with a credit: a message may go to it (our own bounds aside). */
bool rmq_peer_has_credit(const struct rmq_peer *p);
/* Mark dead: fail its pending operations, keep delivered data. */
void rmq_peer_fail(struct rmq_socket *s, struct rmq_peer *p, int err,
                   const char *why);
/* Said BYE: CLOSING until its messages are in. */
void rmq_peer_closing(struct rmq_socket *s, struct rmq_peer *p);
/* Free the slot if it is dead and has nothing left. */
void rmq_peer_reap(struct rmq_socket *s, struct rmq_peer *p);
void rmq_peer_destroy(struct rmq_socket *s, struct rmq_peer *p);
/* Keep p allocated across calls that may kill it. */
void rmq_peer_hold(struct rmq_peer *p);
void rmq_peer_release(struct rmq_socket *s, struct rmq_peer *p);
/* Every peer, at close. */
void rmq_peers_destroy_all(struct rmq_socket *s);

/* Walking the table: the peer in slot i (i < s->peers.cap), or NULL. */
struct rmq_peer *rmq_peer_at(struct rmq_socket *s, int i);
/* Which peers rmq_peer_next picks. */
enum rmq_pick {
	RMQ_PICK_USABLE,   /* LIVE */
	RMQ_PICK_QUEUED,   /* with a whole message queued */
	RMQ_PICK_WRITABLE, /* LIVE, with a credit */
};
/*
 * Round-robin from *cursor: the next peer of the kind, and the cursor
 * moves past it; NULL if none.
 */
struct rmq_peer *rmq_peer_next(struct rmq_socket *s, int *cursor,
                               enum rmq_pick pick);
/* Is some peer not dead (it may still send)? */
bool rmq_peer_any_alive(struct rmq_socket *s);

#endif /* RMQ_PEER_H */
