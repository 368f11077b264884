/*
 * REQ/REP.
 *
 * REQ: send, then recv, strictly alternating.  Requests go round-robin to
 * the live REPs; each carries a fresh 32-bit id, and a reply is accepted
 * only from the REP that got the request and only with its id (anything
 * else is a stale reply and is dropped, counted).  If that REP dies, recv
 * fails with -ECONNRESET and the REQ may send again.
 *
 *        send ok              recv ok / peer died
 *   IDLE ---------> WAITING ----------------------> IDLE
 *
 * REP: recv, then send.  Requests are fair-queued across REQs (round-robin
 * over peers with a message); the reply goes to the asker with its id.  A
 * reply to a REQ that died fails with -ECONNRESET and the REP may recv
 * again.
 */
#include "pattern.h"

struct req_state {
	bool     waiting;
	uint32_t peer_id;
	uint32_t msgid;
};

struct rep_state {
	bool     has_req;
	uint32_t peer_id;
	uint32_t msgid;
};

static int
req_send(void *st, struct rmq_socket *s, const struct rmq_out *o, int flags)
{
	struct req_state *r = st;
	struct rmq_peer  *p;
	uint32_t          id, pid;
	int               rc;

	if (r->waiting)
		return -RMQ_EFSM;
	rc = rmq_sock_next_peer(s, flags, s->sndtimeo, &p);
	if (rc != 0)
		return rc;
	id = ++s->next_msgid;
	if (id == 0)
		id = ++s->next_msgid;
	pid = p->id; /* p may be gone when the send returns */
	rc  = rmq_xfer_send(s, p, o, id, flags);
	if (rc == 0) {
		r->waiting = true;
		r->peer_id = pid;
		r->msgid   = id;
	}
	return rc;
}

/* Drop stale replies everywhere; 1 when our reply is at a queue head. */
static int
req_ready(struct rmq_socket *s, void *arg)
{
	struct req_state *r = arg;
	struct rmq_peer  *p;
	int               i;

	for (i = 0; i < s->peers_cap; i++) {
		p = s->peers[i];
		while (p != NULL && p->qhead != NULL &&
		       (p->id != r->peer_id || p->qhead->msgid != r->msgid)) {
			rmq_xfer_discard(s, rmq_rxq_pop(s, p));
			p = s->peers[i]; /* discard may reap it */
		}
	}
	p = rmq_peer_lookup(s, r->peer_id);
	if (p != NULL && p->qhead != NULL)
		return 1;
	if (p == NULL || p->state == RMQ_PEER_DEAD) {
		r->waiting = false;
		return -RMQ_ECONNRESET;
	}
	return 0;
}

static int
req_recv(void *st, struct rmq_socket *s, struct rmq_rxent **e, int flags)
{
	struct req_state *r = st;
	int               rc;

	if (!r->waiting)
		return -RMQ_EFSM;
	rc = rmq_sock_wait(s, flags, s->rcvtimeo, req_ready, r);
	if (rc != 0)
		return rc;
	*e         = rmq_rxq_pop(s, rmq_peer_lookup(s, r->peer_id));
	r->waiting = false;
	return 0;
}

static int
rep_recv(void *st, struct rmq_socket *s, struct rmq_rxent **e, int flags)
{
	struct rep_state *r = st;
	int               rc;

	if (r->has_req)
		return -RMQ_EFSM;
	rc = rmq_sock_recv_any(s, flags, e);
	if (rc != 0)
		return rc;
	r->has_req = true;
	r->peer_id = (*e)->peer->id;
	r->msgid   = (*e)->msgid;
	return 0;
}

static int
rep_send(void *st, struct rmq_socket *s, const struct rmq_out *o, int flags)
{
	struct rep_state *r = st;
	struct rmq_peer  *p;
	int               rc;

	if (!r->has_req)
		return -RMQ_EFSM;
	p = rmq_peer_lookup(s, r->peer_id);
	if (!rmq_peer_usable(p)) {
		r->has_req = false;
		return -RMQ_ECONNRESET;
	}
	rc = rmq_xfer_send(s, p, o, r->msgid, flags);
	/*
	 * Nothing went out on a timeout, or when no path can carry this
	 * reply (EMSGSIZE, ENOTSUP): the request stays pending and the
	 * application may answer again, e.g. with a smaller reply.
	 */
	if (rc != -RMQ_EAGAIN && rc != -RMQ_EMSGSIZE && rc != -RMQ_ENOTSUP)
		r->has_req = false;
	return rc;
}

const struct rmq_pattern_ops rmq_pattern_req = {
	.name         = "req",
	.peer_name    = "rep",
	.wire_id      = RMQ_WIRE_REQ,
	.cfg_pat      = RMQ_CFG_PAT_REQREP,
	.max_peers    = 0,
	.report_lost  = true,
	.state_size   = sizeof(struct req_state),
	.send         = req_send,
	.recv         = req_recv,
	.peer_gone    = NULL,
};

const struct rmq_pattern_ops rmq_pattern_rep = {
	.name         = "rep",
	.peer_name    = "req",
	.wire_id      = RMQ_WIRE_REP,
	.cfg_pat      = RMQ_CFG_PAT_REQREP,
	.max_peers    = 0,
	.report_lost  = false, /* a server outlives its clients */
	.state_size   = sizeof(struct rep_state),
	.send         = rep_send,
	.recv         = rep_recv,
	.peer_gone    = NULL,
};
