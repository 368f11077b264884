/*
 * Socket options (sockopt.h): rmq_setopt and rmq_getopt, under the
 * socket's lock (sock.c takes it).
 */
#include <stdlib.h>
#include <string.h>

#include "conn/peer.h"
#include "ep.h"
#include "events.h"
#include "paths/tx.h"
#include "pattern_ops.h"
#include "select.h"
#include "socket.h"
#include "sockopt.h"
#include "util.h"

/*
 * An option that changes the path table: once the endpoint is open, the
 * new table must hold (select.c builds it); else the old one stays.
 */
static int
opt_paths_apply(struct rmq_socket *s, const struct rmq_path_opts *old)
{
	int rc;

	if (s->ep == NULL)
		return 0;
	rc = rmq_ep_paths(s);
	if (rc != 0) {
		s->popts = *old;
		(void) rmq_ep_paths(s);
	}
	return rc;
}

/* RMQ_INJECT_MAX, RMQ_EAGER_MAX: open, the slots and slabs were sized
 * for the eager limit. */
static int
opt_size(struct rmq_socket *s, const void *val, size_t len, bool eager)
{
	struct rmq_path_opts old = s->popts;
	size_t               v;

	if (val == NULL || len != sizeof(size_t))
		return -RMQ_EINVAL;
	memcpy(&v, val, sizeof(v));
	if (v > (eager ? RMQ_EAGER_LIMIT : RMQ_INJECT_BUF - RMQ_HDR_SIZE))
		return -RMQ_EINVAL;
	if (s->ep != NULL && eager &&
	    (v > rmq_tx_payload_max(s) || v < s->paths.inject_max))
		return -RMQ_EINVAL;
	if (s->ep != NULL && !eager &&
	    (v > s->dom->caps.inject_max || !s->dom->caps.inject ||
	     v > s->paths.eager_max))
		return -RMQ_EINVAL;
	if (eager)
		s->popts.eager_max = v;
	else
		s->popts.inject_max = v;
	return opt_paths_apply(s, &old);
}

static int
opt_paths(struct rmq_socket *s, int opt, const void *val, size_t len)
{
	struct rmq_path_opts old = s->popts;
	size_t               sz  = 0;
	int                  v   = 0, rc;

	if (opt == RMQ_RING_MAX) {
		if (val == NULL || len != sizeof(size_t))
			return -RMQ_EINVAL;
		memcpy(&sz, val, sizeof(sz));
		if (sz > RMQ_EAGER_LIMIT)
			return -RMQ_EINVAL;
		s->popts.ring_max     = sz;
		s->popts.ring_max_set = true;
	} else {
		rc = rmq_opt_int(val, len, -1, &v);
		if (rc != 0)
			return rc;
		if (opt == RMQ_FANOUT_LOG) {
			if (v < 0 || v > 64)
				return -RMQ_EINVAL;
			s->popts.fanout_log = v;
		} else if (opt == RMQ_RNDV_PATH) {
			if (rmq_path_kind(v) != RMQ_ROW_LARGE)
				return -RMQ_EINVAL;
			s->popts.rndv_path = v;
		} else {
			if (v >= rmq_path_count())
				return -RMQ_EINVAL;
			s->popts.force = v;
		}
	}
	return opt_paths_apply(s, &old);
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
		rmq_log(RMQ_LOG_INFO, "RMQ_NAME: expected 1 to %d of "
		        "A-Z a-z 0-9 _ -", RMQ_CFG_NAME_MAX - 1);
		return -RMQ_EINVAL;
	}
	if (s->ep != NULL)
		return -RMQ_EFSM;
	memcpy(s->name, name, len);
	s->name[len] = '\0';
	return 0;
}

/* RMQ_ROUTING_ID: 1 to 255 bytes, not starting with a zero byte (a
 * ROUTER's own ids do), told to peers in the handshake. */
static int
opt_routing_id(struct rmq_socket *s, const void *val, size_t len)
{
	if (val == NULL || len == 0 || len > sizeof(s->rid) ||
	    ((const uint8_t *) val)[0] == 0) {
		rmq_log(RMQ_LOG_INFO, "RMQ_ROUTING_ID: expected 1 to %zu "
		        "bytes, the first not 0", sizeof(s->rid));
		return -RMQ_EINVAL;
	}
	if (s->ep != NULL)
		return -RMQ_EFSM;
	memcpy(s->rid, val, len);
	s->rid_len = (uint8_t) len;
	return 0;
}

