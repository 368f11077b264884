/*
 * What the core offers a pattern (pattern.c).  A pattern (its ops in
 * pattern_ops.h) reaches peers and queued messages only through these
 * helpers: it never touches the socket's peer table or queues.
 */
#ifndef RMQ_PATTERN_H
#define RMQ_PATTERN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pattern_ops.h"
#include "rmq.h"

/* ---- what the core offers a pattern (pattern.c) ---- */

/*
 * Block until cond(s, arg) says 1 (done) or < 0 (that error), or the
 * timeout passes (-RMQ_EAGAIN; 0 with RMQ_DONTWAIT); progress meanwhile.
 */
int  rmq_pat_wait(struct rmq_socket *s, int flags, int timeout_ms,
                  int (*cond)(struct rmq_socket *, void *), void *arg);
/* Wait for a usable peer, round-robin; -RMQ_ENOTCONN if none can ever
 * come (no listener, never connected), -RMQ_ECONNRESET once for a lost
 * one. */
int  rmq_pat_next_peer(struct rmq_socket *s, int flags, int timeout_ms,
                       struct rmq_peer **pp);
/* Send to p (rmq_xfer_send). */
int  rmq_pat_send(struct rmq_socket *s, struct rmq_peer *p,
                  const struct rmq_out *o, uint32_t msgid, int flags);
/*
 * Take the next message, fair-queued over peers, dropping those the
 * pattern's rx_filter refuses: 1 with *e, or 0 (none now).
 */
int  rmq_pat_take(struct rmq_socket *s, struct rmq_rxent **e);
/* Wait (RMQ_RCVTIMEO) for a message from any peer, or why none can come. */
int  rmq_pat_recv_any(struct rmq_socket *s, int flags, struct rmq_rxent **e);
/* Would a message be taken now / could a send go now (some usable peer
 * with credit)? */
bool rmq_pat_readable(struct rmq_socket *s);
bool rmq_pat_writable(struct rmq_socket *s);
/* The socket's RMQ_SNDTIMEO and RMQ_RCVTIMEO. */
int  rmq_pat_sndtimeo(const struct rmq_socket *s);
int  rmq_pat_rcvtimeo(const struct rmq_socket *s);
/* The peer of a message; p's id (stable while p lives). */
struct rmq_peer *rmq_pat_msg_peer(const struct rmq_rxent *e);
uint32_t         rmq_pat_peer_id(const struct rmq_peer *p);
/* The live peer with this id, or NULL (gone or dead). */
struct rmq_peer *rmq_pat_peer(struct rmq_socket *s, uint32_t id);
/* The wire's request id of a message. */
uint32_t         rmq_pat_msg_id(const struct rmq_rxent *e);

#endif /* RMQ_PATTERN_H */
