/* Sockets: the public send/recv API, options, and helpers for patterns. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pattern.h"
#include "rmq_int.h"

int
rmq_socket_open(rmq_ctx *ctx, int type, rmq_socket **sp)
{
	const struct rmq_pattern_ops *ops;
	struct rmq_socket            *s;

	if (ctx == NULL || sp == NULL)
		return -RMQ_EINVAL;
	*sp = NULL;
	ops = rmq_pattern_find(type);
	if (ops == NULL) {
		rmq_log(RMQ_LOG_ERROR,
		        "socket type %d is not implemented (PAIR, REQ and REP "
		        "are; PUB/SUB and PUSH/PULL come later)",
		        type);
		return -RMQ_ENOTSUP;
	}
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return -RMQ_ENOMEM;
	if (ops->state_size > 0) {
		s->pstate = calloc(1, ops->state_size);
		if (s->pstate == NULL) {
			free(s);
			return -RMQ_ENOMEM;
		}
	}
	s->ctx          = ctx;
	s->ops          = ops;
	s->type         = type;
	s->sndtimeo     = ctx->cfg.sndtimeo_ms;
	s->rcvtimeo     = ctx->cfg.rcvtimeo_ms;
	s->linger       = ctx->cfg.linger_ms;
	s->connect_ms   = ctx->cfg.connect_ms;
	s->handshake_ms = ctx->cfg.handshake_ms;
	s->sndhwm       = ctx->cfg.sndhwm;
	s->rcvhwm       = ctx->cfg.rcvhwm;
	s->spin_us      = ctx->cfg.spin_us;
	s->maxmsg       = ctx->cfg.max_msg_size;
	s->cq_fd        = -1;
	s->force_opt    = -2;
	rmq_thread_add(ctx, s);
	pthread_mutex_lock(&ctx->lock);
	ctx->nsockets++;
	pthread_mutex_unlock(&ctx->lock);
	*sp = s;
	return 0;
}

static bool
drained(struct rmq_socket *s)
{
	return s->inflight == 0;
}

static bool
byes_acked(struct rmq_socket *s)
{
	int i;

	for (i = 0; i < s->peers_cap; i++) {
		struct rmq_peer *p = s->peers[i];

		if (p != NULL && p->fd >= 0 && p->bye_sent && !p->bye_acked &&
		    p->state != RMQ_PEER_DEAD)
			return false;
	}
	return true;
}

static int
rmq_close_locked(rmq_socket *s)
{
	struct rmq_listener *l;
	struct rmq_pending  *pd;
	struct rmq_rndv_tx  *r, *rn;
	struct rmq_waiter    w;
	rmq_ctx             *ctx;
	int                  i, rc;

	if (s == NULL)
		return -RMQ_EINVAL;
	ctx = s->ctx;
	/* Linger: let sends in flight finish (peers read our rendezvous). */
	rmq_waiter_init(&w, s->linger);
	while (s->ep != NULL && !drained(s)) {
		if (rmq_progress(s) > 0)
			continue;
		rmq_xfer_pull_pending(s);
		if (rmq_wait_idle(s, &w) != 0) {
			rmq_log(RMQ_LOG_WARN,
			        "close: linger expired with %d sends in flight",
			        s->inflight);
			break;
		}
	}
	/*
	 * Goodbye: tell each peer how many messages we sent it and wait (up
	 * to the linger) until it confirms they all arrived, so closing the
	 * endpoint cannot drop what the provider still had in flight.
	 */
	for (i = 0; i < s->peers_cap; i++)
		if (s->peers[i] != NULL && s->peers[i]->state != RMQ_PEER_DEAD)
			rmq_ctrl_bye(s, s->peers[i]);
	while (s->ep != NULL && !byes_acked(s)) {
		if (rmq_progress(s) > 0)
			continue;
		if (rmq_wait_idle(s, &w) != 0) {
			rmq_log(RMQ_LOG_WARN, "close: a peer did not confirm "
			                      "our last messages in time");
			break;
		}
	}
	for (r = s->rndv; r != NULL; r = rn) {
		rn        = r->next;
		r->waited = false;
		rmq_rndv_complete(s, r, -RMQ_ECLOSED);
	}
	/* Closing the endpoint cancels what is still posted. */
	if (s->ep != NULL && (rc = fi_close(&s->ep->fid)) != 0)
		rmq_log(RMQ_LOG_WARN, "close: endpoint: %s", fi_strerror(-rc));
	s->ep = NULL;
	while ((r = s->rndv) != NULL) { /* tsends the provider held */
		s->rndv = r->next;
		if (r->mr != NULL)
			fi_close(&r->mr->fid);
		free(r->owned);
		rmq_msg_free(r->msg);
		free(r);
	}
	for (i = 0; i < s->peers_cap; i++)
		if (s->peers[i] != NULL) {
			s->peers[i]->pending = 0;
			s->peers[i]->state   = RMQ_PEER_DEAD;
			rmq_peer_destroy(s, s->peers[i]);
		}
	rmq_ep_close(s);
	while ((l = s->listeners) != NULL) {
		s->listeners = l->next;
		close(l->fd);
		free(l);
	}
	while ((pd = s->pendings) != NULL) {
		s->pendings = pd->next;
		close(pd->fd);
		free(pd);
	}
	rmq_rxent_cache_drop(s);
	free(s->peers);
	free(s->peer_gen);
	free(s->pstate);
	free(s);
	pthread_mutex_lock(&ctx->lock);
	ctx->nsockets--;
	pthread_mutex_unlock(&ctx->lock);
	return 0;
}

