/*
 * Sockets: the public API.  Opening a socket wires its reactor, its
 * pattern and the path rows together; bind and connect open the endpoint
 * and hand the control channel to conn/; send and receive go through the
 * pattern; close lingers, says goodbye, and takes it all down in order.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rdma/fi_endpoint.h>

#include "backlog.h"
#include "conn/addr.h"
#include "conn/ctrl.h"
#include "conn/dial.h"
#include "conn/peer.h"
#include "ctx.h"
#include "ep.h"
#include "msg.h"
#include "paths/path.h"
#include "pattern.h"
#include "events.h"
#include "frames.h"
#include "link_ops.h"
#include "progress.h"
#include "rxq.h"
#include "socket.h"
#include "sockopt.h"
#include "util.h"
#include "xfer.h"

/* A socket and the parts of it that belong to the upper layers, in one
 * allocation. */
struct sock_block {
	struct rmq_socket s;
	struct rmq_path_sock ps;
	struct rmq_peers  peers;
	struct rmq_ctrl   ctrl;
	struct rmq_rxcache rx;
};

/* Idle rounds: queued rendezvous pulls, and sends kept for a peer. */
static void
sock_idle(void *owner)
{
	struct rmq_socket *s = owner;

	rmq_xfer_pull_pending(s);
	if (s->bl_n > 0)
		rmq_backlog_flush(s);
}

/* The context's shutdown fd woke a wait: the wait itself returns. */
static void
shut_ready(struct rmq_source *src, short revents, void *owner)
{
	RMQ_UNUSED(src);
	RMQ_UNUSED(revents);
	RMQ_UNUSED(owner);
}

/* rmq_socket_open (patterns/registry.c) found the pattern of the type. */
int
rmq_sock_open(rmq_ctx *ctx, const struct rmq_pattern_ops *ops,
              rmq_socket **sp)
{
	struct sock_block *blk;
	struct rmq_socket *s;
	int                rc;

	blk = calloc(1, sizeof(*blk));
	if (blk == NULL)
		return -RMQ_ENOMEM;
	s        = &blk->s;
	s->ps    = &blk->ps;
	s->peers = &blk->peers;
	s->ctrl  = &blk->ctrl;
	s->rx    = &blk->rx;
	if (ops->sock_size > 0 &&
	    (s->pstate = calloc(1, ops->sock_size)) == NULL) {
		free(rmq_container_of(s, struct sock_block, s));
		return -RMQ_ENOMEM;
	}
	s->ctx          = ctx;
	s->pat          = ops;
	s->path_ops     = rmq_paths;
	s->link0        = &rmq_link_fabric;
	s->on_msg       = rmq_xfer_rx;
	s->on_live      = rmq_xfer_on_live;
	s->sndtimeo     = ctx->cfg.sndtimeo_ms;
	s->rcvtimeo     = ctx->cfg.rcvtimeo_ms;
	s->linger       = ctx->cfg.linger_ms;
	s->connect_ms   = ctx->cfg.connect_ms;
	s->handshake_ms = ctx->cfg.handshake_ms;
	s->sndhwm       = ctx->cfg.sndhwm;
	s->rcvhwm       = ctx->cfg.rcvhwm;
	s->spin_us      = ctx->cfg.spin_us;
	s->reconnect_ivl = 100; /* ZeroMQ's defaults */
	s->reconnect_ivl_max = 0;
	s->bl_tail      = &s->bl_head;
	s->maxmsg       = ctx->cfg.max_msg_size;
	s->in_place_min = ctx->cfg.in_place_min;
	s->cq_fd        = -1;
	rmq_path_opts_init(&s->popts);
	rmq_reactor_init(&s->reactor, s);
	/* The inline thread tries a socket's lock rarely: it pays for it. */
	s->reactor.asym = ctx->progress.watcher && rmq_reactor_asym_ok();
	s->reactor.spin_us = s->spin_us;
	/* rmq_ctx_shutdown: every wait of ours returns, a sleeping one too. */
	s->reactor.stop = &ctx->shut;
	if ((rc = rmq_source_add(&s->reactor, &s->shut_src, ctx->shut_fd,
	                         shut_ready)) < 0) {
		rmq_reactor_fini(&s->reactor);
		free(s->pstate);
		free(rmq_container_of(s, struct sock_block, s));
		return rc;
	}
	s->reactor.on_imm  = rmq_xfer_imm;
	s->reactor.idle    = sock_idle;
	rmq_xfer_init(s);
	rmq_ctrl_init(s);
	rmq_dial_init(s);
	if (ops->init != NULL && (rc = ops->init(s->pstate, s)) != 0) {
		rmq_dial_close(s);
		rmq_ctrl_close(s);
		rmq_reactor_fini(&s->reactor);
		free(s->pstate);
		free(rmq_container_of(s, struct sock_block, s));
		return rc;
	}
	rmq_thread_add(&ctx->progress, &s->reactor);
	pthread_mutex_lock(&ctx->lock);
	ctx->nsockets++;
	pthread_mutex_unlock(&ctx->lock);
	*sp = s;
	return 0;
}

