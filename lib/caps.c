/*
 * Capability negotiation: ask fi_getinfo for what librmq can use, then
 * merge what the provider RETURNED with its row in providers/.  The rest
 * of the engine branches on struct rmq_caps only.
 */
#include <stdlib.h>
#include <string.h>

#include "rmq_int.h"

struct fi_info *
rmq_caps_hints(const struct rmq_prov *row)
{
	struct fi_info *h = fi_allocinfo();

	if (h == NULL)
		return NULL;
	h->caps = FI_MSG | FI_TAGGED | FI_RMA | FI_READ | FI_REMOTE_READ |
	          FI_MULTI_RECV;
	/* Every context we pass starts with a struct fi_context2. */
	h->mode                  = FI_CONTEXT | FI_CONTEXT2;
	h->ep_attr->type         = FI_EP_RDM;
	h->tx_attr->msg_order    = FI_ORDER_SAS;
	h->rx_attr->msg_order    = FI_ORDER_SAS;
	h->domain_attr->mr_mode  = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
	                          FI_MR_ALLOCATED | FI_MR_PROV_KEY |
	                          FI_MR_ENDPOINT;
	h->domain_attr->control_progress = FI_PROGRESS_UNSPEC;
	h->domain_attr->data_progress    = FI_PROGRESS_UNSPEC;
	if (row->flags & RMQ_PROV_ADDR_SOCKADDR)
		h->addr_format = FI_SOCKADDR_IN;
	h->fabric_attr->prov_name = strdup(row->fi_prov);
	if (h->fabric_attr->prov_name == NULL) {
		fi_freeinfo(h);
		return NULL;
	}
	return h;
}

static size_t
min_nz(size_t a, size_t b)
{
	if (a == 0)
		return b;
	if (b == 0)
		return a;
	return a < b ? a : b;
}

int
rmq_caps_from_info(struct rmq_caps *c, const struct fi_info *info,
                   const struct rmq_prov *row, const struct rmq_config *cfg)
{
	const uint64_t rd = FI_RMA | FI_READ | FI_REMOTE_READ;
	uint64_t       mr;

	memset(c, 0, sizeof(*c));
	c->prov          = row;
	c->caps          = info->caps;
	c->mode          = info->mode;
	mr               = (uint64_t) info->domain_attr->mr_mode;
	c->mr_mode       = mr;
	c->msg_order     = info->tx_attr->msg_order;
	c->inject_size   = info->tx_attr->inject_size;
	c->cq_data_size  = info->domain_attr->cq_data_size;
	c->max_msg_size  = info->ep_attr->max_msg_size;
	c->mr_key_size   = info->domain_attr->mr_key_size;
	c->data_progress = (int) info->domain_attr->data_progress;
	c->rma_read      = (info->caps & rd) == rd;
	c->rma_native    = c->rma_read && !(row->flags & RMQ_PROV_RMA_EMULATED);
	c->multi_recv    = (info->caps & FI_MULTI_RECV) != 0;
	c->tagged        = (info->caps & FI_TAGGED) != 0;
	/* The row's measured choice, if this provider can do it. */
	c->rndv_path = row->rndv_path;
	if (c->rndv_path == RMQ_PATH_RNDV_SEND && !c->tagged)
		c->rndv_path = RMQ_PATH_RNDV_READ;
	if (c->rndv_path == RMQ_PATH_RNDV_READ && !c->rma_read && c->tagged)
		c->rndv_path = RMQ_PATH_RNDV_SEND;
	c->wait_fd       = !(row->flags & RMQ_PROV_NO_WAIT_FD);
	/* FI_MR_BASIC is the old spelling of VIRT_ADDR|PROV_KEY|ALLOCATED. */
	if (info->domain_attr->mr_mode == FI_MR_BASIC)
		mr = FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED;
	c->mr_local     = (mr & FI_MR_LOCAL) || (info->mode & FI_LOCAL_MR);
	c->mr_virt_addr = (mr & FI_MR_VIRT_ADDR) != 0;
	c->mr_prov_key  = (mr & FI_MR_PROV_KEY) != 0;
	c->mr_endpoint  = (mr & FI_MR_ENDPOINT) != 0;
	c->mr_allocated = (mr & FI_MR_ALLOCATED) != 0;
	c->need_context = (info->mode & (FI_CONTEXT | FI_CONTEXT2)) != 0;

	/*
	 * inject: the header and the payload together within inject_size
	 * (and within max_msg_size); the row may cap it lower.  Explicit
	 * comparisons: a payload limit of 0 is a real limit here.
	 */
	c->inject = c->inject_size >= RMQ_HDR_SIZE &&
	            (c->max_msg_size == 0 || c->max_msg_size >= RMQ_HDR_SIZE);
	c->inject_max = c->inject ? c->inject_size - RMQ_HDR_SIZE : 0;
	if (c->max_msg_size != 0 && c->inject &&
	    c->inject_max > c->max_msg_size - RMQ_HDR_SIZE)
		c->inject_max = c->max_msg_size - RMQ_HDR_SIZE;
	if (row->inject_max != 0 && row->inject_max < c->inject_max)
		c->inject_max = row->inject_max;
	if (c->inject_max > RMQ_INJECT_BUF - RMQ_HDR_SIZE)
		c->inject_max = RMQ_INJECT_BUF - RMQ_HDR_SIZE;
	if (cfg != NULL && cfg->inject_max != 0 && cfg->inject_max < c->inject_max)
		c->inject_max = cfg->inject_max;

	/* eager: an eager message (or an RTS) within max_msg_size. */
	c->eager_max = row->eager_max;
	if (cfg != NULL && cfg->eager_max != 0)
		c->eager_max = cfg->eager_max;
	if (c->eager_max < c->inject_max)
		c->eager_max = c->inject_max;
	if (c->max_msg_size != 0) {
		size_t room = c->max_msg_size > RMQ_RTS_SIZE
		                  ? c->max_msg_size - RMQ_RTS_SIZE
		                  : 0;

		if (c->eager_max > room)
			c->eager_max = room;
	}
	if (c->eager_max < c->inject_max)
		c->inject_max = c->eager_max;

	c->rma_chunk = min_nz(row->rma_chunk, c->max_msg_size);
	if (c->rma_chunk == 0)
		c->rma_chunk = SIZE_MAX;
	if (!c->multi_recv)
		return -RMQ_ENOTSUP;
	return 0;
}