static int
rmq_bind_locked(rmq_socket *s, const char *endpoint)
{
	struct rmq_addr a;
	int             rc;

	if (s == NULL)
		return -RMQ_EINVAL;
	rc = rmq_addr_parse(s->ctx, endpoint, &a);
	if (rc == 0 && s->prov != NULL && s->prov != a.prov)
		rc = -RMQ_EPROVIDER;
	if (rc == 0)
		rc = rmq_ctrl_listen(s, &a);
	return rc;
}

static int
rmq_connect_locked(rmq_socket *s, const char *endpoint)
{
	struct rmq_addr a;
	int             rc;

	if (s == NULL)
		return -RMQ_EINVAL;
	rc = rmq_addr_parse(s->ctx, endpoint, &a);
	if (rc == 0 && s->prov != NULL && s->prov != a.prov)
		rc = -RMQ_EPROVIDER;
	if (rc == 0)
		rc = rmq_ctrl_connect(s, &a);
	return rc;
}

/* ---- waiting helpers for patterns ---- */

int
rmq_sock_wait(struct rmq_socket *s, int flags, int timeout_ms,
              int (*cond)(struct rmq_socket *, void *), void *arg)
{
	struct rmq_waiter w;
	int               rc;

	rmq_waiter_init(&w, (flags & RMQ_DONTWAIT) ? 0 : timeout_ms);
	for (;;) {
		rc = cond(s, arg);
		if (rc != 0)
			return rc > 0 ? 0 : rc;
		if (rmq_progress(s) > 0)
			continue;
		rc = cond(s, arg);
		if (rc != 0)
			return rc > 0 ? 0 : rc;
		rc = rmq_wait_idle(s, &w);
		if (rc != 0)
			return rc;
	}
}

/* No usable peer: can one still come?  0 to keep waiting, else why not. */
static int
no_peer(struct rmq_socket *s)
{
	if (s->lost_peer) {
		s->lost_peer = false;
		return -RMQ_ECONNRESET;
	}
	if (s->listeners == NULL)
		return -RMQ_ENOTCONN;
	return 0;
}

static int
have_peer(struct rmq_socket *s, void *arg)
{
	struct rmq_peer **pp = arg;
	int               i, k;

	for (k = 0; k < s->peers_cap; k++) {
		i = (s->rr + k) % s->peers_cap;
		if (rmq_peer_usable(s->peers[i])) {
			*pp   = s->peers[i];
			s->rr = (i + 1) % s->peers_cap;
			return 1;
		}
	}
	return no_peer(s);
}

