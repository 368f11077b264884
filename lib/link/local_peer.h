/*
 * The local path's state, shared by its two files: local.c (the rings'
 * life, reading, large messages) and local_tx.c (writing).  Private to
 * the path: nothing else includes it.
 */
#ifndef RMQ_PATHS_LOCAL_PEER_H
#define RMQ_PATHS_LOCAL_PEER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

#include "conn/peer.h"
#include "ctx.h"
#include "link_ops.h"
#include "link/local_ring.h"
#include "paths/path.h"
#include "progress.h"
#include "socket.h"

struct rmq_out;
struct rmq_rx;
struct rmq_rxent;
struct rmq_socket;
struct rmq_waiter;

enum { LOCAL_HELP_NONE, LOCAL_HELP_ASKED, LOCAL_HELP_DONE };

/* This path's state for one peer. */
struct local_peer {
	struct rmq_peer *p;
	/* Ours, which it writes (rx.h NULL: none). */
	struct rmq_lring rx;
	int              rx_fd;
	uint64_t         head;  /* next record */
	uint64_t         freed; /* given back (told in the head page) */
	int              slot;  /* in the socket's poll list; -1: not */
	/* Its, which we write (tx.h NULL: none). */
	struct rmq_lring tx;
	uint64_t         tail;   /* written */
	uint64_t         ptail;  /* published: the reader sees up to here */
	int64_t          gate;   /* the first record held back (coalescing):
	                          * its prefix waits for the publish; -1 */
	uint32_t         gate_len;
	uint64_t         tfreed; /* its freed, as last read */
	struct sockaddr_un wake; /* its wake socket */
	socklen_t        wake_len; /* 0: not known (not local) */
	int              known;    /* its HELLO said: 1 local, -1 not */
	pid_t            pid;      /* its process: large messages are read
	                            * from its memory (process_vm_readv) */
	bool             cma_off;  /* that failed once: fi_read from now */
	bool             share;    /* it answers HELP (RMQ_LOCAL_F_SHARE) */
	bool             share_off; /* its help failed once: not asked again */
	/* Our HELP of a large message it sends us, while we read the rest
	 * (LOCAL_HELP_*; DONE: its HELPED came, with help_status). */
	int              help_state;
	uint32_t         help_cookie;
	int              help_status; /* 0 or a positive errno */
	/* Which copy pays for its large messages (local_big.c, split_pick):
	 * how many could split, and bytes per ns, whole [0] and split [1]. */
	uint64_t         big_n;
	double           rate[2];
	/* Which way our own waited sends of LOCAL_MID_MIN to local_max bytes
	 * go (local_tx.c, mid_by_cma): bytes per ns by the ring [0] and by
	 * one copy [1], and how many went each way. */
	double           mid_rate[2];
	uint64_t         mid_n[2];
	size_t           max;    /* largest payload its ring takes; the
	                          * peer is on this link once it is set */
};

/* The socket's. */
struct rmq_local {
	int                wfd;  /* our wake socket (bound); we send ours
	                          * to the peers' from it too */
	uint32_t           wid;  /* its name: rmq.<pid>.<wid> */
	struct rmq_source  src;
	struct local_peer **poll;
	int                npoll, cap;
	int                nrings; /* rings of ours made (local.peers) */
	/* Whether every live peer is on this link, as last counted
	 * (local_only), and what it was counted at: the socket's live peers
	 * and gen, bumped when a peer joins or leaves the link. */
	bool               only;
	int                only_live;
	unsigned           only_gen, gen;
};

extern const struct rmq_link_ops rmq_link_local;

/* The socket's part (NULL: local.enabled is off, or it closed). */
static inline struct rmq_local *
local_sock(const struct rmq_socket *s)
{
	return s->ps->row[RMQ_PATH_LOCAL];
}

static inline bool
local_on(const struct rmq_peer *p)
{
	return p->link == &rmq_link_local;
}

static inline struct local_peer *
local_of(const struct rmq_peer *p)
{
	return p->path[RMQ_PATH_LOCAL];
}

/* Which of two ways moved a peer's messages faster (local_big.c: split
 * or whole; local_tx.c: ring or one copy): a sample of len bytes in ns
 * into *rate, bytes per ns averaged over the last few; and the faster
 * way, or the other every probe-th time n, since the host can change
 * under us. */
static inline void
local_rate_add(double *rate, size_t len, int64_t ns)
{
	double r = (double) len / (double) (ns > 0 ? ns : 1);

	*rate = *rate == 0 ? r : 0.75 * *rate + 0.25 * r;
}

static inline bool
local_rate_pick(bool best, uint64_t n, unsigned probe)
{
	return n % probe == 0 ? !best : best;
}

/*
 * Put a message of na + nb bytes (a: its header, or all of it) into p's
 * ring, waiting for room as w allows: 0, or -error.  The link's put:
 * tx.c hands every two-sided message to a peer on this link here.
 */
int rmq_local_put(struct rmq_socket *s, struct rmq_peer *p,
                  struct rmq_waiter *w, const void *a, size_t na,
                  const void *b, size_t nb);

/* Larger than the ring takes: an RTS through the ring, and the peer
 * reads the payload from our memory in one copy; the key it also gets
 * lets it fi_read instead where the kernel says no (ptrace rules), so
 * only a domain with remote reads sends them this way. */
static inline bool
rmq_local_big(const struct rmq_socket *s)
{
	return s->dom->caps.rma_read;
}

/* The link's flush: publish what p's ring holds unpublished (coalesced
 * records), so that the reader sees them now. */
void rmq_local_flush(struct rmq_socket *s, struct rmq_peer *p);

/* The link's short way: a small message to a peer with credit and room,
 * at once: 0, or 1 when the general path must take it. */
int rmq_local_send_now(struct rmq_socket *s, struct rmq_peer *p,
                       const void *buf, size_t len, uint32_t msgid);

/* How loud a same-host peer that cannot have all of the path is
 * (local.c): local.enabled true asked for it, auto only allows it. */
int rmq_local_miss_level(const struct rmq_socket *s);

/* Large messages (local_big.c): the row's fetch, and HELP and HELPED. */
int  rmq_local_fetch(struct rmq_socket *s, struct rmq_rxent *e, void *dst,
                     size_t n);
void rmq_local_on_rx(struct rmq_socket *s, struct rmq_peer *p,
                     const struct rmq_rx *rx);

/* One byte to lp's wake socket: its reader (or its writer short of room)
 * sleeps there. */
void rmq_local_wake(struct rmq_socket *s, struct local_peer *lp);

/* The path's row (local_tx.c). */
int rmq_local_can_carry(struct rmq_socket *s, const struct rmq_peer *p,
                        size_t len, char *why, size_t whylen);
int rmq_local_send(struct rmq_socket *s, struct rmq_peer *p,
                   const struct rmq_out *o, uint32_t msgid, int flags,
                   struct rmq_waiter *w);

#endif /* RMQ_PATHS_LOCAL_PEER_H */
