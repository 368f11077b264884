/*
 * A socket's libfabric objects: endpoint, CQ, AV, multi-recv slabs and the
 * eager tx slots, opened at the first bind/connect and closed with the
 * socket.  Registration honours every mr_mode bit the provider returned.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rmq_int.h"

#define RMQ_NTX 32

int
rmq_mr_reg(struct rmq_socket *s, void *buf, size_t len, uint64_t access,
           struct fid_mr **mrp, void **descp, uint64_t *keyp)
{
	const struct rmq_caps *c = &s->dom->caps;
	struct fid_mr         *mr = NULL;
	uint64_t               key = 0;
	int                    rc = -FI_ENOKEY, tries;

	/* Keys we choose come from the CSPRNG; retry on a collision. */
	for (tries = 0; tries < 4 && rc == -FI_ENOKEY; tries++) {
		key = c->mr_prov_key ? 0 : rmq_random64();
		if (c->mr_key_size > 0 && c->mr_key_size < 8)
			key &= (1ull << (8 * c->mr_key_size)) - 1;
		rc = fi_mr_reg(s->dom->domain, buf, len, access, 0, key, 0,
		               &mr, NULL);
	}
	if (rc != 0)
		goto out;
	if (c->mr_endpoint) {
		rc = fi_mr_bind(mr, &s->ep->fid, 0);
		if (rc == 0)
			rc = fi_mr_enable(mr);
		if (rc != 0) {
			fi_close(&mr->fid);
			goto out;
		}
	}
	*mrp = mr;
	if (descp != NULL)
		*descp = fi_mr_desc(mr);
	if (keyp != NULL)
		*keyp = fi_mr_key(mr);
out:
	if (rc != 0)
		rmq_log(RMQ_LOG_ERROR, "fi_mr_reg(%zu bytes): %s", len,
		        fi_strerror(-rc));
	return rc;
}

static void
slab_free(struct rmq_slab *sl)
{
	if (sl->mr != NULL)
		fi_close(&sl->mr->fid);
	rmq_numa_free(sl->buf, &sl->mem);
	free(sl);
}

void
rmq_slab_unref(struct rmq_slab *sl)
{
	/* The last reference: its socket closed while a message held it. */
	if (atomic_fetch_sub(&sl->refs, 1) == 1)
		slab_free(sl);
}

/* Only the socket's own reference left: no message lies in it. */
static bool
slab_idle(struct rmq_slab *sl)
{
	return atomic_load(&sl->refs) == 1;
}

static int
slab_post(struct rmq_socket *s, struct rmq_slab *sl)
{
	struct iovec iov = {.iov_base = sl->buf, .iov_len = sl->size};
	struct fi_msg m  = {
	     .msg_iov   = &iov,
	     .desc      = &sl->desc,
	     .iov_count = 1,
	     .addr      = FI_ADDR_UNSPEC,
	     .context   = &sl->op.fctx,
        };
	ssize_t rc;

	rc = fi_recvmsg(s->ep, &m, FI_MULTI_RECV);
	if (rc == 0) {
		sl->posted = true;
		s->nposted++;
	}
	return (int) rc;
}

static int
slab_new(struct rmq_socket *s, struct rmq_slab **slp)
{
	size_t           size = (size_t) s->ctx->cfg.slab_size;
	struct rmq_slab *sl;
	int              rc;

	/* At least four of the largest eager messages per slab. */
	if (size < 4 * s->min_multi)
		size = 4 * s->min_multi;
	sl = calloc(1, sizeof(*sl));
	if (sl == NULL)
		return -RMQ_ENOMEM;
	sl->op.kind = RMQ_OP_SLAB;
	sl->sock    = s;
	atomic_init(&sl->refs, 1); /* the socket's */
	sl->size    = size;
	/* On the domain's node; the slab keeps what its free needs. */
	sl->buf = rmq_numa_alloc(&s->ctx->numa, &s->dom->place, size,
	                         &sl->mem);
	if (sl->buf == NULL) {
		free(sl);
		return -RMQ_ENOMEM;
	}
	if (s->dom->caps.mr_local) {
		rc = rmq_mr_reg(s, sl->buf, size, FI_RECV, &sl->mr, &sl->desc,
		                NULL);
		if (rc != 0) {
			slab_free(sl);
			return rc;
		}
	}
	sl->next = s->slabs;
	s->slabs = sl;
	*slp     = sl;
	return 0;
}

