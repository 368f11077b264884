/*
 * The rendezvous family (rndv.c): what rndv_read, rndv_send and
 * rndv_write share.  The sender registers or keeps its payload and sends
 * an RTS {length, address, key, cookie, flags}; the receiver queues it as
 * a message and, when the application takes it, fetches the payload by
 * the row the flags name, then says FIN {cookie, status} where the sender
 * still waits.  The sender keeps an entry per RTS until it is done.
 *
 *   sender:    RTS --> [CTS/GRANT: post tsend/writes] --> FIN or completion
 *   receiver:  queue <-- RTS;  fetch (read | trecv+CTS | GRANT+writes); FIN
 */
#ifndef RMQ_RNDV_H
#define RMQ_RNDV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fi_domain.h>

#include "progress.h"
#include "rmq.h"
#include "wire.h"

struct rmq_out;
struct rmq_peer;
struct rmq_rx;
struct rmq_rxent;
struct rmq_socket;
struct rmq_rndv_tx;

/* rndv_write: one fi_write / fi_writedata chunk. */
struct rmq_write_op {
	struct rmq_op       op;
	struct rmq_rndv_tx *r;
};

/* A rendezvous send waiting for FIN (rndv_read), its tsend (rndv_send)
 * or its writes (rndv_write). */
struct rmq_rndv_tx {
	struct rmq_op       op;     /* rndv_send: the fi_tsend's context */
	struct rmq_rndv_tx *next;
	int                 path;   /* RMQ_PATH_RNDV_* */
	const void         *src;
	size_t              len;
	void               *desc;
	bool                cts;    /* CTS/GRANT came: post the tsend/writes */
	bool                posted; /* tsend or writes posted */
	bool                tsend_out; /* posted, completion not yet in */
	struct rmq_peer    *peer;
	uint32_t            cookie;
	struct fid_mr      *mr;
	void               *owned;  /* copy we free at the end, or NULL */
	rmq_msg            *msg;    /* message we free at the end, or NULL */
	bool                done;
	bool                waited; /* a blocked rmq_send frees it */
	int                 status; /* 0 or -errno */
	/* After CTS/GRANT: post (the row's); cancel what it posted. */
	void (*post)(struct rmq_socket *s, struct rmq_rndv_tx *r);
	void (*cancel)(struct rmq_socket *s, struct rmq_rndv_tx *r);
	/* rndv_write: the receiver's grant and our chunks */
	uint64_t            raddr, rkey;
	uint32_t            grant_id;
	struct rmq_write_op *wops;
	size_t              nw, wnext;  /* chunks, next to post */
	size_t              wpending;   /* posted, not completed */
	int                 wstatus;
};

/* rndv_write, receiver side: a buffer granted, waiting for the writes. */
struct rmq_grant {
	struct rmq_grant *next;
	struct rmq_peer  *peer;
	uint32_t          id;
	bool              done;
	int               status;
};

/* A fetch in progress (a rendezvous read or tagged receive). */
struct rmq_read {
	struct rmq_op  orphan;   /* a context-less error is charged here */
	size_t         nchunks;
	size_t         pending;
	int            status;
	bool           orphaned; /* failed by a context-less error */
	struct fid_mr *mr;       /* local registration (FI_MR_LOCAL) */
};

struct rmq_read_op {
	struct rmq_op    op;
	struct rmq_read *rd;
};

/* The socket's. */
struct rmq_rndv {
	struct rmq_rndv_tx *list;        /* sends waiting FIN or completion */
	uint32_t            next_cookie;
	int                 cts_pending; /* entries whose post is due */
	struct rmq_grant   *grants;      /* rndv_write: buffers granted */
	uint32_t            next_grant;
	int                 hook;        /* its after-pass hook (posting) */
};

/* A CTS or GRANT came: r's post is due after this CQ pass. */
void rmq_rndv_due(struct rmq_socket *s, struct rmq_rndv_tx *r);