/* ---- the endpoint, at the first bind or connect ---- */

static int
open_endpoint(struct rmq_socket *s, const struct rmq_prov *prov,
              const char *node)
{
	int rc;

	if (s->ep != NULL)
		return s->prov == prov ? 0 : -RMQ_EPROVIDER;
	rc = rmq_ep_open(s, prov, node);
	if (rc != 0)
		return rc;
	rc = rmq_tx_init(s);
	if (rc == 0)
		rc = rmq_paths_init(s);
	if (rc != 0) {
		rmq_log(RMQ_LOG_INFO, "%s: cannot open endpoint: %s",
		        prov->name, rmq_strerror(rc));
		rmq_tx_fini(s);
		rmq_ep_close(s);
		return rc;
	}
	rmq_reactor_set_cq(&s->reactor, s->cq, s->cq_fd, s->dom->fabric,
	                   (s->dom->caps.mode & FI_RX_CQ_DATA) != 0);
	return 0;
}

/*
 * Undo the open_endpoint of a first bind or connect that failed later: a
 * failed call leaves the socket as it was, free to use another provider.
 */
static void
close_endpoint(struct rmq_socket *s, bool opened)
{
	if (!opened || s->ep == NULL || s->peers->n > 0 ||
	    s->ctrl->listeners != NULL || s->ctrl->dialers != NULL)
		return;
	rmq_paths_close(s);
	rmq_reactor_set_cq(&s->reactor, NULL, -1, NULL, false);
	rmq_paths_fini(s);
	rmq_tx_fini(s);
	rmq_ep_close(s);
}

/*
 * A socket's fabric endpoint has the address family of its first bind or
 * connect (tcp and sockets: an IPv4 or an IPv6 endpoint, not both).
 */
static int
same_family(const rmq_socket *s, const union rmq_inaddr *ia)
{
	bool v6 = ia->sa.sa_family == AF_INET6;

	if (s->ep == NULL || !(s->prov->flags & RMQ_PROV_ADDR_SOCKADDR) ||
	    v6 == (s->info->addr_format == FI_SOCKADDR_IN6))
		return 0;
	rmq_log(RMQ_LOG_INFO, "this socket's fabric endpoint is %s (its first "
	        "bind or connect): it cannot also take %s endpoints",
	        v6 ? "IPv4" : "IPv6", v6 ? "IPv6" : "IPv4");
	return -RMQ_EADDR;
}