int
rmq_slabs_replenish(struct rmq_socket *s)
{
	struct rmq_slab *sl, **pp;
	int              rc = 0, spare = 0;

	for (sl = s->slabs; sl != NULL && s->nposted < s->ctx->cfg.slabs;
	     sl = sl->next)
		if (!sl->posted && slab_idle(sl)) {
			rc = slab_post(s, sl);
			if (rc != 0)
				return rc;
		}
	while (s->nposted < s->ctx->cfg.slabs) {
		rc = slab_new(s, &sl);
		if (rc == 0)
			rc = slab_post(s, sl);
		if (rc != 0)
			return rc;
	}
	/* Free idle slabs left over from a burst. */
	for (pp = &s->slabs; (sl = *pp) != NULL;) {
		if (!sl->posted && slab_idle(sl) &&
		    ++spare > s->ctx->cfg.slabs) {
			*pp = sl->next;
			slab_free(sl);
			continue;
		}
		pp = &sl->next;
	}
	return rc;
}

static int
tx_init(struct rmq_socket *s)
{
	int i, rc;

	s->tx_slot = s->min_multi;
	/* Ring messages are written from tx slots too. */
	if (s->paths.ring_ok && s->tx_slot < RMQ_HDR_SIZE + s->paths.ring_cap)
		s->tx_slot = RMQ_HDR_SIZE + s->paths.ring_cap;
	if (s->tx_slot < RMQ_RTS_SIZE)
		s->tx_slot = RMQ_RTS_SIZE;
	s->tx_slot = (s->tx_slot + 63) & ~(size_t) 63;
	s->ntx     = RMQ_NTX;
	s->tx_mem  = rmq_numa_alloc(&s->ctx->numa, &s->dom->place,
	                            s->tx_slot * s->ntx, &s->tx_numa);
	if (s->tx_mem == NULL)
		return -RMQ_ENOMEM;
	s->txs = calloc((size_t) s->ntx, sizeof(*s->txs));
	if (s->txs == NULL)
		return -RMQ_ENOMEM;
	if (s->dom->caps.mr_local) {
		rc = rmq_mr_reg(s, s->tx_mem, s->tx_slot * s->ntx, FI_SEND,
		                &s->tx_mr, &s->tx_desc, NULL);
		if (rc != 0)
			return rc;
	}
	for (i = 0; i < s->ntx; i++) {
		s->txs[i].op.kind   = RMQ_OP_TX;
		s->txs[i].buf       = s->tx_mem + (size_t) i * s->tx_slot;
		s->txs[i].next_free = s->tx_free;
		s->tx_free          = &s->txs[i];
	}
	return 0;
}

static int
cq_open(struct rmq_socket *s)
{
	struct fi_cq_attr attr = {
		.format   = FI_CQ_FORMAT_DATA,
		.size     = 0,
		.wait_obj = FI_WAIT_NONE,
	};
	int rc;

	s->cq_fd = -1;
	if (s->dom->caps.wait_fd) {
		attr.wait_obj = FI_WAIT_FD;
		rc = fi_cq_open(s->dom->domain, &attr, &s->cq, NULL);
		if (rc == 0 &&
		    fi_control(&s->cq->fid, FI_GETWAIT, &s->cq_fd) == 0)
			return 0;
		if (rc == 0)
			fi_close(&s->cq->fid);
		s->cq    = NULL;
		s->cq_fd = -1;
		rmq_log(RMQ_LOG_INFO, "%s: no CQ wait fd, will spin",
		        s->prov->name);
		attr.wait_obj = FI_WAIT_NONE;
	}
	return fi_cq_open(s->dom->domain, &attr, &s->cq, NULL);
}

/*
 * shm names its region after the process id unless told otherwise, and a
 * process killed with SIGKILL leaves its /dev/shm file behind: a later
 * process with the same pid then fails with EBUSY.  Name our endpoints
 * with a random part, so no leftover can ever be in the way.
 */
static int
unique_name(struct rmq_socket *s)
{
	char name[64];

	snprintf(name, sizeof(name), "rmq_%d_%016llx", (int) getpid(),
	         (unsigned long long) rmq_random64());
	free(s->info->src_addr);
	s->info->src_addr = strdup(name);
	if (s->info->src_addr == NULL) {
		s->info->src_addrlen = 0;
		return -RMQ_ENOMEM;
	}
	s->info->src_addrlen = strlen(name) + 1;
	return 0;
}

