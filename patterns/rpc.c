/*
 * DEALER and ROUTER: asynchronous requests and replies (rmq_rpc(7)).
 *
 * DEALER: each message goes to one peer, round-robin over those with room,
 * as PUSH's do (never dropped: the send waits, or -RMQ_EAGAIN); messages
 * come in fair-queued.  Any number may be in flight.
 *
 * ROUTER: every message received starts with a frame holding its peer's
 * routing id (RMQ_ROUTING_ID, told in the HELLO, or one we make: a zero
 * byte and a 32-bit count); a message sent starts with the routing id of
 * the peer it goes to, which is consumed.  A peer may be addressed once its
 * handshake is complete.  An id no live peer holds: the message is dropped
 * and counted, or with RMQ_ROUTER_MANDATORY the send of that first frame
 * fails with -RMQ_EHOSTUNREACH.  A send waits for the peer's room as any
 * directed send does (RMQ_SNDTIMEO, RMQ_DONTWAIT), in the routing id's
 * send: once it returns, the message's frames go.
 *
 * REQ and REP peers speak without envelopes (a REQ's reply is matched by
 * its request id): at the edge a ROUTER gives a REQ's request as [id][empty
 * frame][body] and takes the reply as [id][empty][reply], the empty frame
 * not sent, the reply carrying the request's id; a DEALER sends a REP
 * [empty][body] without the empty frame and gives its reply as
 * [empty][reply].  As in ZeroMQ, these are the pairs: DEALER-ROUTER,
 * DEALER-REP, DEALER-DEALER, REQ-ROUTER, ROUTER-ROUTER.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "path_ops.h"
#include "pattern.h"
#include "util.h"

#define WIRE_REQ    0x30
#define WIRE_REP    0x31
#define WIRE_DEALER 0x60
#define WIRE_ROUTER 0x61

/* A peer, as either of them sees it. */
struct rpc_peer {
	uint16_t pattern;   /* its wire id */
	uint8_t  id_len;
	uint8_t  id[255];   /* ROUTER: its routing id */
	uint32_t req_msgid; /* ROUTER, a REQ peer: its last request's id */
};

/* ---- the ROUTER's routing ids: open addressing, keys copied ---- */

struct id_slot {
	uint32_t peer;      /* 0: empty; ID_GONE: a deleted one */
	uint32_t hash;
	uint8_t  len;
	uint8_t  key[255];
};

#define ID_GONE 1u /* no peer id is 1: the table's index 1 has gen >= 1 */

struct id_table {
	struct id_slot *slot;
	uint32_t        cap, used; /* used: live and deleted slots */
};

static uint32_t
id_hash(const uint8_t *k, size_t len)
{
	uint32_t h = 2166136261u; /* FNV-1a */
	size_t   i;

	for (i = 0; i < len; i++)
		h = (h ^ k[i]) * 16777619u;
	return h;
}

/* The slot holding key, or NULL. */
static struct id_slot *
id_find(const struct id_table *t, const uint8_t *k, size_t len)
{
	uint32_t        h = id_hash(k, len), i;
	struct id_slot *e;

	if (t->cap == 0)
		return NULL;
	for (i = h & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
		e = &t->slot[i];
		if (e->peer == 0)
			return NULL;
		if (e->peer != ID_GONE && e->hash == h && e->len == len &&
		    memcmp(e->key, k, len) == 0)
			return e;
	}
}

static int id_put(struct id_table *t, const uint8_t *k, size_t len,
                  uint32_t peer);

static int
id_grow(struct id_table *t)
{
	struct id_table n = {NULL, t->cap ? 2 * t->cap : 64, 0};
	uint32_t        i;

	/* Mostly deleted slots: rebuilt at the same size. */
	if (t->cap > 0 && t->used > 0 && n.cap > 64) {
		uint32_t live = 0;

		for (i = 0; i < t->cap; i++)
			live += t->slot[i].peer > ID_GONE;
		if (live < t->cap / 4)
			n.cap = t->cap;
	}
	n.slot = calloc(n.cap, sizeof(*n.slot));
	if (n.slot == NULL)
		return -RMQ_ENOMEM;
	for (i = 0; i < t->cap; i++)
		if (t->slot[i].peer > ID_GONE)
			(void) id_put(&n, t->slot[i].key, t->slot[i].len,
			              t->slot[i].peer);
	free(t->slot);
	*t = n;
	return 0;
}