static int
rmq_bind_locked(rmq_socket *s, const char *endpoint)
{
	struct rmq_addr    a;
	union rmq_inaddr   sin = {0};
	char               node[64];
	const char        *nodep = NULL;
	bool               opened;
	int                rc;

	rc = rmq_addr_parse(s->ctx, endpoint, &a);
	if (rc == 0 && s->prov != NULL && s->prov != a.prov)
		rc = -RMQ_EPROVIDER;
	if (rc == 0 && !a.unix_name)
		rc = rmq_addr_resolve(&a, true, &sin);
	if (rc == 0 && !a.unix_name)
		rc = same_family(s, &sin);
	if (rc == 0 && !a.unix_name)
		rc = rmq_addr_ep_node(&s->ctx->cfg, a.prov, &sin, true, node,
		                      sizeof(node), &nodep);
	opened = s->ep == NULL;
	if (rc == 0)
		rc = open_endpoint(s, a.prov, nodep);
	if (rc == 0)
		rc = rmq_ctrl_listen(s, &a, &sin, endpoint);
	if (rc != 0)
		close_endpoint(s, opened);
	return rc;
}

static int
rmq_connect_locked(rmq_socket *s, const char *endpoint)
{
	struct rmq_addr    a;
	union rmq_inaddr   dst = {0}, loc = {0};
	int64_t            dl;
	struct rmq_peer   *p = NULL;
	char               node[64];
	const char        *nodep = NULL;
	bool               opened;
	int                fd    = -1, rc, ms;

	rc = rmq_addr_parse(s->ctx, endpoint, &a);
	if (rc == 0 && s->prov != NULL && s->prov != a.prov)
		rc = -RMQ_EPROVIDER;
	if (rc != 0)
		return rc;
	if (s->pat->max_peers != 0 && s->peers->nlive >= s->pat->max_peers)
		return -RMQ_EPEERFULL;
	/*
	 * The fabric endpoint opens on our side of the route to the peer,
	 * and before we dial: the binding side's handshake clock starts at
	 * its accept, and opening an endpoint can take long on a loaded
	 * host (64 processes starting at once on 2 cores: seconds).
	 */
	if (!a.unix_name) {
		rc = rmq_addr_resolve(&a, false, &dst);
		if (rc == 0)
			rc = same_family(s, &dst);
		if (rc == 0 && rmq_addr_route_local(&dst, &loc) != 0) {
			memset(&loc, 0, sizeof(loc)); /* any address: any route */
			loc.sa.sa_family = dst.sa.sa_family;
		}
		if (rc == 0)
			rc = rmq_addr_ep_node(&s->ctx->cfg, a.prov, &loc, false,
			                      node, sizeof(node), &nodep);
	}
	opened = s->ep == NULL;
	if (rc == 0)
		rc = open_endpoint(s, a.prov, nodep);
	if (rc != 0)
		return rc;
	if (s->connect_async) { /* the dialer connects in the background */
		rc = rmq_dial_add(s, endpoint, &a, &dst, NULL);
		if (rc != 0)
			close_endpoint(s, opened);
		return rc;
	}
	dl = rmq_deadline(s->connect_ms);
	for (;;) {
		rc = rmq_ctrl_dial(s, &a, dl, &fd, &loc);
		if (rc == 0)
			rc = rmq_ctrl_handshake(s, &a, fd, dl, &p);
		/* The binder closed on us (too many handshakes pending, or
		 * it restarted): try again while the deadline allows. */
		if ((rc != -RMQ_ECONNRESET && rc != -EPIPE) ||
		    rmq_now_ns() >= dl)
			break;
		usleep(10000);
	}
	if (rc != 0) {
		close_endpoint(s, opened);
		return rc;
	}
	/*
	 * The provider's connection both ways before we return, while the
	 * binder still progresses (it just answered us): else the first
	 * message, ours or its, may wait until the other side next calls
	 * in.  Not getting there is not fatal: the first send waits then.
	 */
	ms = s->connect_ms < 0 ? 1000
	                       : (int) ((dl - rmq_now_ns()) / 1000000);
	if (rmq_xfer_warm(s, p, ms > 1000 ? ms : 1000) != 0)
		rmq_log(RMQ_LOG_DEBUG, "connect %s: the provider's connection "
		        "is not up yet", endpoint);
	/* From now on its dialer keeps it connected. */
	if (p->state == RMQ_PEER_LIVE)
		rc = rmq_dial_add(s, endpoint, &a, &dst, p);
	rmq_peer_release(s, p);
	return rc;
}