int
rmq_sock_next_peer(struct rmq_socket *s, int flags, int timeout_ms,
                   struct rmq_peer **pp)
{
	*pp = NULL;
	return rmq_sock_wait(s, flags, timeout_ms, have_peer, pp);
}

struct rmq_peer *
rmq_sock_fair_peer(struct rmq_socket *s)
{
	int i, k;

	for (k = 0; k < s->peers_cap; k++) {
		i = (s->rr_rx + k) % s->peers_cap;
		if (s->peers[i] != NULL && s->peers[i]->qhead != NULL) {
			s->rr_rx = (i + 1) % s->peers_cap;
			return s->peers[i];
		}
	}
	return NULL;
}

static int
have_msg(struct rmq_socket *s, void *arg)
{
	struct rmq_peer **pp = arg;
	int               i;

	if (s->nqueued > 0) {
		*pp = rmq_sock_fair_peer(s);
		if (*pp != NULL)
			return 1;
	}
	if (s->nlive > 0)
		return 0; /* the common case, checked without a scan */
	for (i = 0; i < s->peers_cap; i++)
		if (s->peers[i] != NULL &&
		    s->peers[i]->state != RMQ_PEER_DEAD)
			return 0; /* a peer that may still send */
	return no_peer(s);
}

int
rmq_sock_recv_any(struct rmq_socket *s, int flags, struct rmq_rxent **e)
{
	struct rmq_peer *p = NULL;
	int              rc;

	rc = rmq_sock_wait(s, flags, s->rcvtimeo, have_msg, &p);
	if (rc == 0)
		*e = rmq_rxq_pop(s, p);
	return rc;
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
		s->lost_peer = false;
	return rc;
}

static ssize_t
rmq_send_locked(rmq_socket *s, const void *buf, size_t len, int flags)
{
	struct rmq_out o = {.buf = buf, .len = len, .msg = NULL};
	int            rc;

	if (s == NULL || (buf == NULL && len > 0))
		return -RMQ_EINVAL;
	rc = reported(s, s->ops->send(s->pstate, s, &o, flags));
	return rc == 0 ? (ssize_t) len : rc;
}

static ssize_t
rmq_recv_locked(rmq_socket *s, void *buf, size_t cap, int flags)
{
	struct rmq_rxent *e;
	ssize_t           n;
	int               rc;

	if (s == NULL || (buf == NULL && cap > 0))
		return -RMQ_EINVAL;
	rc = reported(s, s->ops->recv(s->pstate, s, &e, flags));
	if (rc != 0)
		return rc;
	n = rmq_xfer_deliver(s, e, buf, cap, NULL);
	return n < 0 ? reported(s, (int) n) : n;
}

static int
rmq_msg_send_locked(rmq_socket *s, rmq_msg *m, int flags)
{
	struct rmq_out o = {.buf = NULL, .len = 0, .msg = m};

	if (s == NULL || m == NULL)
		return -RMQ_EINVAL;
	return reported(s, s->ops->send(s->pstate, s, &o, flags));
}

static int
rmq_msg_recv_locked(rmq_socket *s, rmq_msg **mp, int flags)
{
	struct rmq_rxent *e;
	ssize_t           rc;

	if (s == NULL || mp == NULL)
		return -RMQ_EINVAL;
	*mp = NULL;
	rc  = reported(s, s->ops->recv(s->pstate, s, &e, flags));
	if (rc != 0)
		return (int) rc;
	rc = rmq_xfer_deliver(s, e, NULL, 0, mp);
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
	if (s == NULL || st == NULL)
		return -RMQ_EINVAL;
	*st = s->stats;
	return 0;
}

/* ---- options ---- */

static int
opt_int(const void *val, size_t len, int min, int *out)
{
	int v;

	if (val == NULL || len != sizeof(int))
		return -RMQ_EINVAL;
	memcpy(&v, val, sizeof(v));
	if (v < min)
		return -RMQ_EINVAL;
	*out = v;
	return 0;
}

