/*
 * What a pattern is to the engine: the ops table each pattern in
 * patterns/ implements (nng's protocols are the model), listed once in
 * patterns/registry.c, which opens sockets with it (rmq_sock_open).  The
 * core calls a pattern only through it; lib/pattern.h is what the core
 * offers back.  A pattern's sockets read the config's thresholds.SECTION,
 * named in its ops; it keeps its state in the core-allocated sock_size and
 * peer_size blocks and hears of peers through peer_added / peer_gone.
 *
 * Wire ids (the HELLO's pattern field; a peer is compatible when it sends
 * our peer_id, or one of peer_ids):
 *
 *   0x10 pair   <-> 0x10 pair
 *   0x20 pub    <-> 0x21 sub
 *   0x30 req    <-> 0x31 rep, 0x61 router
 *   0x31 rep    <-> 0x30 req, 0x60 dealer
 *   0x50 push   <-> 0x51 pull
 *   0x60 dealer <-> 0x61 router, 0x31 rep, 0x60 dealer
 *   0x61 router <-> 0x60 dealer, 0x30 req, 0x61 router
 */
#ifndef RMQ_PATTERN_OPS_H
#define RMQ_PATTERN_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "rmq.h"

struct rmq_out;
struct rmq_peer;
struct rmq_rxent;
struct rmq_socket;

/* What a socket can do now (events). */
#define RMQ_EV_IN  0x1 /* a receive would not block */
#define RMQ_EV_OUT 0x2 /* a send would not block */

struct rmq_pattern_ops {
	int         type;       /* RMQ_PAIR, RMQ_REQ, ... */
	const char *name;       /* "req" */
	const char *peer_name;  /* "rep" */
	const char *section;    /* its config section: thresholds.reqrep */
	uint16_t    self_id;    /* our wire id, sent in the HELLO */
	uint16_t    peer_id;    /* the wire id a peer must send */
	const uint16_t *peer_ids; /* or any of these (0-terminated) */
	int         max_peers;  /* 0: any number */
	bool        report_lost; /* a dead peer fails the next operation */
	bool        keep_sends; /* with no live peer and a connect under way,
	                         * sends wait in the backlog (backlog.h) */
	bool        own_sends;  /* a server's: a frame after a message's first
	                         * never waits for one peer to take it (a
	                         * large one is copied, RMQ_XFER_F_OWN) */
	bool        lossy;      /* drops by design (a PUB): a peer that left
	                         * with messages of ours untaken is counted,
	                         * logged at info, not warn */
	size_t      sock_size;  /* private state; the core allocates and
	                         * zeroes it */
	size_t      peer_size;  /* per peer, likewise (0: none) */