/* ---- close ---- */

static int
drained(void *arg)
{
	struct rmq_socket *s = arg;

	/* And what a pattern still holds for its peers (a PUB's log), and
	 * coalesced messages not sent yet (each progress pass sends them). */
	return s->inflight == 0 && rmq_batch_idle(s) && s->bl_n == 0 &&
	       (s->pat->flushed == NULL || s->pat->flushed(s->pstate, s));
}

static int
byes_acked(void *arg)
{
	return rmq_ctrl_byes_unacked(arg, false) == 0;
}

/* With the socket's lock held (thread mode) and out of the thread's
 * sight: everything but the lock and the socket itself goes. */
static void
rmq_close_locked(rmq_socket *s)
{
	struct rmq_waiter w;
	int               rc;

	/* After rmq_ctx_shutdown too, close lingers as it says. */
	rmq_source_remove(&s->reactor, &s->shut_src);
	s->reactor.stop = NULL;

	/* Linger: let sends in flight finish (peers read our rendezvous). */
	rmq_waiter_init(&w, s->linger);
	if (s->ep != NULL &&
	    rmq_wait_until(&s->reactor, &w, RMQ_WAIT_IDLE, drained, s) != 0)
		rmq_log(RMQ_LOG_WARN,
		        "close: linger expired with %d sends in flight and %d "
		        "messages kept for a peer", s->inflight, s->bl_n);
	/* No more connecting; what never found a peer goes. */
	rmq_dial_close(s);
	rmq_backlog_drop(s);
	/*
	 * Goodbye: tell each peer how many messages we sent it and wait (up
	 * to the linger) until it confirms they all arrived, so closing the
	 * endpoint cannot drop what the provider still had in flight.
	 */
	rmq_ctrl_bye_all(s);
	if (s->ep != NULL &&
	    rmq_wait_until(&s->reactor, &w, 0, byes_acked, s) != 0 &&
	    (rc = rmq_ctrl_byes_unacked(s, true)) > 0)
		rmq_log(RMQ_LOG_WARN,
		        "close: %d peer%s did not confirm our last messages "
		        "in time", rc, rc > 1 ? "s" : "");
	rmq_paths_close(s);
	/* Closing the endpoint cancels what is still posted. */
	if (s->ep != NULL && (rc = fi_close(&s->ep->fid)) != 0)
		rmq_log(RMQ_LOG_WARN, "close: endpoint: %s", fi_strerror(-rc));
	s->ep = NULL;
	rmq_ep_shards_close(s);
	rmq_reactor_set_cq(&s->reactor, NULL, -1, NULL, false);
	rmq_pat_rma_close(s);
	rmq_paths_fini(s); /* what the provider held is ours again */
	rmq_frames_fini(s); /* lets go of the peer being taken from */
	rmq_peers_destroy_all(s);
	/* Before the domain may go: the pattern's registrations. */
	if (s->pat->fini != NULL)
		s->pat->fini(s->pstate);
	rmq_tx_fini(s);
	rmq_ep_close(s);
	rmq_dial_close(s);
	rmq_ctrl_close(s);
	rmq_rxent_cache_drop(s);
	free(s->pstate);
	s->pstate = NULL;
}

/* ---- the public data path ---- */

/*
 * A peer's death is reported once: by the operation it broke, or else by
 * the next operation that finds no peer.
 */
static int
reported(struct rmq_socket *s, int rc)
{
	if (rc == -RMQ_ECONNRESET)
		s->peers->lost = false;
	return rc;
}

static ssize_t
rmq_send_locked(rmq_socket *s, const void *buf, size_t len, int flags)
{
	struct rmq_out o = {.buf = buf, .len = len, .msg = NULL};
	int            rc;

	if (buf == NULL && len > 0)
		return -RMQ_EINVAL;
	if (flags & ~(RMQ_DONTWAIT | RMQ_SNDMORE))
		return -RMQ_EINVAL;
	if (s->bl_n > 0 || (s->peers->nlive == 0 && !s->tx_open)) {
		rc = rmq_backlog_send(s, &o, flags);
		if (rc <= 0)
			return rc == 0 ? (ssize_t) len : rc;
	}
	rc = reported(s, rmq_frames_send(s, &o, flags));
	return rc == 0 ? (ssize_t) len : rc;
}

