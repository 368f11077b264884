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
/* The next peer with room, round-robin, without waiting: 1 (in *pp), 0
 * (none now; one may get room or come), or why none may come. */
int  rmq_pat_pick_writable(struct rmq_socket *s, struct rmq_peer **pp);
/* Wait for a peer with room (its credits, our RMQ_SNDHWM), round-robin;
 * errors as rmq_pat_next_peer. */
int  rmq_pat_next_writable(struct rmq_socket *s, int flags, int timeout_ms,
                           struct rmq_peer **pp);
/* One round of progress (cheap: the CQ, and about every ms the control
 * channels), for calls that may never wait, such as a PUB's send. */
void rmq_pat_progress(struct rmq_socket *s);
/* Could a message go to p now (live, a credit, our bound on sends)? */
bool rmq_pat_peer_writable(struct rmq_socket *s, const struct rmq_peer *p);
/* p is reached over memory shared with it (RMQ_LINK_F_HOST, link_ops.h):
 * a copy to it costs no more than its own read would. */
bool rmq_pat_peer_host(const struct rmq_peer *p);
/* Can n more sends go without passing RMQ_SNDHWM (or is nothing in
 * flight)?  1 or 0. */
int  rmq_pat_sends_room(const struct rmq_socket *s, int n);
/* Send to p (rmq_xfer_send).  flags may add RMQ_XFER_F_OWN. */
int  rmq_pat_send(struct rmq_socket *s, struct rmq_peer *p,
                  const struct rmq_out *o, uint32_t msgid, int flags);
/*
 * A message to one peer with room, round-robin, never dropped: it waits
 * (RMQ_SNDTIMEO, RMQ_DONTWAIT) for room at any peer, never at one in
 * particular (PUSH, DEALER).  to sends it to the peer chosen (NULL:
 * rmq_pat_send), msgid 0.  0 or -error.
 */
typedef int (*rmq_pat_send_fn)(struct rmq_socket *s, struct rmq_peer *p,
                               const struct rmq_out *o, uint32_t msgid,
                               int flags);
int  rmq_pat_send_one(struct rmq_socket *s, const struct rmq_out *o,
                      int flags, rmq_pat_send_fn to);

/* ---- messages of several frames (frames.c) ---- */

/*
 * A message's first frame that is not sent (a ROUTER's routing id): the
 * frames after it go to p (the next of them takes the message's credit:
 * p should have one).  0 or -RMQ_ENOMEM.
 */
int  rmq_pat_send_later(struct rmq_socket *s, struct rmq_peer *p,
                        uint32_t msgid);
/*
 * A frame after its message's first, to the peers that first went to
 * (what the core does for a pattern without send_more): 0, or the error
 * of the one peer it went to; a msg in o is the engine's on 0.
 */
int  rmq_pat_send_rest(struct rmq_socket *s, const struct rmq_out *o,
                       int flags);
/*
 * A frame the pattern makes for p's message it is handing out (a
 * ROUTER's routing id, a delimiter): the len bytes at data, which must
 * stay while p does (its peer block) -- they are not copied; "more
 * follow".  NULL without memory.
 */
struct rmq_rxent *rmq_pat_rx_made(struct rmq_socket *s, struct rmq_peer *p,
                                  const void *data, size_t len);
/* The receive hands out e after the one the pattern returned (and after
 * those put here before it); at most 3.  Never fails. */
void rmq_pat_rx_then(struct rmq_socket *s, struct rmq_rxent *e);
/* A frame rmq_pat_rx_made made, not handed out after all (NULL: none). */
void rmq_pat_rx_unmake(struct rmq_socket *s, struct rmq_rxent *e);
/* A message the pattern took (its first frame e) goes whole, counted. */
void rmq_pat_drop(struct rmq_socket *s, struct rmq_rxent *e);
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
/* Is the peer with this id connecting or live (not saying goodbye, not
 * dead, not gone)? */
bool             rmq_pat_peer_present(struct rmq_socket *s, uint32_t id);
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
/* Live peers. */
int              rmq_pat_npeers(const struct rmq_socket *s);
/* A message not sent to a peer for lack of room: rmq_stats().dropped. */
void             rmq_pat_count_drop(struct rmq_socket *s);
void             rmq_pat_count_drops(struct rmq_socket *s, uint64_t n);
/* p's state (its peer_size block). */
void            *rmq_pat_peer_state(const struct rmq_peer *p);

/* ---- one-sided memory (pattern_rma.c): a PUB's log ---- */

/* Does this socket's table use a log for fan-out: at how many
 * subscribers (thresholds.fanout_log; 0: never, or the provider cannot
 * do fi_read and fi_write)? */
