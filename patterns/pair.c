/*
 * PAIR: one peer, both directions, in order.  A second peer is refused in
 * the handshake (RMQ_EPEERFULL).
 */
#include "pattern.h"
#include "util.h"

static int
pair_send(void *st, struct rmq_socket *s, const struct rmq_out *o, int flags)
{
	struct rmq_peer *p;
	int              rc;

	RMQ_UNUSED(st);
	rc = rmq_pat_next_peer(s, flags, rmq_pat_sndtimeo(s), &p);
	if (rc == 0)
		rc = rmq_pat_send(s, p, o, 0, flags);
	return rc;
}

static int
pair_events(void *st, struct rmq_socket *s)
{
	RMQ_UNUSED(st);
	return (rmq_pat_readable(s) ? RMQ_EV_IN : 0) |
	       (rmq_pat_writable(s) ? RMQ_EV_OUT : 0);
}

const struct rmq_pattern_ops rmq_pattern_pair = {
	.type        = RMQ_PAIR,
	.name        = "pair",
	.peer_name   = "pair",
	.section     = "pair",
	.self_id     = 0x10,
	.peer_id     = 0x10,
	.max_peers   = 1,
	.report_lost = true,
	.keep_sends  = true,
	.send        = pair_send,
	.recv        = rmq_pat_op_recv_any,
	.events      = pair_events,
};
