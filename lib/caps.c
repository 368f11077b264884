/*
 * Capability negotiation: ask fi_getinfo for what librmq can use, then
 * merge what the provider RETURNED with its row in providers/.  The rest
 * of the engine branches on struct rmq_caps only.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "caps.h"
#include "path_ops.h"
#include "rmq.h"
#include "util.h"
#include "wire.h"

/* What the ring needs: writes ordered with each other and with sends. */
#define RMQ_RING_ORDER (FI_ORDER_WAW | FI_ORDER_WAS | FI_ORDER_SAW)

struct fi_info *
rmq_caps_hints_level(const struct rmq_prov *row, int level)
{
	struct fi_info *h = fi_allocinfo();

	if (h == NULL)
		return NULL;
	/*
	 * level 0: everything, writes ordered with sends (the ring mixed
	 * with other paths); level 1: everything, sends ordered only;
	 * level 2: no RMA at all (rndv_send and seg carry large messages).
	 * Level 0 is asked for only when a socket mixes the ring with other
	 * paths: measured on shm 1.17, asking for write ordering turns off
	 * its CMA fast path for RMA (and a read of a bad address then never
	 * completes).
	 */
	h->caps = FI_MSG | FI_TAGGED;
	if (!(row->flags & RMQ_PROV_ONE_RECV))
		h->caps |= FI_MULTI_RECV;
	if (level < 2)
		h->caps |= FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ |
		           FI_REMOTE_WRITE;
	/* Every context we pass starts with a struct fi_context2. */
	h->mode                  = FI_CONTEXT | FI_CONTEXT2 | FI_RX_CQ_DATA;
	h->ep_attr->type         = FI_EP_RDM;
	h->tx_attr->msg_order    = FI_ORDER_SAS;
	if (level == 0)
		h->tx_attr->msg_order |= RMQ_RING_ORDER;
	h->rx_attr->msg_order    = h->tx_attr->msg_order;
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

struct fi_info *
rmq_caps_hints(const struct rmq_prov *row)
{
	return rmq_caps_hints_level(row, 0);
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

/*
 * The provider's own rendezvous row cannot be used here: the LARGE row it
 * can use that ranks first (path_ops.h), else the last in rank.
 */
static int
large_fallback(const struct rmq_caps *c)
{
	int i, best = -1, last = -1;

	for (i = 0; c->rows != NULL && i < RMQ_PATHS; i++) {
		if (rmq_path_kind(i) != RMQ_ROW_LARGE)
			continue;
		if (last < 0 || c->rows[i]->rank > c->rows[last]->rank)
			last = i;
		if (rmq_path_can(c, i, NULL) &&
		    (best < 0 || c->rows[i]->rank < c->rows[best]->rank))
			best = i;
	}
	return best >= 0 ? best : last;
}

int
rmq_caps_from_info(struct rmq_caps *c, const struct fi_info *info,
                   const struct rmq_prov *row, const struct rmq_config *cfg,
                   const struct rmq_path_ops *const *rows)
{
	const uint64_t rd = FI_RMA | FI_READ | FI_REMOTE_READ;
	const uint64_t wr = FI_RMA | FI_WRITE | FI_REMOTE_WRITE;
	const bool     one_recv = rmq_caps_one_recv(row, info);
	uint64_t       mr;

	memset(c, 0, sizeof(*c));
	c->rows          = rows;
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
	c->rma_write     = (info->caps & wr) == wr;
	c->rma_native    = (c->rma_read || c->rma_write) &&
	                   !(row->flags & RMQ_PROV_RMA_EMULATED);
	c->ordered       = (c->msg_order & RMQ_RING_ORDER) == RMQ_RING_ORDER;
	c->rx_cq_data    = (info->mode & FI_RX_CQ_DATA) != 0;
	/* Not asked for, not used, whatever the provider says it has. */
	c->multi_recv    = (info->caps & FI_MULTI_RECV) != 0 && !one_recv;
	c->tagged        = (info->caps & FI_TAGGED) != 0;
	c->wait_fd       = !(row->flags & RMQ_PROV_NO_WAIT_FD) &&
	                   (cfg == NULL || cfg->wait_fd);
#if RMQ_FI_LEGACY_MR
	/* FI_MR_BASIC is the old spelling of VIRT_ADDR|PROV_KEY|ALLOCATED. */
	if (info->domain_attr->mr_mode == FI_MR_BASIC)
		mr = FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED;
	c->mr_local     = (mr & FI_MR_LOCAL) || (info->mode & FI_LOCAL_MR);
#else
	c->mr_local     = (mr & FI_MR_LOCAL) != 0;
#endif
	c->mr_virt_addr = (mr & FI_MR_VIRT_ADDR) != 0;
	c->mr_prov_key  = (mr & FI_MR_PROV_KEY) != 0;
	c->mr_endpoint  = (mr & FI_MR_ENDPOINT) != 0;
	c->mr_allocated = (mr & FI_MR_ALLOCATED) != 0;
	c->need_context = (info->mode & (FI_CONTEXT | FI_CONTEXT2)) != 0;
	c->in_place     = (row->flags & RMQ_PROV_TX_LOCAL_DONE) &&
	                  !c->mr_local && info->tx_attr != NULL &&
	                  info->tx_attr->iov_limit >= 2 &&
	                  (!c->rma_write || info->tx_attr->rma_iov_limit >= 1);

	/*
	 * Strict mode: the rules of verbs and efa on whatever provider this
	 * is (rmq_paths(7)).  A descriptor for every local buffer, keys only
	 * as fi_mr_key() returns them (always so: where the provider lets us
	 * pick, we pick from the CSPRNG, and still ship what fi_mr_key()
	 * says), 4 bytes of immediate, a receive
	 * accounted for every writedata, FI_CONTEXT2 contexts, no wait fd,
	 * and large RMA cut in chunks as a NIC's max size would.
	 */
	if (cfg != NULL && cfg->strict) {
		c->strict       = true;
		c->mr_local     = true;
		c->in_place     = false;
		c->rx_cq_data   = true;
		c->need_context = true;
		c->wait_fd      = false;
		if (c->cq_data_size > 4)
			c->cq_data_size = 4;
	}

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

	/*
	 * With 8 bytes of remote CQ data the header can travel there
	 * (fi_injectdata: peer id and message id), so inject carries a whole
	 * inject_size of payload: a 4 KiB message fits shm's 4096-byte
	 * inject.  Not in strict mode (4 bytes), not where the row or the
	 * file lowered the limit.
	 */
	c->inject_data = c->inject && c->cq_data_size >= 8 && !c->strict &&
	                 row->inject_max == 0 &&
	                 (cfg == NULL || cfg->inject_max == 0);
	c->inject_data_max = c->inject_max;
	if (c->inject_data) {
		c->inject_data_max = c->inject_size;
		if (c->max_msg_size != 0 && c->inject_data_max > c->max_msg_size)
			c->inject_data_max = c->max_msg_size;
		if (c->inject_data_max <= c->inject_max)
			c->inject_data = false;
	}

	/*
	 * eager: an eager message (or an RTS) within max_msg_size.
	 *
	 * Where ofi_rxm keeps its own protocol under a ONE_RECV row (tcp,
	 * receives are multi-recv slabs again), rxm carries a send above its
	 * buffer size (8256 B, providers/tcp.c) by a rendezvous of its own,
	 * which completes after the smaller sends behind it: taken from the
	 * CQ in that order, messages came out of order (check_pipeline_rxm,
	 * with an eager range of 64 KiB: docs/INTERNALS.md §3).  There eager
	 * stays
	 * within RMQ_SLAB_MSG_MIN whatever is asked, and the row's eager
	 * range gives way to the ring, as measured with that protocol.
	 */
	c->eager_max = row->eager_max;
	c->eager_cap = SIZE_MAX;
	if ((row->flags & RMQ_PROV_ONE_RECV) && !one_recv) {
		c->eager_cap = RMQ_SLAB_MSG_MIN;
		c->eager_max = 0;
	}
	if (cfg != NULL && cfg->eager_max != 0)
		c->eager_max = cfg->eager_max;
	if (c->eager_max > c->eager_cap)
		c->eager_max = c->eager_cap;
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
	if (c->strict)
		c->rma_chunk = min_nz(c->rma_chunk, RMQ_STRICT_RMA_CHUNK);
	if (c->rma_chunk == 0)
		c->rma_chunk = SIZE_MAX;
	c->ring_max = row->ring_max;
	if (cfg != NULL && cfg->ring_max != 0)
		c->ring_max = cfg->ring_max;

	/* The row's measured rendezvous, if this provider can do it. */
	c->rndv_path = rmq_path_id(row->rndv);
	if (cfg != NULL && cfg->rndv >= 0)
		c->rndv_path = cfg->rndv;
	if (!rmq_path_can(c, c->rndv_path, NULL))
		c->rndv_path = large_fallback(c);
	if (!c->multi_recv && !one_recv)
		return -RMQ_ENOTSUP;
	return 0;
}

bool
rmq_caps_one_recv(const struct rmq_prov *row, const struct fi_info *info)
{
	return (row->flags & RMQ_PROV_ONE_RECV) &&
	       !(info->ep_attr != NULL &&
	         info->ep_attr->protocol == FI_PROTO_RXM);
}

bool
rmq_caps_writedata(const struct rmq_caps *c, const char **why)
{
	return rmq_caps_need(c->rma_write, "it has no FI_RMA write", why) &&
	       rmq_caps_need(c->cq_data_size >= 4,
	                     "it carries fewer than 4 bytes of remote CQ data",
	                     why);
}

bool
rmq_path_can(const struct rmq_caps *c, int path, const char **why)
{
	const struct rmq_path_ops *row;

	if (path < 0 || path >= RMQ_PATHS || c->rows == NULL) {
		if (why != NULL)
			*why = "there is no such path";
		return false;
	}
	row = c->rows[path];
	if (why != NULL)
		*why = NULL;
	return row->usable == NULL || row->usable(c, why);
}

/* Does fi_getinfo offer this provider at any level we accept? */
bool
rmq_prov_available(const struct rmq_prov *p)
{
	struct fi_info *hints, *info;
	int             level, rc;

	for (level = 1; level < RMQ_HINT_LEVELS; level++) {
		hints = rmq_caps_hints_level(p, level);
		if (hints == NULL)
			return false;
		info = NULL;
		rc   = fi_getinfo(rmq_fi_api(), NULL, NULL, 0, hints, &info);
		fi_freeinfo(hints);
		if (info != NULL)
			fi_freeinfo(info);
		if (rc == 0)
			return true;
	}
	return false;
}

const struct rmq_prov *
rmq_prov_auto(const struct rmq_config *cfg, char *why, size_t whylen)
{
	const struct rmq_prov *p;
	char                   list[RMQ_CFG_STR_MAX], *tok, *save;
	char                   have[160];

	snprintf(list, sizeof(list), "%s", cfg->provider_order);
	for (tok = strtok_r(list, ",", &save); tok != NULL;
	     tok = strtok_r(NULL, ",", &save)) {
		p = rmq_prov_by_name(tok);
		if (p != NULL && rmq_prov_available(p))
			return p;
	}
	if (why != NULL && whylen > 0) {
		rmq_prov_available_list(have, sizeof(have));
		snprintf(why, whylen,
		         "provider auto: none of provider_order [%s] is "
		         "available on this machine (available here: %s)",
		         cfg->provider_order, have);
	}
	return NULL;
}

void
rmq_prov_available_list(char *buf, size_t len)
{
	const struct rmq_prov *const *pp;
	size_t                        n = 0;

	if (len == 0)
		return;
	buf[0] = '\0';
	for (pp = rmq_prov_all(); *pp != NULL; pp++)
		if (rmq_prov_available(*pp))
			rmq_list_add(buf, len, &n, (*pp)->name);
	if (n == 0)
		snprintf(buf, len, "none");
}

/* A knob's value from the config; NULL when the knob is unset or absent. */
static const char *
knob(const struct rmq_config *cfg, const char *key)
{
	const char *v = key != NULL ? rmq_config_str(cfg, key) : NULL;

	return v != NULL && v[0] != '\0' ? v : NULL;
}

void
rmq_prov_knobs(const struct rmq_config *cfg, const struct rmq_prov *p,
               struct rmq_knobs *k)
{
	memset(k, 0, sizeof(*k));
	if (cfg == NULL || p == NULL)
		return;
	k->iface           = knob(cfg, p->iface_key);
	k->domain          = knob(cfg, p->domain_key);
	k->iface_key       = p->iface_key;
	k->domain_key      = p->domain_key;
	k->iface_is_domain = (p->flags & RMQ_PROV_IFACE_DOMAIN) != 0;
}