static int
opt_size(struct rmq_socket *s, const void *val, size_t len, size_t *out,
         bool eager)
{
	size_t v;

	if (val == NULL || len != sizeof(size_t))
		return -RMQ_EINVAL;
	memcpy(&v, val, sizeof(v));
	if (v > (eager ? RMQ_EAGER_LIMIT : RMQ_INJECT_BUF - RMQ_HDR_SIZE))
		return -RMQ_EINVAL;
	if (s->ep == NULL) {
		*out = v;
		return 0;
	}
	/* Open: the slots and slabs were sized for the eager limit. */
	if (eager) {
		if (v > s->tx_slot - RMQ_HDR_SIZE || v < s->paths.inject_max)
			return -RMQ_EINVAL;
		s->paths.eager_max = v;
	} else {
		if (v > s->dom->caps.inject_max || !s->dom->caps.inject ||
		    v > s->paths.eager_max)
			return -RMQ_EINVAL;
		s->paths.inject_max = v;
	}
	s->paths.src[eager ? RMQ_TH_EAGER : RMQ_TH_INJECT] = RMQ_SRC_OPT;
	*out = v;
	return 0;
}

/* Options that change the path table: check the new table when open. */
static int
opt_paths(struct rmq_socket *s, int opt, const void *val, size_t len)
{
	int    v = 0, old_rndv = s->rndv_path_opt, old_force = s->force_opt;
	size_t old_ring = s->ring_max_opt, sz = 0;
	bool   old_set = s->ring_max_set;
	int    rc;

	if (opt == RMQ_RING_MAX) {
		if (val == NULL || len != sizeof(size_t))
			return -RMQ_EINVAL;
		memcpy(&sz, val, sizeof(sz));
		if (sz > RMQ_EAGER_LIMIT)
			return -RMQ_EINVAL;
		s->ring_max_opt = sz;
		s->ring_max_set = true;
	} else {
		rc = opt_int(val, len, -1, &v);
		if (rc != 0)
			return rc;
		if (opt == RMQ_RNDV_PATH) {
			if (v != RMQ_PATH_RNDV_READ && v != RMQ_PATH_RNDV_SEND &&
			    v != RMQ_PATH_RNDV_WRITE && v != RMQ_PATH_SEG)
				return -RMQ_EINVAL;
			s->rndv_path_opt = v;
		} else {
			if (v >= RMQ_PATH_COUNT)
				return -RMQ_EINVAL;
			s->force_opt = v;
		}
	}
	if (s->ep == NULL)
		return 0;
	rc = rmq_sock_paths(s);
	if (rc != 0) {
		s->rndv_path_opt = old_rndv;
		s->force_opt     = old_force;
		s->ring_max_opt  = old_ring;
		s->ring_max_set  = old_set;
		(void) rmq_sock_paths(s);
	}
	return rc;
}

/*
 * RMQ_NAME: len bytes, a NUL at the end allowed.  The name picks the
 * config's thresholds.sockets section, and the domain is chosen with it:
 * set it before bind or connect.
 */
static int
opt_name(struct rmq_socket *s, const void *val, size_t len)
{
	const char *name = val;

	if (val == NULL)
		return -RMQ_EINVAL;
	if (len > 0 && name[len - 1] == '\0')
		len--;
	if (!rmq_config_name_ok(name, len)) {
		rmq_log(RMQ_LOG_ERROR, "RMQ_NAME: expected 1 to %d of "
		        "A-Z a-z 0-9 _ -", RMQ_CFG_NAME_MAX - 1);
		return -RMQ_EINVAL;
	}
	if (s->ep != NULL)
		return -RMQ_EFSM;
	memcpy(s->name, name, len);
	s->name[len] = '\0';
	return 0;
}

