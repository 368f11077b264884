/*
 * A socket's libfabric objects (ep.c): endpoint, CQ, AV and the
 * multi-recv slabs, opened at the first bind/connect and closed with the
 * socket; memory registration that honours every mr_mode bit.
 */
#ifndef RMQ_EP_H
#define RMQ_EP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fi_domain.h>

#include "numa.h"
#include "progress.h"
#include "prov.h"

struct rmq_socket;

/*
 * A registered multi-recv slab.  Messages queued from it and rmq_msg
 * pointing into it hold references, plus one held by its socket until the
 * socket closes: whoever drops the last frees it.  Atomic: rmq_msg_free
 * may run in any thread (and beside a progress thread).
 */
struct rmq_slab {
	struct rmq_op       op;
	struct rmq_slab    *next; /* on the socket's list of all slabs */
	uint8_t            *buf;
	size_t              size;
	struct rmq_numa_mem mem;  /* how buf was allocated: freed without the
	                           * socket, which may be gone */
	struct fid_mr      *mr;
	void               *desc;
	atomic_int          refs;
	bool                posted;
	int                 shard; /* the endpoint it is posted on */
	/* One message per receive: spent, waiting for its message to be
	 * taken before it goes up again (the socket's spent list). */
	struct rmq_slab    *spent_next;
};

struct rmq_path_table;
/* The largest fabric message our slabs take (FI_OPT_MIN_MULTI_RECV). */
size_t rmq_ep_min_multi(const struct rmq_path_table *t);
/* Open the endpoint for prov on node (NULL: the provider's choice). */
int  rmq_ep_open(struct rmq_socket *s, const struct rmq_prov *prov,
                 const char *node);
void rmq_ep_close(struct rmq_socket *s);
/* (Re)build the socket's path table: config, pattern, name, options;
 * a path asked for that the provider cannot carry is -RMQ_ENOTSUP. */
int  rmq_ep_paths(struct rmq_socket *s);
int  rmq_mr_reg(struct rmq_socket *s, void *buf, size_t len, uint64_t access,
                struct fid_mr **mrp, void **descp, uint64_t *keyp);
/* Strict mode: a local buffer posted without a descriptor is a bug. */
int  rmq_strict_desc(struct rmq_socket *s, const void *desc, const char *op);
void rmq_slab_unref(struct rmq_slab *sl);

/*
 * An endpoint for one more peer: the index of a shard with room in its
 * address table (opened if none has), or -RMQ_EPEERFULL with the reason.
 */
int  rmq_ep_shard_take(struct rmq_socket *s, char *reason, size_t rl);
/* Shard k's endpoint, address table and fabric address. */
struct fid_ep *rmq_ep_shard_ep(const struct rmq_socket *s, int k);
struct fid_av *rmq_ep_shard_av(const struct rmq_socket *s, int k);
const uint8_t *rmq_ep_shard_addr(const struct rmq_socket *s, int k,
                                 size_t *len);
/* A peer of shard k leaves (addr: its entry in the table, or unspec). */
void rmq_ep_shard_put(struct rmq_socket *s, int k, fi_addr_t addr);
/* Close the shards' endpoints (posted slabs are cancelled with them). */
void rmq_ep_shards_close(struct rmq_socket *s);

#endif /* RMQ_EP_H */