/* key -> peer (a new key: the caller found none). */
static int
id_put(struct id_table *t, const uint8_t *k, size_t len, uint32_t peer)
{
	uint32_t        h = id_hash(k, len), i;
	struct id_slot *e;

	if ((t->used + 1) * 10 > t->cap * 7 && id_grow(t) != 0)
		return -RMQ_ENOMEM;
	for (i = h & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
		e = &t->slot[i];
		if (e->peer <= ID_GONE)
			break;
	}
	if (e->peer == 0)
		t->used++;
	e->peer = peer;
	e->hash = h;
	e->len  = (uint8_t) len;
	memcpy(e->key, k, len);
	return 0;
}

/* ---- ROUTER ---- */

struct router_state {
	struct id_table ids;
	uint32_t        next_id;   /* the next routing id we make */
	int             mandatory; /* RMQ_ROUTER_MANDATORY */
	bool            strip;     /* the frame after the routing id is a
	                            * REQ's empty one: not sent */
};

static int
router_init(void *stp, struct rmq_socket *s)
{
	struct router_state *r = stp;

	RMQ_UNUSED(s);
	/* Made ids start anywhere, as ZeroMQ's do: a peer that kept one from
	 * a ROUTER before ours restarted does not reach another by it. */
	r->next_id = (uint32_t) rmq_random64();
	return 0;
}

static void
router_fini(void *stp)
{
	struct router_state *r = stp;

	free(r->ids.slot);
}

static int
router_hello_in(void *stp, struct rmq_socket *s, struct rmq_peer *p,
                void *pp, uint16_t pattern, const uint8_t *rid,
                size_t rid_len, char *reason, size_t rl)
{
	struct router_state *r  = stp;
	struct rpc_peer     *rp = pp;
	struct id_slot      *e;
	uint8_t              made[5];

	rp->pattern = pattern;
	if (rid_len == 0) {
		/* Ours: a zero byte first, which a peer's own may not have. */
		made[0] = 0;
		made[1] = (uint8_t) (r->next_id >> 24);
		made[2] = (uint8_t) (r->next_id >> 16);
		made[3] = (uint8_t) (r->next_id >> 8);
		made[4] = (uint8_t) r->next_id;
		r->next_id++;
		rid     = made;
		rid_len = sizeof(made);
	}
	e = id_find(&r->ids, rid, rid_len);
	if (e != NULL && rmq_pat_peer_present(s, e->peer)) {
		snprintf(reason, rl, "routing id already connected");
		return -RMQ_EADDRINUSE;
	}
	rp->id_len = (uint8_t) rid_len;
	memcpy(rp->id, rid, rid_len);
	if (e != NULL) {
		e->peer = rmq_pat_peer_id(p); /* its last holder left */
		return 0;
	}
	if (id_put(&r->ids, rid, rid_len, rmq_pat_peer_id(p)) != 0) {
		snprintf(reason, rl, "out of memory");
		return -RMQ_ENOMEM;
	}
	return 0;
}

static void
router_peer_gone(void *stp, struct rmq_socket *s, struct rmq_peer *p,
                 void *pp)
{
	struct router_state *r  = stp;
	struct rpc_peer     *rp = pp;
	struct id_slot      *e  = id_find(&r->ids, rp->id, rp->id_len);

	RMQ_UNUSED(s);
	if (e != NULL && e->peer == rmq_pat_peer_id(p))
		e->peer = ID_GONE;
}

struct room_wait {
	const uint8_t *id;
	size_t         len;
	struct router_state *r;
	struct rmq_peer     *p;
};

/* The peer holding the routing id has room: 1; it is not there: 2. */
static int
peer_room(struct rmq_socket *s, void *arg)
{
	struct room_wait *w = arg;
	struct id_slot   *e = id_find(&w->r->ids, w->id, w->len);

	w->p = e != NULL ? rmq_pat_peer(s, e->peer) : NULL;
	if (w->p == NULL)
		return 2;
	return rmq_pat_peer_writable(s, w->p) ? 1 : 0;
}

