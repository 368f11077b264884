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
/* Wait for a peer with room (its credits, our RMQ_SNDHWM), round-robin;
 * errors as rmq_pat_next_peer. */
int  rmq_pat_next_writable(struct rmq_socket *s, int flags, int timeout_ms,
                           struct rmq_peer **pp);
/* One round of progress (cheap: the CQ, and about every ms the control
 * channels), for calls that may never wait, such as a PUB's send. */
void rmq_pat_progress(struct rmq_socket *s);
/* Could a message go to p now (live, a credit, our bound on sends)? */
bool rmq_pat_peer_writable(struct rmq_socket *s, const struct rmq_peer *p);
/* Can n more sends go without passing RMQ_SNDHWM (or is nothing in
 * flight)?  1 or 0. */
int  rmq_pat_sends_room(const struct rmq_socket *s, int n);
/* Send to p (rmq_xfer_send).  flags may add RMQ_XFER_F_OWN. */
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
/* The payload of a message if it is here already (else NULL: it will be
 * fetched when taken); *len its size. */
const uint8_t   *rmq_pat_msg_data(const struct rmq_socket *s,
                                  const struct rmq_rxent *e, size_t *len);
/* A pattern frame to p on its control channel (rmq_pattern_ops.ctrl_rx
 * gets it there); 0 or -error, and then p is failed. */
int  rmq_pat_ctrl_send(struct rmq_socket *s, struct rmq_peer *p,
                       const void *body, size_t len);
/* A message not sent to a peer for lack of room: rmq_stats().dropped. */
void             rmq_pat_count_drop(struct rmq_socket *s);
/* p's state (its peer_size block). */
void            *rmq_pat_peer_state(const struct rmq_peer *p);

/* ---- ops a pattern may use as they are ---- */

/* send / recv of a socket that only receives / only sends: ENOTSUP. */
int rmq_pat_op_no_send(void *st, struct rmq_socket *s,
                       const struct rmq_out *o, int flags);
int rmq_pat_op_no_recv(void *st, struct rmq_socket *s, struct rmq_rxent **e,
                       int flags);
/* recv: the next message from any peer (rmq_pat_recv_any). */
int rmq_pat_op_recv_any(void *st, struct rmq_socket *s, struct rmq_rxent **e,
                        int flags);
/* events: RMQ_EV_IN when readable / RMQ_EV_OUT when writable. */
int rmq_pat_op_events_in(void *st, struct rmq_socket *s);
int rmq_pat_op_events_out(void *st, struct rmq_socket *s);

#endif /* RMQ_PATTERN_H */
