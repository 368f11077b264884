/*
 * The path selector: for a message size, which path carries it.
 *
 *   0 .. inject_max      inject     (header + payload <= inject_size)
 *   .. eager_max         eager      (copy into a tx slot, multi-recv slab)
 *   above                rndv_read  (the receiver pulls with fi_read) or
 *                        rndv_send  (the receiver posts a tagged receive
 *                                    into the destination, says CTS, the
 *                                    sender sends two-sided)
 *
 * Which rendezvous is a provider-row choice, measured with rmq_pingpong
 * --rndv (numbers in providers/shm.c and tcp.c): fi_read won or tied on
 * shm and tcp; rndv_send is the rendezvous where a provider has no RMA
 * read, and sockets' row uses it (all paths cost ~1 ms there).
 *
 * The table comes from the provider row and fi_info (caps.c), the YAML
 * file, and the RMQ_INJECT_MAX / RMQ_EAGER_MAX socket options.
 */
#include "rmq_int.h"

void
rmq_path_table_init(struct rmq_path_table *t, const struct rmq_caps *c)
{
	t->inject     = c->inject;
	t->inject_max = c->inject_max;
	t->eager_max  = c->eager_max;
	t->rndv_path  = c->rndv_path;
	t->rndv       = c->rndv_path == RMQ_PATH_RNDV_SEND ? c->tagged
	                                                   : c->rma_read;
}

int
rmq_path_select(const struct rmq_path_table *t, size_t len)
{
	if (t->inject && len <= t->inject_max)
		return RMQ_PATH_INJECT;
	if (len <= t->eager_max)
		return RMQ_PATH_EAGER;
	if (t->rndv)
		return t->rndv_path;
	return -RMQ_EMSGSIZE;
}