	/* After the state is allocated; before it is freed.  May be NULL. */
	int  (*init)(void *st, struct rmq_socket *s);
	void (*fini)(void *st);
	/* Send: 0 or -error; on success a msg in o is owned by the engine. */
	int  (*send)(void *st, struct rmq_socket *s, const struct rmq_out *o,
	             int flags);
	/*
	 * A frame after a message's first (RMQ_SNDMORE; RMQ_SNDMORE in flags
	 * if more follow it): the core sends it to the peers the first went
	 * to (rmq_pat_send); this delivers it where else the pattern put the
	 * first (a PUB's log).  0 or -error.  May be NULL.
	 */
	int  (*send_more)(void *st, struct rmq_socket *s,
	                  const struct rmq_out *o, int flags);
	/*
	 * A peer's HELLO was accepted (p still connecting; pp its block):
	 * its pattern's wire id and its RMQ_ROUTING_ID (rid_len 0: none).
	 * 0, or -error with why in reason, and the peer is refused (counted
	 * in handshake_errors).  May be NULL.
	 */
	int  (*hello_in)(void *st, struct rmq_socket *s, struct rmq_peer *p,
	                 void *pp, uint16_t pattern, const uint8_t *rid,
	                 size_t rid_len, char *reason, size_t rl);
	/* Receive: the next message for the application, in *e. */
	int  (*recv)(void *st, struct rmq_socket *s, struct rmq_rxent **e,
	             int flags);
	/* A peer completed its handshake / died or left.  pp: its
	 * peer_size block.  May be NULL. */
	void (*peer_added)(void *st, struct rmq_socket *s, struct rmq_peer *p,
	                   void *pp);
	void (*peer_gone)(void *st, struct rmq_socket *s, struct rmq_peer *p,
	                  void *pp);
	/* RMQ_EV_IN | RMQ_EV_OUT: what would not block now. */
	int  (*events)(void *st, struct rmq_socket *s);
	/* The pattern's own socket options; -RMQ_EINVAL for one it does not
	 * know.  May be NULL (then it has none). */
	int  (*setopt)(void *st, struct rmq_socket *s, int opt,
	               const void *val, size_t len);
	int  (*getopt)(void *st, struct rmq_socket *s, int opt, void *val,
	               size_t *len);
	/* Called on each message as the pattern takes it from the queues:
	 * false drops it (counted).  May be NULL (take everything). */
	bool (*rx_filter)(void *st, const struct rmq_socket *s,
	                  const struct rmq_rxent *e);
	/*
	 * A pattern frame from p on its control channel (a SUB's
	 * subscriptions, a PUB's acknowledgements): 0, or -RMQ_EPROTO and
	 * the peer is dropped.  May be NULL (then any such frame is).
	 */
	int  (*ctrl_rx)(void *st, struct rmq_socket *s, struct rmq_peer *p,
	                void *pp, const uint8_t *body, size_t len);
	/*
	 * After the handshake, rmq_connect returns only once this says the
	 * new peer is ready (a PUB: it has the SUB's subscriptions; a SUB:
	 * its publisher acknowledged them).  May be NULL (ready at once).
	 */
	bool (*peer_ready)(void *st, struct rmq_socket *s, struct rmq_peer *p,
	                   void *pp);
	/*
	 * rmq_close lingers (RMQ_LINGER) until this says nothing the pattern
	 * holds for its peers is still to be taken (a PUB's log: every
	 * subscriber read it to the end).  May be NULL.
	 */
	bool (*flushed)(void *st, struct rmq_socket *s);
	/*
	 * A peer said BYE and its messages are in: may we let it go (it
	 * frees what we may still be reading, a SUB's log)?  Asked again
	 * until yes, within the handshake timeout.  May be NULL.
	 */
	bool (*peer_quiet)(void *st, struct rmq_socket *s, struct rmq_peer *p,
	                   void *pp);
};

/* May a socket of ops talk to a peer that sent wire id pattern? */
static inline bool
rmq_pattern_takes(const struct rmq_pattern_ops *ops, uint16_t pattern)
{
	const uint16_t *id;

	if (ops->peer_ids == NULL)
		return pattern == ops->peer_id;
	for (id = ops->peer_ids; *id != 0; id++)
		if (*id == pattern)
			return true;
	return false;
}

/*
 * The registry (patterns/registry.c), on top of the core: the public
 * rmq_ctx_new and rmq_socket_open live there and call down into the core
 * below (as nng's protocols call nni_proto_open); nothing in lib/ calls
 * up into it.  These two are for the tools and the tests.
 */
const struct rmq_pattern_ops *rmq_pattern_find(int type);
/* Every pattern, NULL-terminated. */
const struct rmq_pattern_ops *const *rmq_pattern_all(void);

/* What the core offers the registry. */
/* A socket of the pattern ops (lib/sock.c); ctx, ops and sp not NULL. */
int rmq_sock_open(rmq_ctx *ctx, const struct rmq_pattern_ops *ops,
                  rmq_socket **sp);
/*
 * A check of the loaded config from above: 0, or -RMQ_ECONFIG with
 * "FILE:LINE:COL: ..." in err.
 */
typedef int (*rmq_cfg_check_fn)(const struct rmq_config *cfg, char *err,
                                size_t errlen);
/* A context (lib/ctx.c), as rmq_ctx_new says; check (may be NULL) runs
 * after the config was checked against this machine. */
int rmq_ctx_open(rmq_ctx **ctxp, const char *config_path,
                 rmq_cfg_check_fn check);

#endif /* RMQ_PATTERN_OPS_H */