static ssize_t
rmq_recv_locked(rmq_socket *s, void *buf, size_t cap, int flags)
{
	struct rmq_rxent *e;
	ssize_t           n;
	int               rc;

	if (buf == NULL && cap > 0)
		return -RMQ_EINVAL;
	if (s->bl_n > 0)
		rmq_backlog_flush(s);
	rc = reported(s, rmq_frames_recv(s, flags, &e));
	if (rc != 0)
		return rc;
	n = rmq_xfer_deliver(s, e, buf, cap, NULL);
	rmq_frames_done(s);
	return n < 0 ? reported(s, (int) n) : n;
}

static int
rmq_msg_send_locked(rmq_socket *s, rmq_msg *m, int flags)
{
	struct rmq_out o = {.buf = NULL, .len = 0, .msg = m};
	int            rc;

	if (m == NULL || (flags & ~(RMQ_DONTWAIT | RMQ_SNDMORE)))
		return -RMQ_EINVAL;
	if (s->bl_n > 0 || (s->peers->nlive == 0 && !s->tx_open)) {
		rc = rmq_backlog_send(s, &o, flags);
		if (rc <= 0)
			return rc;
	}
	return reported(s, rmq_frames_send(s, &o, flags));
}

static int
rmq_msg_recv_locked(rmq_socket *s, rmq_msg **mp, int flags)
{
	struct rmq_rxent *e;
	ssize_t           rc;

	if (mp == NULL)
		return -RMQ_EINVAL;
	*mp = NULL;
	if (s->bl_n > 0)
		rmq_backlog_flush(s);
	rc  = reported(s, rmq_frames_recv(s, flags, &e));
	if (rc != 0)
		return (int) rc;
	rc = rmq_xfer_deliver(s, e, NULL, 0, mp);
	rmq_frames_done(s);
	return rc < 0 ? reported(s, (int) rc) : 0;
}

int
rmq_msg_alloc(rmq_socket *s, size_t size, rmq_msg **mp)
{
	if (s == NULL || mp == NULL)
		return -RMQ_EINVAL;
	*mp = rmq_msg_new_heap(size);
	return *mp != NULL ? 0 : -RMQ_ENOMEM;
}

static int
rmq_stats_locked(rmq_socket *s, struct rmq_stats *st)
{
	int i;

	if (st == NULL)
		return -RMQ_EINVAL;
	*st = s->stats;
	for (i = 0; i < RMQ_PATH_MAX && i < RMQ_PATHS; i++) {
		st->sent_msgs[i]  = s->pstats[i].sent_msgs;
		st->sent_bytes[i] = s->pstats[i].sent_bytes;
		st->recv_msgs[i]  = s->pstats[i].recv_msgs;
		st->recv_bytes[i] = s->pstats[i].recv_bytes;
	}
	return 0;
}

static int
rmq_path_stats_locked(rmq_socket *s, int path, struct rmq_path_stats *ps)
{
	if (ps == NULL || path < 0 || path >= RMQ_PATHS)
		return -RMQ_EINVAL;
	*ps = s->pstats[path];
	return 0;
}

/* ---- options ---- */


/* The public entry points, each under the socket's lock (socket.h). */
#define api_lock   rmq_sock_lock
#define api_unlock rmq_sock_unlock

#define RMQ_LOCKED(s, call)          \
	do {                             \
		if ((s) == NULL)             \
			return -RMQ_EINVAL;      \
		api_lock(s);                 \
		rc = (call);                 \
		api_unlock(s);               \
		return rc;                   \
	} while (0)