int  rmq_pat_fanout_log(const struct rmq_socket *s);
/* The log's entries and bytes per entry (fanout.slots, .slot_size). */
void rmq_pat_log_shape(const struct rmq_socket *s, uint32_t *slots,
                       uint32_t *slot_size);

/* Registered memory: what peers may do to it, or what we do from it. */
enum {
	RMQ_PAT_REMOTE_READ = 1, /* peers fi_read it */
	RMQ_PAT_REMOTE_WRITE,    /* peers fi_write it */
	RMQ_PAT_READ_INTO,       /* our fi_read's destination */
	RMQ_PAT_WRITE_FROM,      /* our fi_write's source */
};
struct rmq_pat_mem;
/* len zeroed bytes on the socket's NUMA node, registered for access. */
int   rmq_pat_mem_new(struct rmq_socket *s, size_t len, unsigned access,
                      struct rmq_pat_mem **mp);
/* heap (malloc'd, taken; freed with the block), registered. */
int   rmq_pat_mem_wrap(struct rmq_socket *s, void *heap, size_t len,
                       unsigned access, struct rmq_pat_mem **mp);
/* Deregister a wrapped block and give its heap back. */
void *rmq_pat_mem_unwrap(struct rmq_pat_mem *m);
void  rmq_pat_mem_free(struct rmq_pat_mem *m);
void *rmq_pat_mem_buf(const struct rmq_pat_mem *m);
/* What a peer names it with: the address of byte 0, and the key. */
void  rmq_pat_mem_remote(const struct rmq_pat_mem *m, uint64_t *addr,
                         uint64_t *key);

/* A read or write that may be in flight; done(arg, 0 or -error) runs
 * from the progress that takes its completion. */
struct rmq_pat_rma;
struct rmq_pat_rma *rmq_pat_rma_new(struct rmq_socket *s,
                                    void (*done)(void *arg, int status),
                                    void *arg);
bool rmq_pat_rma_busy(const struct rmq_pat_rma *r);
/* In flight: freed at its completion (done is not called). */
void rmq_pat_rma_free(struct rmq_pat_rma *r);
/* Post a read of len bytes at raddr (key rkey) of p into dst + off, or a
 * write of src + off there: 0, -RMQ_EAGAIN (the provider is busy: try
 * again later), or -error.  Never waits. */
int  rmq_pat_read(struct rmq_pat_rma *r, struct rmq_peer *p,
                  struct rmq_pat_mem *dst, size_t off, size_t len,
                  uint64_t raddr, uint64_t rkey);
int  rmq_pat_write(struct rmq_pat_rma *r, struct rmq_peer *p,
                   struct rmq_pat_mem *src, size_t off, size_t len,
                   uint64_t raddr, uint64_t rkey);
/* The socket closed its endpoint: free what was parked in flight. */
void rmq_pat_rma_close(struct rmq_socket *s);

/* A timer: fn runs from the socket's progress once the clock (rmq_pat_now,
 * ns) passes the time set with rmq_pat_timer_at (INT64_MAX: off); a wait
 * sleeps no longer than that. */
struct rmq_pat_timer;
struct rmq_pat_timer *rmq_pat_timer_new(struct rmq_socket *s,
                                        void (*fn)(void *arg, int64_t now),
                                        void *arg);
void    rmq_pat_timer_at(struct rmq_pat_timer *t, int64_t when_ns);
void    rmq_pat_timer_free(struct rmq_pat_timer *t);
int64_t rmq_pat_now(void);

/* A frame of p's the pattern brought in itself (heap: malloc'd, taken;
 * more: frames of its message follow): queued after p's others; no credit
 * goes back for it.  0, or -error and its message is dropped (counted). */
int    rmq_pat_deliver(struct rmq_socket *s, struct rmq_peer *p, void *heap,
                       size_t len, bool more);
/* The frames of p's message still coming are lost (the pattern missed
 * one): those queued go, counted once; its next frame starts a message. */
void   rmq_pat_cut(struct rmq_socket *s, struct rmq_peer *p);
/* Is a message of several frames being sent (its first went, its last
 * not yet)? */
bool   rmq_pat_sending_frames(const struct rmq_socket *s);
/* p's count of messages sent to it / received from it (the BYE's). */
uint64_t rmq_pat_peer_sent(const struct rmq_peer *p);
uint64_t rmq_pat_peer_recvd(const struct rmq_peer *p);
/* Is p live (not saying goodbye, not dead)? */
bool     rmq_pat_peer_live(const struct rmq_peer *p);
/* Whole messages of p's queued, not yet taken; our RMQ_RCVHWM. */
size_t rmq_pat_peer_queued(const struct rmq_peer *p);
int    rmq_pat_rcvhwm(const struct rmq_socket *s);

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