static int
rmq_setopt_locked(rmq_socket *s, int opt, const void *val, size_t len)
{
	int64_t v64;

	if (s == NULL)
		return -RMQ_EINVAL;
	switch (opt) {
	case RMQ_SNDTIMEO:
		return opt_int(val, len, -1, &s->sndtimeo);
	case RMQ_RCVTIMEO:
		return opt_int(val, len, -1, &s->rcvtimeo);
	case RMQ_LINGER:
		return opt_int(val, len, -1, &s->linger);
	case RMQ_CONNECT_TIMEOUT:
		return opt_int(val, len, 0, &s->connect_ms);
	case RMQ_SNDHWM:
		return opt_int(val, len, 1, &s->sndhwm);
	case RMQ_RCVHWM:
		/* Granted to peers in the handshake: set before connecting. */
		if (s->npeers > 0)
			return -RMQ_EFSM;
		return opt_int(val, len, 1, &s->rcvhwm);
	case RMQ_MAXMSGSIZE:
		if (val == NULL || len != sizeof(int64_t))
			return -RMQ_EINVAL;
		memcpy(&v64, val, sizeof(v64));
		if (v64 < -1)
			return -RMQ_EINVAL;
		if (s->npeers > 0)
			return -RMQ_EFSM; /* told to peers in the handshake */
		s->maxmsg = v64;
		return 0;
	case RMQ_INJECT_MAX:
		return opt_size(s, val, len, &s->inject_max_opt, false);
	case RMQ_EAGER_MAX:
		return opt_size(s, val, len, &s->eager_max_opt, true);
	case RMQ_RNDV_PATH:
	case RMQ_PATH:
	case RMQ_RING_MAX:
		return opt_paths(s, opt, val, len);
	case RMQ_NAME:
		return opt_name(s, val, len);
	default:
		return -RMQ_EINVAL;
	}
}

static int
get_int(int v, void *val, size_t *len)
{
	if (*len < sizeof(int))
		return -RMQ_EINVAL;
	memcpy(val, &v, sizeof(v));
	*len = sizeof(int);
	return 0;
}

static int
get_str(const char *v, void *val, size_t *len)
{
	size_t n = strlen(v) + 1;

	if (*len < n)
		return -RMQ_EINVAL;
	memcpy(val, v, n);
	*len = n;
	return 0;
}

static int
get_size(size_t v, void *val, size_t *len)
{
	if (*len < sizeof(size_t))
		return -RMQ_EINVAL;
	memcpy(val, &v, sizeof(v));
	*len = sizeof(size_t);
	return 0;
}

static int
rmq_getopt_locked(rmq_socket *s, int opt, void *val, size_t *len)
{
	if (s == NULL || val == NULL || len == NULL)
		return -RMQ_EINVAL;
	switch (opt) {
	case RMQ_SNDTIMEO:
		return get_int(s->sndtimeo, val, len);
	case RMQ_RCVTIMEO:
		return get_int(s->rcvtimeo, val, len);
	case RMQ_LINGER:
		return get_int(s->linger, val, len);
	case RMQ_CONNECT_TIMEOUT:
		return get_int(s->connect_ms, val, len);
	case RMQ_SNDHWM:
		return get_int(s->sndhwm, val, len);
	case RMQ_RCVHWM:
		return get_int(s->rcvhwm, val, len);
	case RMQ_TYPE:
		return get_int(s->type, val, len);
	case RMQ_NPEERS:
		return get_int(s->nlive, val, len);
	case RMQ_MAXMSGSIZE:
		if (*len < sizeof(int64_t))
			return -RMQ_EINVAL;
		memcpy(val, &s->maxmsg, sizeof(int64_t));
		*len = sizeof(int64_t);
		return 0;
	case RMQ_LAST_ENDPOINT:
		return get_str(s->last_endpoint, val, len);
	case RMQ_PROVIDER_NAME:
		return get_str(s->info ? s->info->fabric_attr->prov_name : "",
		               val, len);
	case RMQ_INJECT_MAX:
		if (s->ep == NULL)
			return -RMQ_ENOTCONN;
		return get_size(s->paths.inject_max, val, len);
	case RMQ_EAGER_MAX:
		if (s->ep == NULL)
			return -RMQ_ENOTCONN;
		return get_size(s->paths.eager_max, val, len);
	case RMQ_RNDV_PATH:
		if (s->ep == NULL)
			return -RMQ_ENOTCONN;
		return get_int(s->paths.rndv_path, val, len);
	case RMQ_PATH:
		if (s->ep == NULL)
			return -RMQ_ENOTCONN;
		return get_int(s->paths.force, val, len);
	case RMQ_RING_MAX:
		if (s->ep == NULL)
			return -RMQ_ENOTCONN;
		return get_size(s->paths.ring ? s->paths.ring_max : 0, val, len);
	case RMQ_STRICT:
		if (s->ep == NULL)
			return get_int(s->ctx->cfg.strict, val, len);
		return get_int(s->dom->caps.strict, val, len);
	case RMQ_NAME:
		return get_str(s->name, val, len);
	case RMQ_DOMAIN_NAME:
		return get_str(s->info ? s->info->domain_attr->name : "", val,
		               len);
	default:
		return -RMQ_EINVAL;
	}
}