/* Sending side. */
struct rmq_rndv_how {
	int       path;      /* RMQ_PATH_RNDV_* */
	uint32_t  rts_flags; /* RMQ_RTS_F_* */
	uint32_t  wait_flags; /* of rts_flags, those kept only where the send
	                       * waits for its FIN (a promise to answer the
	                       * reader meanwhile) */
	uint64_t  access;    /* registration of the payload, 0: none */
	bool      remote;    /* the peer reads it: announce address and key */
	bool      own_va;    /* the RTS names our virtual address, whatever
	                      * the provider's keys take (rmq_rts_own_va) */
	void (*post)(struct rmq_socket *s, struct rmq_rndv_tx *r);
	void (*cancel)(struct rmq_socket *s, struct rmq_rndv_tx *r);
};
/* Whether a send of o with flags waits in rmq_rndv_send until the peer
 * has its payload (a copy from the caller's buffer, not RMQ_DONTWAIT nor
 * a pattern's own): only such a send reads in place and can help. */
bool rmq_rndv_waits(const struct rmq_out *o, int flags);
int  rmq_rndv_send(struct rmq_socket *s, struct rmq_peer *p,
                   struct rmq_waiter *w, const struct rmq_out *o,
                   uint32_t msgid, int flags, const struct rmq_rndv_how *how);
void rmq_rndv_complete(struct rmq_socket *s, struct rmq_rndv_tx *r,
                       int status);
/* The provider finished (or failed) what r posted. */
void rmq_rndv_posted_done(struct rmq_socket *s, struct rmq_rndv_tx *r,
                          int err);
/* The entry waiting for a CTS/GRANT to cookie from p by path, or NULL. */
struct rmq_rndv_tx *rmq_rndv_find(struct rmq_socket *s,
                                  const struct rmq_peer *p, uint32_t cookie,
                                  int path);

/* Receiving side. */
/* RTS and FIN (the family's messages). */
void rmq_rndv_on_rx(struct rmq_socket *s, struct rmq_peer *p,
                    const struct rmq_rx *rx);
/* How a row moves the payload of an RTS into dst; *told: the sender was
 * answered (else it waits for a FIN). */
typedef int (*rmq_rndv_move_fn)(struct rmq_socket *s, struct rmq_peer *p,
                                const struct rmq_rts *rts, void *dst,
                                bool *told);
/*
 * Fetch n bytes of e into dst with move, and tell the sender how it went
 * where it waits.  whole: move takes the whole message (a shorter buffer
 * gets a bounce buffer).
 */
int  rmq_rndv_fetch(struct rmq_socket *s, struct rmq_rxent *e, void *dst,
                    size_t n, rmq_rndv_move_fn move, bool whole);
/*
 * A frame of len bytes in heap (ours now) that a pattern read itself
 * from p's memory with fi_read (a PUB's log), queued as rndv_read's,
 * outside p's credits (more: frames of its message follow): 0, or -error
 * (its message dropped, heap freed).
 */
int rmq_rndv_read_deliver(struct rmq_socket *s, struct rmq_peer *p,
                          void *heap, size_t len, bool more);

/* rndv_read's move: fi_read with the RTS's key (link/local.c falls back
 * on it where it cannot read the sender's memory itself). */
int  rmq_rndv_read_move(struct rmq_socket *s, struct rmq_peer *p,
                        const struct rmq_rts *rts, void *dst, bool *told);
/* Wait until every op of rd completed (they target the caller's buffer);
 * a dead peer's are cancelled after a grace period. */
void rmq_rndv_wait_ops(struct rmq_socket *s, struct rmq_peer *p,
                       struct rmq_read *rd, struct rmq_read_op *ops,
                       size_t nops);
void rmq_read_op_init(struct rmq_read_op *op, struct rmq_read *rd);
void rmq_read_init(struct rmq_read *rd);

/* Row hooks shared by the family (idempotent). */
void rmq_rndv_cancel_rx(struct rmq_socket *s, struct rmq_rxent *e, int err);
void rmq_rndv_peer_gone(struct rmq_socket *s, struct rmq_peer *p);
/* A rendezvous send to p not finished yet (its FIN or completion may
 * trail p's goodbye)? */
bool rmq_rndv_peer_busy(struct rmq_socket *s, const struct rmq_peer *p);
int  rmq_rndv_sock_init(struct rmq_socket *s);
void rmq_rndv_sock_close(struct rmq_socket *s);
void rmq_rndv_sock_fini(struct rmq_socket *s);

#endif /* RMQ_RNDV_H */