int
rmq_setopt_locked(rmq_socket *s, int opt, const void *val, size_t len)
{
	int64_t v64;
	int     v, rc;

	switch (opt) {
	case RMQ_SNDTIMEO:
		return rmq_opt_int(val, len, -1, &s->sndtimeo);
	case RMQ_RCVTIMEO:
		return rmq_opt_int(val, len, -1, &s->rcvtimeo);
	case RMQ_LINGER:
		return rmq_opt_int(val, len, -1, &s->linger);
	case RMQ_CONNECT_TIMEOUT:
		return rmq_opt_int(val, len, 0, &s->connect_ms);
	case RMQ_RECONNECT_IVL:
		return rmq_opt_int(val, len, -1, &s->reconnect_ivl);
	case RMQ_RECONNECT_IVL_MAX:
		return rmq_opt_int(val, len, 0, &s->reconnect_ivl_max);
	case RMQ_CONNECT_ASYNC:
		if ((rc = rmq_opt_int(val, len, 0, &v)) == 0) {
			if (v > 1)
				return -RMQ_EINVAL;
			s->connect_async = v == 1;
		}
		return rc;
	case RMQ_SNDHWM:
		return rmq_opt_int(val, len, 1, &s->sndhwm);
	case RMQ_RCVHWM:
		/* Granted to peers in the handshake: set before connecting. */
		if (s->peers->n > 0)
			return -RMQ_EFSM;
		return rmq_opt_int(val, len, 1, &s->rcvhwm);
	case RMQ_MAXMSGSIZE:
		if (val == NULL || len != sizeof(int64_t))
			return -RMQ_EINVAL;
		memcpy(&v64, val, sizeof(v64));
		if (v64 < -1)
			return -RMQ_EINVAL;
		if (s->peers->n > 0)
			return -RMQ_EFSM; /* told to peers in the handshake */
		s->maxmsg = v64;
		return 0;
	case RMQ_INJECT_MAX:
		return opt_size(s, val, len, false);
	case RMQ_EAGER_MAX:
		return opt_size(s, val, len, true);
	case RMQ_RNDV_PATH:
	case RMQ_PATH:
	case RMQ_RING_MAX:
	case RMQ_FANOUT_LOG:
		return opt_paths(s, opt, val, len);
	case RMQ_NAME:
		return opt_name(s, val, len);
	case RMQ_ROUTING_ID:
		return opt_routing_id(s, val, len);
	default:
		/* The pattern's own options. */
		if (s->pat->setopt != NULL)
			return s->pat->setopt(s->pstate, s, opt, val, len);
		return -RMQ_EINVAL;
	}
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

/* An option that reads the path table: only once the endpoint is open. */
static int
get_table(struct rmq_socket *s, int opt, void *val, size_t *len)
{
	const struct rmq_path_table *t = &s->paths;

	if (s->ep == NULL)
		return -RMQ_ENOTCONN;
	switch (opt) {
	case RMQ_INJECT_MAX:
		return get_size(t->inject_max, val, len);
	case RMQ_EAGER_MAX:
		return get_size(t->eager_max, val, len);
	case RMQ_RNDV_PATH:
		return rmq_opt_get_int(t->rndv_path, val, len);
	case RMQ_PATH:
		return rmq_opt_get_int(t->force, val, len);
	case RMQ_FANOUT_LOG:
		return rmq_opt_get_int(t->fanout_log, val, len);
	default: /* RMQ_RING_MAX */
		return get_size(t->ring ? t->ring_max : 0, val, len);
	}
}

int
rmq_getopt_locked(rmq_socket *s, int opt, void *val, size_t *len)
{
	int rc;

	if (val == NULL || len == NULL)
		return -RMQ_EINVAL;
	switch (opt) {
	case RMQ_SNDTIMEO:
		return rmq_opt_get_int(s->sndtimeo, val, len);
	case RMQ_RCVTIMEO:
		return rmq_opt_get_int(s->rcvtimeo, val, len);
	case RMQ_LINGER:
		return rmq_opt_get_int(s->linger, val, len);
	case RMQ_CONNECT_TIMEOUT:
		return rmq_opt_get_int(s->connect_ms, val, len);
	case RMQ_RECONNECT_IVL:
		return rmq_opt_get_int(s->reconnect_ivl, val, len);
	case RMQ_RECONNECT_IVL_MAX:
		return rmq_opt_get_int(s->reconnect_ivl_max, val, len);
	case RMQ_CONNECT_ASYNC:
		return rmq_opt_get_int(s->connect_async, val, len);
	case RMQ_SNDHWM:
		return rmq_opt_get_int(s->sndhwm, val, len);
	case RMQ_RCVHWM:
		return rmq_opt_get_int(s->rcvhwm, val, len);
	case RMQ_TYPE:
		return rmq_opt_get_int(s->pat->type, val, len);
	case RMQ_RCVMORE:
		return rmq_opt_get_int(s->rx_more, val, len);
	case RMQ_NPEERS:
		return rmq_opt_get_int(s->peers->nlive, val, len);
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
	case RMQ_EAGER_MAX:
	case RMQ_RNDV_PATH:
	case RMQ_PATH:
	case RMQ_RING_MAX:
	case RMQ_FANOUT_LOG:
		return get_table(s, opt, val, len);
	case RMQ_STRICT:
		if (s->ep == NULL)
			return rmq_opt_get_int(s->ctx->cfg.strict, val, len);
		return rmq_opt_get_int(s->dom->caps.strict, val, len);
	case RMQ_NAME:
		return get_str(s->name, val, len);
	case RMQ_ROUTING_ID:
		if (*len < s->rid_len)
			return -RMQ_EINVAL;
		memcpy(val, s->rid, s->rid_len);
		*len = s->rid_len;
		return 0;
	case RMQ_DOMAIN_NAME:
		return get_str(s->info ? s->info->domain_attr->name : "", val,
		               len);
	case RMQ_FD:
		rc = rmq_reactor_fd(&s->reactor);
		return rc < 0 ? rc : rmq_opt_get_int(rc, val, len);
	case RMQ_EVENTS:
		return rmq_opt_get_int(rmq_sock_events(s, true), val, len);
	default:
		if (s->pat->getopt != NULL)
			return s->pat->getopt(s->pstate, s, opt, val, len);
		return -RMQ_EINVAL;
	}
}