/*
 * The public entry points.  In thread mode (progress: thread) each holds
 * the socket's lock, so the progress thread (thread.c) stays out while
 * the application is inside; in inline mode nobody else touches it.
 */
static void
api_lock(struct rmq_socket *s)
{
	if (s->ctx->thread)
		pthread_mutex_lock(&s->mu);
}

static void
api_unlock(struct rmq_socket *s)
{
	if (s->ctx->thread)
		pthread_mutex_unlock(&s->mu);
}

int
rmq_bind(rmq_socket *s, const char *endpoint)
{
	int rc;

	if (s == NULL)
		return -RMQ_EINVAL;
	api_lock(s);
	rc = rmq_bind_locked(s, endpoint);
	api_unlock(s);
	return rc;
}

int
rmq_connect(rmq_socket *s, const char *endpoint)
{
	int rc;

	if (s == NULL)
		return -RMQ_EINVAL;
	api_lock(s);
	rc = rmq_connect_locked(s, endpoint);
	api_unlock(s);
	return rc;
}

ssize_t
rmq_send(rmq_socket *s, const void *buf, size_t len, int flags)
{
	ssize_t rc;

	if (s == NULL)
		return -RMQ_EINVAL;
	api_lock(s);
	rc = rmq_send_locked(s, buf, len, flags);
	api_unlock(s);
	return rc;
}

ssize_t
rmq_recv(rmq_socket *s, void *buf, size_t cap, int flags)
{
	ssize_t rc;

	if (s == NULL)
		return -RMQ_EINVAL;
	api_lock(s);
	rc = rmq_recv_locked(s, buf, cap, flags);
	api_unlock(s);
	return rc;
}

int
rmq_msg_send(rmq_socket *s, rmq_msg *m, int flags)
{
	int rc;

	if (s == NULL)
		return -RMQ_EINVAL;
	api_lock(s);
	rc = rmq_msg_send_locked(s, m, flags);
	api_unlock(s);
	return rc;
}

int
rmq_msg_recv(rmq_socket *s, rmq_msg **mp, int flags)
{
	int rc;

	if (s == NULL)
		return -RMQ_EINVAL;
	api_lock(s);
	rc = rmq_msg_recv_locked(s, mp, flags);
	api_unlock(s);
	return rc;
}

int
rmq_stats(rmq_socket *s, struct rmq_stats *st)
{
	int rc;

	if (s == NULL)
		return -RMQ_EINVAL;
	api_lock(s);
	rc = rmq_stats_locked(s, st);
	api_unlock(s);
	return rc;
}

int
rmq_setopt(rmq_socket *s, int opt, const void *val, size_t len)
{
	int rc;

	if (s == NULL)
		return -RMQ_EINVAL;
	api_lock(s);
	rc = rmq_setopt_locked(s, opt, val, len);
	api_unlock(s);
	return rc;
}

int
rmq_getopt(rmq_socket *s, int opt, void *val, size_t *len)
{
	int rc;

	if (s == NULL)
		return -RMQ_EINVAL;
	api_lock(s);
	rc = rmq_getopt_locked(s, opt, val, len);
	api_unlock(s);
	return rc;
}

int
rmq_close(rmq_socket *s)
{
	rmq_ctx *ctx;

	if (s == NULL)
		return -RMQ_EINVAL;
	ctx = s->ctx;
	api_lock(s);
	/* Out of the progress thread's sight before it is freed. */
	rmq_thread_remove(ctx, s);
	api_unlock(s);
	pthread_mutex_destroy(&s->mu);
	return rmq_close_locked(s);
}