/* A send or receive: then RMQ_FD must not hide messages still queued. */
#define RMQ_LOCKED_IO(s, call)       \
	do {                             \
		if ((s) == NULL)             \
			return -RMQ_EINVAL;      \
		if (atomic_load(&(s)->ctx->shut)) \
			return -RMQ_ECLOSED;     \
		api_lock(s);                 \
		rc = (call);                 \
		rmq_sock_fd_after(s);        \
		api_unlock(s);               \
		return rc;                   \
	} while (0)

int
rmq_bind(rmq_socket *s, const char *endpoint)
{
	int rc;

	if (s != NULL && atomic_load(&s->ctx->shut))
		return -RMQ_ECLOSED;
	RMQ_LOCKED(s, rmq_bind_locked(s, endpoint));
}

int
rmq_connect(rmq_socket *s, const char *endpoint)
{
	int rc;

	if (s != NULL && atomic_load(&s->ctx->shut))
		return -RMQ_ECLOSED;
	RMQ_LOCKED(s, rmq_connect_locked(s, endpoint));
}

static int
rmq_disconnect_locked(rmq_socket *s, const char *endpoint)
{
	if (endpoint == NULL)
		return -RMQ_EINVAL;
	return rmq_dial_remove(s, endpoint);
}

int
rmq_disconnect(rmq_socket *s, const char *endpoint)
{
	int rc;

	RMQ_LOCKED(s, rmq_disconnect_locked(s, endpoint));
}

static int
rmq_unbind_locked(rmq_socket *s, const char *endpoint)
{
	if (endpoint == NULL)
		return -RMQ_EINVAL;
	return rmq_ctrl_unlisten(s, endpoint);
}

int
rmq_unbind(rmq_socket *s, const char *endpoint)
{
	int rc;

	RMQ_LOCKED(s, rmq_unbind_locked(s, endpoint));
}

ssize_t
rmq_send(rmq_socket *s, const void *buf, size_t len, int flags)
{
	ssize_t rc;

	RMQ_LOCKED_IO(s, rmq_send_locked(s, buf, len, flags));
}

ssize_t
rmq_recv(rmq_socket *s, void *buf, size_t cap, int flags)
{
	ssize_t rc;

	RMQ_LOCKED_IO(s, rmq_recv_locked(s, buf, cap, flags));
}

int
rmq_msg_send(rmq_socket *s, rmq_msg *m, int flags)
{
	int rc;

	RMQ_LOCKED_IO(s, rmq_msg_send_locked(s, m, flags));
}

int
rmq_msg_recv(rmq_socket *s, rmq_msg **mp, int flags)
{
	int rc;

	RMQ_LOCKED_IO(s, rmq_msg_recv_locked(s, mp, flags));
}

int
rmq_stats(rmq_socket *s, struct rmq_stats *st)
{
	int rc;

	RMQ_LOCKED(s, rmq_stats_locked(s, st));
}

int
rmq_path_stats(rmq_socket *s, int path, struct rmq_path_stats *ps)
{
	int rc;

	RMQ_LOCKED(s, rmq_path_stats_locked(s, path, ps));
}

int
rmq_setopt(rmq_socket *s, int opt, const void *val, size_t len)
{
	int rc;

	RMQ_LOCKED(s, rmq_setopt_locked(s, opt, val, len));
}

int
rmq_getopt(rmq_socket *s, int opt, void *val, size_t *len)
{
	int rc;

	RMQ_LOCKED(s, rmq_getopt_locked(s, opt, val, len));
}

int
rmq_close(rmq_socket *s)
{
	rmq_ctx *ctx;

	if (s == NULL)
		return -RMQ_EINVAL;
	ctx = s->ctx;
	api_lock(s);
	/* Out of the progress thread's sight before it goes. */
	rmq_thread_remove(&ctx->progress, &s->reactor);
	rmq_close_locked(s);
	api_unlock(s);
	rmq_reactor_fini(&s->reactor);
	free(rmq_container_of(s, struct sock_block, s));
	pthread_mutex_lock(&ctx->lock);
	ctx->nsockets--;
	pthread_mutex_unlock(&ctx->lock);
	return 0;
}
