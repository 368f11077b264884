/*
 * PAIR: one peer, both directions, in order.  A second peer is refused in
 * the handshake (RMQ_EPEERFULL).
 */
#include "pattern.h"

static int
pair_send(void *st, struct rmq_socket *s, const struct rmq_out *o, int flags)
{
	struct rmq_peer *p;
	int              rc;

	RMQ_UNUSED(st);
	rc = rmq_sock_next_peer(s, flags, s->sndtimeo, &p);
	if (rc == 0)
		rc = rmq_xfer_send(s, p, o, 0, flags);
	return rc;
}

static int
pair_recv(void *st, struct rmq_socket *s, struct rmq_rxent **e, int flags)
{
	RMQ_UNUSED(st);
	return rmq_sock_recv_any(s, flags, e);
}

const struct rmq_pattern_ops rmq_pattern_pair = {
	.name         = "pair",
	.peer_name    = "pair",
	.wire_id      = RMQ_WIRE_PAIR,
	.cfg_pat      = RMQ_CFG_PAT_PAIR,
	.max_peers    = 1,
	.report_lost  = true,
	.state_size   = 0,
	.send         = pair_send,
	.recv         = pair_recv,
	.peer_gone    = NULL,
};
