/*
 * REQ/REP.
 *
 * REQ: send, then recv.  Requests go round-robin to the live REPs; each
 * carries a fresh 32-bit id, and a reply is accepted only from the REP
 * that got the request and only with its id (anything else is a stale
 * reply: the receive filter drops it, counted).  If that REP dies, recv
 * fails with -ECONNRESET and the REQ may send again.  A send while a
 * request is outstanding cancels it, as NNG's REQ does: its reply, if it
 * comes, is stale.
 *
 *        send ok              recv ok / peer died
 *   IDLE ---------> WAITING ----------------------> IDLE
 *                    |  ^
 *                    +--+ send ok (the last request cancelled)
 *
 * REP: recv, then send.  Requests are fair-queued across REQs (round-robin
 * over peers with a message); the reply goes to the asker with its id.  A
 * reply to a REQ that died fails with -ECONNRESET and the REP may recv
 * again.  A reply that cannot go (a timeout, too big for the asker) leaves
 * the request answerable; a recv drops it (counted) and takes the next,
 * so a plain recv-reply loop never wedges.
 */
#include "path_ops.h"
#include "pattern.h"
#include "util.h"

struct req_state {
	bool     waiting;
	bool     lost;       /* the REP asked died */
	uint32_t peer_id;
	uint32_t msgid;
	uint32_t next_msgid;
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

	/* While waiting: the new request replaces the old (whose reply the
	 * filter will drop), once it is sent. */
	rc = rmq_pat_next_peer(s, flags, rmq_pat_sndtimeo(s), &p);
	if (rc != 0)
		return rc;
	/* 31 bits, never 0: the top one is the frames' (wire.h). */
	r->next_msgid = (r->next_msgid + 1) & 0x7fffffffu;
	if (r->next_msgid == 0)
		r->next_msgid = 1;
	id = r->next_msgid;
	pid = rmq_pat_peer_id(p); /* p may be gone when the send returns */
	rc  = rmq_pat_send(s, p, o, id, flags);
	if (rc == 0) {
		r->waiting = true;
		r->lost    = false;
		r->peer_id = pid;
		r->msgid   = id;
	}
	return rc;
}

/* Only the reply to our request, from the REP we asked. */
static bool
req_filter(void *st, const struct rmq_socket *s, const struct rmq_rxent *e)
{
	const struct req_state *r = st;

	RMQ_UNUSED(s);
	return r->waiting && rmq_pat_msg_id(e) == r->msgid &&
	       rmq_pat_peer_id(rmq_pat_msg_peer(e)) == r->peer_id;
}

static void
req_peer_gone(void *st, struct rmq_socket *s, struct rmq_peer *p, void *pp)
{
	struct req_state *r = st;

	RMQ_UNUSED(s);
	RMQ_UNUSED(pp);
	if (r->waiting && rmq_pat_peer_id(p) == r->peer_id)
		r->lost = true;
}

struct req_wait {
	struct req_state  *r;
	struct rmq_rxent **e;
};

/* Our reply, or the news that its REP died. */
static int
req_ready(struct rmq_socket *s, void *arg)
{
	struct req_wait *rw = arg;

	if (rmq_pat_take(s, rw->e))
		return 1;
	if (rw->r->lost) {
		rw->r->waiting = false;
		return -RMQ_ECONNRESET;
	}
	return 0;
}

static int
req_recv(void *st, struct rmq_socket *s, struct rmq_rxent **e, int flags)
{
	struct req_state *r  = st;
	struct req_wait   rw = {r, e};
	int               rc;

	if (!r->waiting)
		return -RMQ_EFSM;
	rc = rmq_pat_wait(s, flags, rmq_pat_rcvtimeo(s), req_ready, &rw);
	if (rc != 0)
		return rc;
	r->waiting = false;
	return 0;
}

static int
req_events(void *st, struct rmq_socket *s)
{
	struct req_state *r = st;

	if (r->waiting)
		return rmq_pat_readable(s) || r->lost ? RMQ_EV_IN : 0;
	return rmq_pat_writable(s) ? RMQ_EV_OUT : 0;
}

static int
rep_recv(void *st, struct rmq_socket *s, struct rmq_rxent **e, int flags)
{
	struct rep_state *r = st;
	int               rc;

	rc = rmq_pat_recv_any(s, flags, e);
	if (rc != 0)
		return rc;
	if (r->has_req) /* the last request goes unanswered */
		rmq_pat_count_drop(s);
	r->has_req = true;
	r->peer_id = rmq_pat_peer_id(rmq_pat_msg_peer(*e));
	r->msgid   = rmq_pat_msg_id(*e);
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
	p = rmq_pat_peer(s, r->peer_id);
	if (p == NULL) {
		r->has_req = false;
		return -RMQ_ECONNRESET;
	}
	/* A server never waits for one client to take its reply (a zero-copy
	 * rendezvous would wait for its FIN, and a client that stopped
	 * reading would hold up every other): a large reply is copied, as
	 * PUSH's messages are (rmq_msg_send hands its message over). */
	rc = rmq_pat_send(s, p, o, r->msgid, flags | RMQ_XFER_F_OWN);
	/*
	 * Nothing went out on a timeout, or when no path can carry this
	 * reply (EMSGSIZE, ENOTSUP): the request stays pending and the
	 * application may answer again, e.g. with a smaller reply.
	 */
	if (rc != -RMQ_EAGAIN && rc != -RMQ_EMSGSIZE && rc != -RMQ_ENOTSUP)
		r->has_req = false;
	return rc;
}

static int
rep_events(void *st, struct rmq_socket *s)
{
	struct rep_state *r = st;

	if (!r->has_req)
		return rmq_pat_readable(s) ? RMQ_EV_IN : 0;
	return rmq_pat_peer(s, r->peer_id) != NULL ? RMQ_EV_OUT : 0;
}

/* As in ZeroMQ, a REQ also talks to a ROUTER, a REP to a DEALER (rpc.c). */
static const uint16_t req_peers[] = {0x31, 0x61, 0};
static const uint16_t rep_peers[] = {0x30, 0x60, 0};

const struct rmq_pattern_ops rmq_pattern_req = {
	.type        = RMQ_REQ,
	.name        = "req",
	.peer_name   = "rep or router",
	.section     = "reqrep",
	.self_id     = 0x30,
	.peer_id     = 0x31,
	.peer_ids    = req_peers,
	.report_lost = true,
	.sock_size   = sizeof(struct req_state),
	.send        = req_send,
	.recv        = req_recv,
	.peer_gone   = req_peer_gone,
	.events      = req_events,
	.rx_filter   = req_filter,
};

const struct rmq_pattern_ops rmq_pattern_rep = {
	.type        = RMQ_REP,
	.name        = "rep",
	.peer_name   = "req or dealer",
	.section     = "reqrep",
	.self_id     = 0x31,
	.peer_id     = 0x30,
	.peer_ids    = rep_peers,
	.report_lost = false, /* a server outlives its clients */
	.own_sends   = true,
	.sock_size   = sizeof(struct rep_state),
	.send        = rep_send,
	.recv        = rep_recv,
	.events      = rep_events,
};