static int
router_send(void *stp, struct rmq_socket *s, const struct rmq_out *o,
            int flags)
{
	struct router_state *r = stp;
	struct room_wait     w = {o->buf, o->len, r, NULL};
	struct rpc_peer     *rp;
	int                  rc;

	if (o->msg != NULL) {
		w.id  = rmq_msg_data(o->msg);
		w.len = rmq_msg_size(o->msg);
	}
	/* A routing id alone is a message of nothing: none goes. */
	if (!(flags & RMQ_SNDMORE))
		goto consumed;
	rc = peer_room(s, &w);
	if (rc == 0)
		rc = rmq_pat_wait(s, flags, rmq_pat_sndtimeo(s), peer_room, &w);
	if (rc < 0)
		return rc;
	if (w.p == NULL) {
		if (r->mandatory)
			return -RMQ_EHOSTUNREACH; /* nothing began */
		rmq_pat_count_drop(s); /* its frames go nowhere */
		goto consumed;
	}
	rp = rmq_pat_peer_state(w.p);
	rc = rmq_pat_send_later(s, w.p,
	                        rp->pattern == WIRE_REQ ? rp->req_msgid : 0);
	if (rc != 0)
		return rc;
	r->strip = rp->pattern == WIRE_REQ;
consumed:
	if (o->msg != NULL)
		rmq_msg_free(o->msg);
	return 0;
}

static int
router_send_more(void *stp, struct rmq_socket *s, const struct rmq_out *o,
                 int flags)
{
	struct router_state *r = stp;
	size_t               len;

	if (r->strip) {
		r->strip = false;
		len      = o->msg != NULL ? rmq_msg_size(o->msg) : o->len;
		/* A REQ's envelope: its empty frame stays here. */
		if (len == 0 && (flags & RMQ_SNDMORE)) {
			if (o->msg != NULL)
				rmq_msg_free(o->msg);
			return 0;
		}
	}
	return rmq_pat_send_rest(s, o, flags);
}

static int
router_recv(void *stp, struct rmq_socket *s, struct rmq_rxent **e,
            int flags)
{
	struct rmq_peer  *p;
	struct rpc_peer  *rp;
	struct rmq_rxent *id, *delim = NULL;
	int               rc;

	RMQ_UNUSED(stp);
	rc = rmq_pat_recv_any(s, flags, e);
	if (rc != 0)
		return rc;
	p  = rmq_pat_msg_peer(*e);
	rp = rmq_pat_peer_state(p);
	id = rmq_pat_rx_made(s, p, rp->id, rp->id_len);
	if (rp->pattern == WIRE_REQ) {
		rp->req_msgid = rmq_pat_msg_id(*e);
		delim         = rmq_pat_rx_made(s, p, NULL, 0);
	}
	if (id == NULL || (rp->pattern == WIRE_REQ && delim == NULL)) {
		rmq_pat_rx_unmake(s, id);
		rmq_pat_rx_unmake(s, delim);
		rmq_pat_drop(s, *e);
		return -RMQ_ENOMEM;
	}
	if (delim != NULL)
		rmq_pat_rx_then(s, delim);
	rmq_pat_rx_then(s, *e);
	*e = id;
	return 0;
}

static int
router_events(void *stp, struct rmq_socket *s)
{
	RMQ_UNUSED(stp);
	/* A send never waits for a peer it cannot find, and one it can is
	 * waited for in the send: always writable, as ZeroMQ's is. */
	return RMQ_EV_OUT | (rmq_pat_readable(s) ? RMQ_EV_IN : 0);
}

static int
router_setopt(void *stp, struct rmq_socket *s, int opt, const void *val,
              size_t len)
{
	struct router_state *r = stp;
	int                  v;

	RMQ_UNUSED(s);
	if (opt != RMQ_ROUTER_MANDATORY || val == NULL || len != sizeof(int))
		return -RMQ_EINVAL;
	memcpy(&v, val, sizeof(v));
	if (v != 0 && v != 1)
		return -RMQ_EINVAL;
	r->mandatory = v;
	return 0;
}

static int
router_getopt(void *stp, struct rmq_socket *s, int opt, void *val,
              size_t *len)
{
	struct router_state *r = stp;

	RMQ_UNUSED(s);
	if (opt != RMQ_ROUTER_MANDATORY || *len < sizeof(int))
		return -RMQ_EINVAL;
	memcpy(val, &r->mandatory, sizeof(int));
	*len = sizeof(int);
	return 0;
}

/* ---- DEALER ---- */

