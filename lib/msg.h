/*
 * rmq_msg (msg.c): a message the library owns.  Heap messages are
 * page-aligned; slab messages point straight into the receive slab they
 * arrived in and hold a reference on it.
 */
#ifndef RMQ_MSG_H
#define RMQ_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "rmq.h"

struct rmq_slab;

enum rmq_msg_kind {
	RMQ_MSGK_HEAP = 1, /* page-aligned heap, ours */
	RMQ_MSGK_SLAB,     /* points into a receive slab */
};

struct rmq_msg {
	int              kind;
	uint8_t         *data;
	size_t           size;
	void            *base; /* heap allocation */
	struct rmq_slab *slab; /* RMQ_MSGK_SLAB */
};

rmq_msg *rmq_msg_new_heap(size_t size);
rmq_msg *rmq_msg_new_slab(struct rmq_slab *sl, uint8_t *data, size_t size);

#endif /* RMQ_MSG_H */
