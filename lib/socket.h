/*
 * A socket, as every layer of the engine sees it.  Each part belongs to
 * one module, named beside it; a module touches the other parts only
 * through their functions.  The parts of the upper layers (the paths'
 * tx slots and rendezvous, the connections' peers and control channels)
 * are their own structs, reached by pointer: this header needs only the
 * layers below them, and sits below them all.
 *
 * Ownership: a socket owns its endpoint, CQ, AV, slabs, tx slots, peers
 * and listeners.  A peer lives while it is connected or still has queued
 * messages.  A queued message holds a reference on the slab it lies in;
 * an rmq_msg given to the user may hold one too, so a slab whose socket
 * has closed is freed by the last rmq_msg_free().
 */
#ifndef RMQ_SOCKET_H
#define RMQ_SOCKET_H

#include <stdbool.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>

#include "ctx.h"
#include "progress.h"
#include "rmq.h"
#include "rmq_path_rows.h"
#include "select.h"
#include "wire.h"

struct rmq_blmsg;
struct rmq_ctrl;
struct rmq_frame_to;
struct rmq_link_ops;
struct rmq_pattern_ops;
struct rmq_path_ops;
struct rmq_pat_rma;
struct rmq_peer;
struct rmq_peers;
struct rmq_path_sock;
struct rmq_rxcache;
struct rmq_slab;

#define RMQ_MT_SLOTS 16 /* message types a row may own (wire.h) */

/*
 * One more endpoint of a socket's, on its CQ, with its own address table
 * and slabs (ep.c).  libfabric 1.17's shm takes at most 256 addresses per
 * table, so a socket with more peers spreads them over shards.
 */
#define RMQ_SHARDS_MAX 16
struct rmq_shard {
	struct fid_ep *ep;
	struct fid_av *av;
	int            nposted;
	uint8_t        fabaddr[RMQ_ADDR_MAX];
	size_t         fabaddr_len;
};

struct rmq_socket {
	struct rmq_reactor reactor;   /* progress.c: completions, fds, waits */
	rmq_ctx           *ctx;
	const struct rmq_pattern_ops *pat; /* the pattern (patterns/) */
	void              *pstate;    /* its private state */
	const struct rmq_path_ops *const *path_ops; /* the rows (paths/) */
	const struct rmq_link_ops *link0; /* the link every peer starts on:
	                                   * the endpoint's (link_ops.h) */

	/* options (sock.c) */
	int                sndtimeo, rcvtimeo, linger, connect_ms,
	                   handshake_ms, sndhwm, rcvhwm, spin_us;
	int                reconnect_ivl, reconnect_ivl_max; /* ms (dial.c) */
	bool               connect_async; /* RMQ_CONNECT_ASYNC */
	int64_t            maxmsg;
	int64_t            in_place_min; /* thresholds.in_place, -1 never */
	struct rmq_path_opts popts;   /* options that shape the path table */
	char               name[RMQ_CFG_NAME_MAX]; /* RMQ_NAME, "" = none */
	uint8_t            rid[255]; /* RMQ_ROUTING_ID, told in the HELLO */
	uint8_t            rid_len;  /* 0: none set */

	/* fabric objects (ep.c), made at the first bind/connect */
	const struct rmq_prov *prov;
	struct rmq_dom    *dom;
	struct fi_info    *info;
	struct fid_ep     *ep;
	struct fid_cq     *cq;
	struct fid_av     *av;
	int                cq_fd;     /* -1: no wait fd */
	uint8_t            fabaddr[RMQ_ADDR_MAX];
	size_t             fabaddr_len;
	size_t             min_multi; /* FI_OPT_MIN_MULTI_RECV */
	struct rmq_slab   *slabs;     /* all slabs */
	struct rmq_slab   *spent;     /* one-message receives to repost */
	int                nposted;
	/* Endpoints beside ep for peers past the provider's addresses per
	 * endpoint (ep.c; shm 1.17: 256): shard 0 is ep, av and nposted
	 * above, shard k > 0 is shards[k - 1]. */
	struct rmq_shard  *shards;
	int                nshards;   /* opened, beside ep */
	int                shard_peers[RMQ_SHARDS_MAX];
	int                slab_hook; /* its after-pass hook (reposting) */
	/* A fabric message landed in a slab (xfer.c's receive). */
	/* A peer went LIVE (either side of a handshake; xfer.c's). */
	void (*on_live)(struct rmq_socket *s, struct rmq_peer *p);
	void (*on_msg)(struct rmq_socket *s, struct rmq_slab *sl,
	               uint8_t *buf, size_t len, const uint64_t *data);

	/* choosing and carrying (select.c, xfer.c, paths/) */
	struct rmq_path_table paths;
	int8_t             rx_owner[RMQ_MT_SLOTS]; /* type -> row, -1 none */
	int8_t             imm_owner[4];           /* RMQ_IMM_* -> row */
	struct rmq_path_sock *ps;     /* the paths' own (paths/path.h) */
	int                inflight;  /* tx slots + rendezvous sends busy */
	unsigned           nshort;    /* sends that went the short way */
	struct rmq_pat_rma *rma_parked; /* a pattern's freed in flight
	                                 * (pattern_rma.c) */

	/* connections (conn/) */
	struct rmq_peers  *peers;     /* conn/peer.c */
	struct rmq_ctrl   *ctrl;      /* conn/ctrl.c */
	char               last_endpoint[256];

	/* receiving (rxq.c) and the pattern helpers' cursors (pattern.c) */
	struct rmq_rxcache *rx;
	int                rr;        /* round-robin (send) */
	int                rr_rx;     /* fair queue (recv) */

	/* A message's frames (frames.c): the peers the one being sent goes
	 * to -- its first frame's, noted by rmq_pat_send while tx_note --
	 * and the peer whose message is being received. */
	bool               tx_open;  /* a frame said more: the next goes on */
	bool               tx_note;
	int                ntx, tx_cap;
	struct rmq_frame_to *tx_to;
	struct rmq_peer   *rx_cur;   /* held until its message's last frame */
	bool               rx_more;  /* RMQ_RCVMORE: of the frame last taken */
	struct rmq_rxent  *rx_pre[3]; /* frames a pattern put before the
	                               * message it took (a ROUTER's routing
	                               * id), handed out first, in order */
	int                rx_npre, rx_ipre;
	struct rmq_peer   *rx_unhold; /* held for the frame being handed out */

	/* sends waiting for a first peer (backlog.c) */
	struct rmq_blmsg  *bl_head, **bl_tail;
	int                bl_n;
	bool               bl_open;   /* its last frame kept said more */
	bool               bl_flushing;

	struct rmq_stats   stats;     /* its per-path arrays: from pstats */
	struct rmq_path_stats pstats[RMQ_PATHS]; /* each path's counters */
	struct rmq_source  shut_src; /* the context's shutdown fd */
};

/*
 * The public entry points hold the socket's lock whenever the context
 * runs a thread (progress: thread, or the coalescing flusher), so that
 * thread (thread.c) stays out while the application is inside; without
 * one nobody else touches the socket.
 */
static inline void
rmq_sock_lock(struct rmq_socket *s)
{
	if (s->ctx->progress.on)
		rmq_reactor_lock(&s->reactor);
}

static inline void
rmq_sock_unlock(struct rmq_socket *s)
{
	if (s->ctx->progress.on)
		rmq_reactor_unlock(&s->reactor);
}

#endif /* RMQ_SOCKET_H */
