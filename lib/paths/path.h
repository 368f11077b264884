/*
 * The paths: one const row of ops per way a message can travel, indexed
 * by RMQ_PATH_* (path.c), as libfabric's shm provider dispatches
 * smr_send_ops[proto] / smr_progress_ops[proto].
 *
 *   row          file          sends with              receiver side
 *   inject       eager.c       fi_inject(data)         DATA in a slab
 *   eager        eager.c       fi_send from a tx slot  DATA in a slab
 *   ring         ring.c        fi_writedata, tx slot   immediate: ring slot
 *   rndv_read    rndv_read.c   RTS {addr, key}         fi_read, FIN
 *   rndv_send    rndv_send.c   RTS, fi_tsend on CTS    fi_trecv, CTS
 *   rndv_write   rndv_write.c  RTS, fi_write on GRANT  GRANT, immediate
 *   seg          seg.c         SEG pieces, tx slots    reassembly
 *
 * What the rows share: tx.c (tx slots, posting with retry, control
 * messages, credits) and rndv.c (the rendezvous family's RTS, FIN and
 * the sender's waiting).  xfer.c chooses the row for a message, calls its
 * send, dispatches received messages to the row that owns their type, and
 * delivers; nothing outside lib/paths/ knows how a path works.
 */
#ifndef RMQ_PATH_H
#define RMQ_PATH_H

#include "path_ops.h"
#include "rmq.h"

/* The rows, indexed by RMQ_PATH_* (path.c). */
extern const struct rmq_path_ops *const rmq_paths[RMQ_PATH_COUNT];

extern const struct rmq_path_ops rmq_path_inject;
extern const struct rmq_path_ops rmq_path_eager;
extern const struct rmq_path_ops rmq_path_ring;
extern const struct rmq_path_ops rmq_path_rndv_read;
extern const struct rmq_path_ops rmq_path_rndv_send;
extern const struct rmq_path_ops rmq_path_rndv_write;
extern const struct rmq_path_ops rmq_path_seg;
extern const struct rmq_path_ops rmq_path_local;

/* Every row's sock_init, sock_close, sock_fini. */
int  rmq_paths_init(struct rmq_socket *s);
void rmq_paths_close(struct rmq_socket *s);
void rmq_paths_fini(struct rmq_socket *s);

/* A small message to p at once, by its path's shortest way: 0, or 1 when
 * the general path must take it (nothing was sent).  Local peers: the
 * ring (local_tx.c); others: fi_inject (eager.c). */
int rmq_inject_send_now(struct rmq_socket *s, struct rmq_peer *p,
                        const void *buf, size_t len, uint32_t msgid);

#endif /* RMQ_PATH_H */
