/*
 * The paths: one const row of ops per way a message can travel, indexed
 * by id, as libfabric's shm provider dispatches smr_send_ops[proto] /
 * smr_progress_ops[proto].  The registry (lib/meson.build's
 * rmq_path_rows, generated into rmq_path_rows.h) lists them with their
 * names and kinds; path.c collects the rows from it.
 *
 *   row          file          sends with              receiver side
 *   inject       inject.c      fi_inject(data)         DATA in a slab
 *   eager        eager.c       fi_send from a tx slot  DATA in a slab
 *   ring         ring.c        fi_writedata, tx slot   immediate: ring slot
 *   rndv_read    rndv_read.c   RTS {addr, key}         fi_read, FIN
 *   rndv_send    rndv_send.c   RTS, fi_tsend on CTS    fi_trecv, CTS
 *   rndv_write   rndv_write.c  RTS, fi_write on GRANT  GRANT, immediate
 *   seg          seg.c         SEG pieces, tx slots    reassembly
 *   local        link/local.c  the local link's own row (link_ops.h)
 *
 * What the rows share: tx.c (tx slots, posting with retry, control
 * messages, credits), rndv.c (the rendezvous family's RTS, FIN and the
 * sender's waiting) and batch.c (coalescing, riding the rows that carry
 * batches).  The peer's link chooses the row for a message (link/),
 * xfer.c calls its send, dispatches received messages to the row that
 * owns their type, and delivers; nothing outside the rows knows how a
 * path works, and nothing outside them and the registry names one.
 */
#ifndef RMQ_PATH_H
#define RMQ_PATH_H

#include "path_ops.h"
#include "paths/batch.h"
#include "paths/rndv.h"
#include "paths/tx.h"
#include "rmq.h"

/* The paths' part of a socket (s->ps): what the rows share, and each
 * row's own. */
struct rmq_path_sock {
	struct rmq_txpool tx;   /* tx.c */
	struct rmq_rndv   rndv; /* rndv.c */
	struct rmq_bsock  bat;  /* batch.c */
	int               rings; /* peers holding a ring of ours (ring.c,
	                          * ring.peers) */
	void             *row[RMQ_PATHS]; /* a row's own (link/local.c) */
};

/* The rows, indexed by id (path.c). */
extern const struct rmq_path_ops *const rmq_paths[RMQ_PATHS];

/* Every row's sock_init, sock_close, sock_fini. */
int  rmq_paths_init(struct rmq_socket *s);
void rmq_paths_close(struct rmq_socket *s);
void rmq_paths_fini(struct rmq_socket *s);

#endif /* RMQ_PATH_H */
