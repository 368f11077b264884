/*
 * rmq_msg: a message the library owns.  Heap messages are page-aligned
 * (registered per message when they go rendezvous); slab messages point
 * straight into the receive slab they arrived in and hold a reference on
 * it, so free them promptly.
 */
#include <stdlib.h>

#include "ep.h"
#include "msg.h"

rmq_msg *
rmq_msg_new_heap(size_t size)
{
	rmq_msg *m = calloc(1, sizeof(*m));

	if (m == NULL)
		return NULL;
	m->kind = RMQ_MSGK_HEAP;
	m->size = size;
	if (size > 0 && posix_memalign(&m->base, 4096, size) != 0) {
		free(m);
		return NULL;
	}
	m->data = m->base;
	return m;
}

rmq_msg *
rmq_msg_new_slab(struct rmq_slab *sl, uint8_t *data, size_t size)
{
	rmq_msg *m = calloc(1, sizeof(*m));

	if (m == NULL)
		return NULL;
	m->kind = RMQ_MSGK_SLAB;
	m->slab = sl;
	m->data = data;
	m->size = size;
	return m;
}

void *
rmq_msg_data(rmq_msg *m)
{
	return m != NULL ? m->data : NULL;
}

size_t
rmq_msg_size(const rmq_msg *m)
{
	return m != NULL ? m->size : 0;
}

void
rmq_msg_free(rmq_msg *m)
{
	if (m == NULL)
		return;
	if (m->kind == RMQ_MSGK_SLAB)
		rmq_slab_unref(m->slab);
	else
		free(m->base);
	free(m);
}