/* May this socket use path p?  Logs why not. */
static int
path_check(struct rmq_socket *s, int p, const char *what)
{
	const char *why = NULL;

	if (!rmq_path_can(&s->dom->caps, p, &why) ||
	    (p == RMQ_PATH_RING && !s->paths.ring_ok &&
	     (why = "ring.slots is below 4 (no ring)") != NULL)) {
		rmq_log(RMQ_LOG_ERROR, "%s: %s cannot carry %s: %s",
		        what, s->prov->name, rmq_path_name(p), why);
		return -RMQ_ENOTSUP;
	}
	return 0;
}

int
rmq_sock_paths(struct rmq_socket *s)
{
	struct rmq_path_table *t = &s->paths;
	int                    rc;

	rmq_path_table_init(t, &s->dom->caps, &s->ctx->cfg, s->ops->cfg_pat);
	rmq_path_table_named(t, &s->dom->caps, &s->ctx->cfg, s->name);
	if (s->inject_max_opt != 0 && s->inject_max_opt < t->inject_max) {
		t->inject_max = s->inject_max_opt;
		t->src[RMQ_TH_INJECT] = RMQ_SRC_OPT;
	}
	if (s->eager_max_opt != 0) {
		t->eager_max = s->eager_max_opt;
		t->src[RMQ_TH_EAGER] = RMQ_SRC_OPT;
	}
	if (s->ring_max_set) {
		t->ring_max = s->ring_max_opt;
		t->src[RMQ_TH_RING] = RMQ_SRC_OPT;
	}
	if (s->rndv_path_opt != 0) {
		t->rndv_path = s->rndv_path_opt;
		t->src[RMQ_TH_RNDV] = RMQ_SRC_OPT;
	}
	if (s->force_opt != -2) {
		t->force = s->force_opt;
		t->src[RMQ_TH_FORCE] = RMQ_SRC_OPT;
	}
	rmq_path_table_fix(t, &s->dom->caps);
	/* Asked for and impossible here: say so now, not at the first send. */
	rc = path_check(s, t->rndv_path, "rendezvous path");
	if (rc == 0 && t->force >= 0)
		rc = path_check(s, t->force, "forced path");
	return rc;
}

/*
 * Will this socket mix the ring with other paths?  Then it needs a domain
 * that orders writes with sends, asked for only then (caps.c says why).
 */
bool
rmq_wants_ring(const struct rmq_config *cfg, const struct rmq_prov *prov,
               const char *name, int pat, size_t eager_opt, bool ring_set,
               size_t ring_opt)
{
	const struct rmq_cfg_named *nd = rmq_config_named(cfg, name);
	size_t                      eager, ring;

	if (cfg->ring_slots < 4)
		return false;
	/* The limits as the table will have them (select.c), roughly:
	 * socket option, name section, pattern section, file or
	 * environment, row. */
	eager = eager_opt;
	if (eager == 0 && nd != NULL)
		eager = nd->p.eager_max;
	if (eager == 0 && pat >= 0 && pat < RMQ_CFG_NPAT)
		eager = cfg->pat[pat].eager_max;
	if (eager == 0)
		eager = cfg->eager_max;
	if (eager == 0)
		eager = prov->eager_max;
	if (ring_set)
		ring = ring_opt;
	else if (nd != NULL && nd->p.ring_max > 0)
		ring = nd->p.ring_max;
	else if (pat >= 0 && pat < RMQ_CFG_NPAT && cfg->pat[pat].ring_max > 0)
		ring = cfg->pat[pat].ring_max;
	else
		ring = cfg->ring_max > 0 ? cfg->ring_max : prov->ring_max;
	/* A ring range only if it starts above the eager one. */
	return ring > eager;
}

static bool
wants_ring(const struct rmq_socket *s, const struct rmq_prov *prov)
{
	return rmq_wants_ring(&s->ctx->cfg, prov, s->name, s->ops->cfg_pat,
	                      s->eager_max_opt, s->ring_max_set,
	                      s->ring_max_opt);
}