static int
dealer_hello_in(void *stp, struct rmq_socket *s, struct rmq_peer *p,
                void *pp, uint16_t pattern, const uint8_t *rid,
                size_t rid_len, char *reason, size_t rl)
{
	struct rpc_peer *dp = pp;

	RMQ_UNUSED(stp);
	RMQ_UNUSED(s);
	RMQ_UNUSED(p);
	RMQ_UNUSED(rid);
	RMQ_UNUSED(rid_len);
	RMQ_UNUSED(reason);
	RMQ_UNUSED(rl);
	dp->pattern = pattern;
	return 0;
}

/* The message's first frame to p: to a REP, an empty first frame with
 * more after it is the envelope's, not sent. */
static int
dealer_to(struct rmq_socket *s, struct rmq_peer *p, const struct rmq_out *o,
          uint32_t msgid, int flags)
{
	const struct rpc_peer *dp  = rmq_pat_peer_state(p);
	size_t                 len = o->msg != NULL ? rmq_msg_size(o->msg)
	                                            : o->len;
	int                    rc;

	if (dp->pattern != WIRE_REP || len != 0 || !(flags & RMQ_SNDMORE))
		return rmq_pat_send(s, p, o, msgid, flags);
	rc = rmq_pat_send_later(s, p, msgid);
	if (rc == 0 && o->msg != NULL)
		rmq_msg_free(o->msg);
	return rc;
}

static int
dealer_send(void *stp, struct rmq_socket *s, const struct rmq_out *o,
            int flags)
{
	RMQ_UNUSED(stp);
	return rmq_pat_send_one(s, o, flags, dealer_to);
}

static int
dealer_recv(void *stp, struct rmq_socket *s, struct rmq_rxent **e,
            int flags)
{
	struct rmq_peer  *p;
	struct rmq_rxent *delim;
	int               rc;

	RMQ_UNUSED(stp);
	rc = rmq_pat_recv_any(s, flags, e);
	if (rc != 0)
		return rc;
	p = rmq_pat_msg_peer(*e);
	if (((struct rpc_peer *) rmq_pat_peer_state(p))->pattern != WIRE_REP)
		return 0;
	/* A REP's reply, in the envelope a DEALER expects. */
	delim = rmq_pat_rx_made(s, p, NULL, 0);
	if (delim == NULL) {
		rmq_pat_drop(s, *e);
		return -RMQ_ENOMEM;
	}
	rmq_pat_rx_then(s, *e);
	*e = delim;
	return 0;
}

static int
dealer_events(void *stp, struct rmq_socket *s)
{
	RMQ_UNUSED(stp);
	return (rmq_pat_readable(s) ? RMQ_EV_IN : 0) |
	       (rmq_pat_writable(s) ? RMQ_EV_OUT : 0);
}

static const uint16_t dealer_peers[] = {WIRE_ROUTER, WIRE_REP, WIRE_DEALER,
                                        0};
static const uint16_t router_peers[] = {WIRE_DEALER, WIRE_REQ, WIRE_ROUTER,
                                        0};

const struct rmq_pattern_ops rmq_pattern_dealer = {
	.type        = RMQ_DEALER,
	.name        = "dealer",
	.peer_name   = "router, rep or dealer",
	.section     = "rpc",
	.self_id     = WIRE_DEALER,
	.peer_ids    = dealer_peers,
	.report_lost = false,
	.keep_sends  = true,
	.peer_size   = sizeof(struct rpc_peer),
	.hello_in    = dealer_hello_in,
	.send        = dealer_send,
	.recv        = dealer_recv,
	.events      = dealer_events,
};

const struct rmq_pattern_ops rmq_pattern_router = {
	.type        = RMQ_ROUTER,
	.name        = "router",
	.peer_name   = "dealer, req or router",
	.section     = "rpc",
	.self_id     = WIRE_ROUTER,
	.peer_ids    = router_peers,
	.report_lost = false, /* a server outlives its clients */
	.own_sends   = true,
	.sock_size   = sizeof(struct router_state),
	.peer_size   = sizeof(struct rpc_peer),
	.init        = router_init,
	.fini        = router_fini,
	.hello_in    = router_hello_in,
	.send        = router_send,
	.send_more   = router_send_more,
	.recv        = router_recv,
	.peer_gone   = router_peer_gone,
	.events      = router_events,
	.setopt      = router_setopt,
	.getopt      = router_getopt,
};