int
rmq_ep_open(struct rmq_socket *s, const struct rmq_prov *prov,
            const char *node)
{
	struct fi_av_attr av_attr = {.type = FI_AV_UNSPEC};
	size_t            len;
	int               rc;

	if (s->ep != NULL)
		return s->prov == prov ? 0 : -RMQ_EPROVIDER;
	s->prov = prov;
	rc      = rmq_dom_get(s->ctx, prov, node, wants_ring(s, prov), &s->dom,
	                      &s->info);
	if (rc != 0) {
		s->prov = NULL;
		return rc;
	}
	rc = rmq_sock_paths(s);
	if (rc != 0) {
		rmq_ep_close(s);
		return rc;
	}
	/*
	 * What one message into our slabs may hold: the eager limit, but
	 * never less than RMQ_SLAB_MSG_MIN, so that seg pieces and eager
	 * fallbacks stay large where the table sends little eagerly (tcp:
	 * the ring wins from 49 bytes up).  Told to peers in the HELLO.
	 */
	s->min_multi = RMQ_HDR_SIZE + s->paths.eager_max;
	if (s->min_multi < RMQ_HDR_SIZE + RMQ_SLAB_MSG_MIN)
		s->min_multi = RMQ_HDR_SIZE + RMQ_SLAB_MSG_MIN;
	if (s->min_multi < RMQ_RTS_SIZE)
		s->min_multi = RMQ_RTS_SIZE;

	rc = cq_open(s);
	if (rc == 0 && s->info->addr_format == FI_ADDR_STR)
		rc = unique_name(s);
	if (rc == 0)
		rc = fi_av_open(s->dom->domain, &av_attr, &s->av, NULL);
	if (rc == 0)
		rc = fi_endpoint(s->dom->domain, s->info, &s->ep, NULL);
	if (rc == 0)
		rc = fi_ep_bind(s->ep, &s->cq->fid, FI_TRANSMIT | FI_RECV);
	if (rc == 0)
		rc = fi_ep_bind(s->ep, &s->av->fid, 0);
	/* After fi_enable: shm 1.17 crashes on endpoint options before. */
	if (rc == 0)
		rc = fi_enable(s->ep);
	if (rc == 0)
		rc = fi_setopt(&s->ep->fid, FI_OPT_ENDPOINT,
		               FI_OPT_MIN_MULTI_RECV, &s->min_multi,
		               sizeof(s->min_multi));
	if (rc == 0)
		rc = tx_init(s);
	if (rc == 0)
		rc = rmq_slabs_replenish(s);
	if (rc == 0) {
		len = sizeof(s->fabaddr);
		rc  = fi_getname(&s->ep->fid, s->fabaddr, &len);
		s->fabaddr_len = len;
	}
	if (rc != 0) {
		rmq_log(RMQ_LOG_ERROR, "%s: cannot open endpoint: %s",
		        prov->name, fi_strerror(-rc));
		rmq_ep_close(s);
	}
	return rc;
}

static void
close_fid(struct fid *fid, const char *what)
{
	int rc;

	if (fid == NULL)
		return;
	rc = fi_close(fid);
	if (rc != 0)
		rmq_log(RMQ_LOG_WARN, "closing the %s: %s", what,
		        fi_strerror(-rc));
}

void
rmq_ep_close(struct rmq_socket *s)
{
	struct rmq_slab *sl, *next;

	close_fid(s->ep ? &s->ep->fid : NULL, "endpoint");
	s->ep = NULL;
	close_fid(s->av ? &s->av->fid : NULL, "address vector");
	s->av = NULL;
	close_fid(s->cq ? &s->cq->fid : NULL, "completion queue");
	s->cq = NULL;
	for (sl = s->slabs; sl != NULL; sl = next) {
		next = sl->next;
		/* Its registration goes with the domain; an rmq_msg that
		 * still points into it frees it with the last reference. */
		if (sl->mr != NULL)
			fi_close(&sl->mr->fid);
		sl->mr   = NULL;
		sl->sock = NULL;
		rmq_slab_unref(sl);
	}
	s->slabs   = NULL;
	s->nposted = 0;
	if (s->tx_mr != NULL)
		fi_close(&s->tx_mr->fid);
	s->tx_mr = NULL;
	rmq_numa_free(s->tx_mem, &s->tx_numa);
	free(s->txs);
	s->tx_mem  = NULL;
	s->txs     = NULL;
	s->tx_free = NULL;
	if (s->info != NULL)
		fi_freeinfo(s->info);
	s->info = NULL;
	if (s->dom != NULL)
		rmq_dom_put(s->ctx, s->dom);
	s->dom  = NULL;
	s->prov = NULL;
}
