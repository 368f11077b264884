/*
 * A socket's libfabric objects (ep.h): endpoint, CQ, AV and the multi-recv
 * slabs, opened at the first bind/connect and closed with the socket.
 * Registration honours every mr_mode bit the provider returned.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fi_cm.h>
#include <rdma/fi_endpoint.h>

#include "ctx.h"
#include "ep.h"
#include "shmname.h"
#include "pattern_ops.h"
#include "select.h"
#include "socket.h"
#include "util.h"

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

/* Shard k's endpoint and posted-slab count (socket.h). */
static struct fid_ep *
shard_ep(struct rmq_socket *s, int k)
{
	return k == 0 ? s->ep : s->shards[k - 1].ep;
}

static int *
shard_nposted(struct rmq_socket *s, int k)
{
	return k == 0 ? &s->nposted : &s->shards[k - 1].nposted;
}

/*
 * Receives kept posted per endpoint: cfg.slabs multi-recv slabs, or where
 * a receive takes one message (RMQ_PROV_ONE_RECV: tcp, whose ofi_rxm then
 * hands every call straight to the tcp provider), 32 buffers per slab of
 * the config, each of one largest message (min_multi): 128 by default, as
 * many as ofi_rxm kept per connection before (providers/tcp.c).
 */
static int
slabs_want(const struct rmq_socket *s)
{
	return s->dom->caps.multi_recv ? s->ctx->cfg.slabs
	                               : 32 * s->ctx->cfg.slabs;
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

/*
 * A slab's completion: a message landed in it (the socket's on_msg takes
 * it), or the provider is done with it (FI_MULTI_RECV).
 */
static void
slab_done(struct rmq_op *op, const struct rmq_cqe *e, void *owner)
{
	struct rmq_socket *s   = owner;
	struct rmq_slab   *sl  = rmq_container_of(op, struct rmq_slab, op);
	uint64_t           flags = e->flags;
	bool               one = !s->dom->caps.multi_recv;
	/* buf is the message's place for FI_MULTI_RECV only: a one-message
	 * receive's is its buffer's start, which tcp reports as NULL. */
	uint8_t           *buf = one ? sl->buf : e->buf;

	if (e->err != 0) {
		if (e->err != -FI_ECANCELED) {
			s->stats.proto_errors++;
			rmq_log(RMQ_LOG_WARN, "receive error: %s",
			        fi_strerror(-e->err));
		}
		flags &= FI_MULTI_RECV;
	}
	if ((flags & FI_RECV) && buf != NULL && e->len > 0)
		s->on_msg(s, sl, buf, e->len,
		          (flags & FI_REMOTE_CQ_DATA) ? &e->data : NULL);
	/* Spent (a one-message receive by any completion): another goes up
	 * after this CQ pass -- a one-message receive itself, from the spent
	 * list, once its message is taken. */
	if (one || (flags & FI_MULTI_RECV)) {
		sl->posted = false;
		(*shard_nposted(s, sl->shard))--;
		if (one) {
			sl->spent_next = s->spent;
			s->spent       = sl;
		}
		rmq_reactor_arm(&s->reactor, s->slab_hook, true);
	}
}

static int
slab_post(struct rmq_socket *s, struct rmq_slab *sl, int shard)
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

	rc = fi_recvmsg(shard_ep(s, shard), &m,
	                s->dom->caps.multi_recv ? FI_MULTI_RECV : 0);
	if (rc == 0) {
		sl->posted = true;
		sl->shard  = shard;
		(*shard_nposted(s, shard))++;
	}
	return (int) rc;
}

static int
slab_new(struct rmq_socket *s, struct rmq_slab **slp)
{
	size_t           size = (size_t) s->ctx->cfg.slab_size;
	struct rmq_slab *sl;
	int              rc;

	/* At least four of the largest eager messages per slab; one where
	 * a receive takes one. */
	if (!s->dom->caps.multi_recv)
		size = s->min_multi;
	else if (size < 4 * s->min_multi)
		size = 4 * s->min_multi;
	sl = calloc(1, sizeof(*sl));
	if (sl == NULL)
		return -RMQ_ENOMEM;
	rmq_op_init(&sl->op, slab_done, RMQ_OP_F_RECV);
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

/* Keep cfg.slabs slabs posted on one endpoint. */
static int
shard_replenish(struct rmq_socket *s, int shard)
{
	int             *n    = shard_nposted(s, shard);
	int              want = slabs_want(s);
	struct rmq_slab *sl;
	int              rc;

	/* (One-message receives go up again from the spent list only.) */
	for (sl = s->dom->caps.multi_recv ? s->slabs : NULL;
	     sl != NULL && *n < want; sl = sl->next)
		if (!sl->posted && slab_idle(sl)) {
			rc = slab_post(s, sl, shard);
			if (rc != 0)
				return rc;
		}
	while (*n < want) {
		rc = slab_new(s, &sl);
		if (rc == 0)
			rc = slab_post(s, sl, shard);
		if (rc != 0)
			return rc;
	}
	return 0;
}

static bool
slabs_short(struct rmq_socket *s)
{
	int k;

	if (s->ep == NULL)
		return false;
	for (k = 0; k <= s->nshards; k++)
		if (*shard_nposted(s, k) < slabs_want(s))
			return true;
	return false;
}

static int
slabs_replenish(struct rmq_socket *s)
{
	struct rmq_slab *sl, **pp;
	int              rc = 0, spare = 0, k;

	for (k = 0; k <= s->nshards; k++)
		if ((rc = shard_replenish(s, k)) != 0)
			return rc;
	/* Free idle slabs left over from a burst (one-message receives:
	 * spent_repost does). */
	for (pp = s->dom->caps.multi_recv ? &s->slabs : NULL;
	     pp != NULL && (sl = *pp) != NULL;) {
		if (!sl->posted && slab_idle(sl) &&
		    ++spare > slabs_want(s)) {
			*pp = sl->next;
			slab_free(sl);
			continue;
		}
		pp = &sl->next;
	}
	return rc;
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
 * with a random part, so no leftover can ever be in the way, and with
 * whose they are, so that the files of processes gone are removed here,
 * before we make one more (shmname.c).
 */
static int
unique_name(struct fi_info *info)
{
	char name[80];
	int  rc;

	(void) rmq_shm_sweep(RMQ_SHM_DIR, 1000000000);
	rc = rmq_shm_name(name, sizeof(name));
	if (rc != 0)
		return rc;
	free(info->src_addr);
	info->src_addr = strdup(name);
	if (info->src_addr == NULL) {
		info->src_addrlen = 0;
		return -RMQ_ENOMEM;
	}
	info->src_addrlen = strlen(name) + 1;
	return 0;
}

/*
 * One-message receives spent: up again those whose message was taken (a
 * short list: the messages queued and not yet read); one past what its
 * endpoint wants (left from a burst) is freed.  Then new ones only if an
 * endpoint is down to half what it wants -- a message is read after the
 * CQ pass that brought it, so topping up at once would allocate one
 * receive per message.
 */
static void
spent_repost(struct rmq_socket *s)
{
	struct rmq_slab *sl, **pp, **lp;
	int              k;

	for (pp = &s->spent; (sl = *pp) != NULL;) {
		if (!slab_idle(sl)) {
			pp = &sl->spent_next;
			continue;
		}
		*pp = sl->spent_next;
		if (shard_ep(s, sl->shard) != NULL &&
		    *shard_nposted(s, sl->shard) < slabs_want(s) &&
		    slab_post(s, sl, sl->shard) == 0)
			continue;
		for (lp = &s->slabs; *lp != sl; lp = &(*lp)->next)
			;
		*lp = sl->next;
		slab_free(sl);
	}
	for (k = 0; k <= s->nshards; k++)
		if (shard_ep(s, k) != NULL &&
		    *shard_nposted(s, k) <= slabs_want(s) / 2)
			(void) shard_replenish(s, k);
}

/* After a CQ pass, while one is missing: keep cfg.slabs slabs posted
 * (a slab still holding messages is reposted once they are taken). */
static void
slabs_after(void *owner)
{
	struct rmq_socket *s = owner;

	if (!s->dom->caps.multi_recv) {
		spent_repost(s);
		rmq_reactor_arm(&s->reactor, s->slab_hook, s->spent != NULL);
		return;
	}
	if (slabs_short(s))
		(void) slabs_replenish(s);
	rmq_reactor_arm(&s->reactor, s->slab_hook, slabs_short(s));
}

int
rmq_strict_desc(struct rmq_socket *s, const void *desc, const char *op)
{
	if (!s->dom->caps.strict || desc != NULL)
		return 0;
	rmq_log(RMQ_LOG_ERROR,
	        "strict mode: %s posted without a memory descriptor "
	        "(FI_MR_LOCAL)",
	        op);
	return -RMQ_EPROTO;
}

int
rmq_ep_paths(struct rmq_socket *s)
{
	return rmq_path_table_build(&s->paths, &s->dom->caps, &s->ctx->cfg,
	                            s->pat->section, s->name, &s->popts);
}

size_t
rmq_ep_min_multi(const struct rmq_path_table *t)
{
	/*
	 * What one message into our slabs may hold: the eager limit, but
	 * never less than RMQ_SLAB_MSG_MIN, so that seg pieces and eager
	 * fallbacks stay large where the table sends little eagerly (tcp:
	 * the ring from 4 KiB up).  Told to peers in the HELLO.
	 */
	size_t m = RMQ_HDR_SIZE + t->eager_max;

	if (m < RMQ_HDR_SIZE + RMQ_SLAB_MSG_MIN)
		m = RMQ_HDR_SIZE + RMQ_SLAB_MSG_MIN;
	if (m < RMQ_RTS_SIZE)
		m = RMQ_RTS_SIZE;
	return m;
}

/*
 * An endpoint of s's from info, on s's CQ, with an address table of its
 * own (and a fresh name where addresses are strings): bound, enabled,
 * FI_OPT_MIN_MULTI_RECV set, its fabric address read.  The socket's first
 * endpoint and every shard are made here.
 */
static int
ep_make(struct rmq_socket *s, struct fi_info *info, struct fid_ep **ep,
        struct fid_av **av, uint8_t *addr, size_t *addrlen)
{
	struct fi_av_attr av_attr = {.type = FI_AV_UNSPEC};
	size_t            len     = RMQ_ADDR_MAX;
	int               rc      = 0;

	if (info->addr_format == FI_ADDR_STR)
		rc = unique_name(info);
	if (rc == 0)
		rc = fi_av_open(s->dom->domain, &av_attr, av, NULL);
	if (rc == 0)
		rc = fi_endpoint(s->dom->domain, info, ep, NULL);
	if (rc == 0)
		rc = fi_ep_bind(*ep, &s->cq->fid, FI_TRANSMIT | FI_RECV);
	if (rc == 0)
		rc = fi_ep_bind(*ep, &(*av)->fid, 0);
	/* After fi_enable: shm 1.17 crashes on endpoint options before. */
	if (rc == 0)
		rc = fi_enable(*ep);
	if (rc == 0 && s->dom->caps.multi_recv)
		rc = fi_setopt(&(*ep)->fid, FI_OPT_ENDPOINT,
		               FI_OPT_MIN_MULTI_RECV, &s->min_multi,
		               sizeof(s->min_multi));
	if (rc == 0)
		rc = fi_getname(&(*ep)->fid, addr, &len);
	*addrlen = rc == 0 ? len : 0;
	return rc;
}

int
rmq_ep_open(struct rmq_socket *s, const struct rmq_prov *prov,
            const char *node)
{
	int rc;

	if (s->ep != NULL)
		return s->prov == prov ? 0 : -RMQ_EPROVIDER;
	s->prov = prov;
	rc      = rmq_dom_get(s->ctx, prov, node,
	                      rmq_wants_ring(s->path_ops, &s->ctx->cfg, prov,
	                                     s->pat->section, s->name,
	                                     &s->popts),
	                      s->path_ops, &s->dom, &s->info);
	if (rc != 0) {
		s->prov = NULL;
		return rc;
	}
	rc = rmq_ep_paths(s);
	if (rc != 0) {
		rmq_ep_close(s);
		return rc;
	}
	s->min_multi = rmq_ep_min_multi(&s->paths);

	rc = cq_open(s);
	if (rc == 0)
		rc = ep_make(s, s->info, &s->ep, &s->av, s->fabaddr,
		             &s->fabaddr_len);
	if (rc == 0)
		rc = slabs_replenish(s);
	if (rc == 0) {
		s->slab_hook = rmq_reactor_after(&s->reactor, slabs_after);
		rc           = s->slab_hook < 0 ? s->slab_hook : 0;
	}
	if (rc != 0) {
		rmq_log(RMQ_LOG_INFO, "%s: cannot open endpoint: %s",
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

/* ---- shards: more peers than one endpoint's address table takes ---- */

/* Shard k: an endpoint like ep (same domain, CQ and options), its own
 * address table, its own name (shm), slabs of its own. */
static int
shard_open(struct rmq_socket *s, struct rmq_shard *sh, int k)
{
	struct fi_info *info = fi_dupinfo(s->info);
	int             rc;

	if (info == NULL)
		return -RMQ_ENOMEM;
	rc = ep_make(s, info, &sh->ep, &sh->av, sh->fabaddr, &sh->fabaddr_len);
	fi_freeinfo(info);
	if (rc == 0) {
		s->nshards++; /* before its slabs: shard_nposted(s, k) */
		rc = shard_replenish(s, k);
		if (rc != 0)
			return rc; /* stays open, closed with the socket */
		rmq_log(RMQ_LOG_INFO, "%s: endpoint %d opened for peers "
		        "past %d", s->prov->name, k, k * s->prov->max_peers);
		return 0;
	}
	close_fid(sh->ep ? &sh->ep->fid : NULL, "endpoint");
	close_fid(sh->av ? &sh->av->fid : NULL, "address vector");
	memset(sh, 0, sizeof(*sh));
	return rc;
}

int
rmq_ep_shard_take(struct rmq_socket *s, char *reason, size_t rl)
{
	int cap = s->prov->max_peers, k, rc;

	for (k = 0; k <= s->nshards; k++)
		if (cap == 0 || s->shard_peers[k] < cap)
			break;
	if (k > s->nshards) {
		/* Registrations bound to one endpoint (FI_MR_ENDPOINT) would
		 * not serve the others: no shards there. */
		if (k == RMQ_SHARDS_MAX || s->dom->caps.mr_endpoint) {
			snprintf(reason, rl, "provider %s takes at most %d "
			         "peers per socket here", s->prov->name,
			         (s->nshards + 1) * cap);
			return -RMQ_EPEERFULL;
		}
		if (s->shards == NULL &&
		    (s->shards = calloc(RMQ_SHARDS_MAX - 1,
		                        sizeof(*s->shards))) == NULL)
			return -RMQ_ENOMEM;
		rc = shard_open(s, &s->shards[k - 1], k);
		if (rc != 0) {
			snprintf(reason, rl, "cannot open endpoint %d for "
			         "peers past %d: %s", k, k * cap,
			         fi_strerror(rc < 0 ? -rc : rc));
			return rc == -RMQ_ENOMEM ? rc : -RMQ_EPEERFULL;
		}
	}
	s->shard_peers[k]++;
	return k;
}

struct fid_ep *
rmq_ep_shard_ep(const struct rmq_socket *s, int k)
{
	return k <= 0 ? s->ep : s->shards[k - 1].ep;
}

struct fid_av *
rmq_ep_shard_av(const struct rmq_socket *s, int k)
{
	return k <= 0 ? s->av : s->shards[k - 1].av;
}

const uint8_t *
rmq_ep_shard_addr(const struct rmq_socket *s, int k, size_t *len)
{
	if (k <= 0) {
		*len = s->fabaddr_len;
		return s->fabaddr;
	}
	*len = s->shards[k - 1].fabaddr_len;
	return s->shards[k - 1].fabaddr;
}

void
rmq_ep_shard_put(struct rmq_socket *s, int k, fi_addr_t addr)
{
	struct fid_av *av = rmq_ep_shard_av(s, k);

	if (addr != FI_ADDR_UNSPEC && av != NULL)
		fi_av_remove(av, &addr, 1, 0);
	s->shard_peers[k]--;
}

void
rmq_ep_shards_close(struct rmq_socket *s)
{
	int k;

	for (k = 0; k < s->nshards; k++) {
		close_fid(s->shards[k].ep ? &s->shards[k].ep->fid : NULL,
		          "endpoint");
		s->shards[k].ep = NULL;
	}
}

void
rmq_ep_close(struct rmq_socket *s)
{
	struct rmq_slab *sl, *next;
	int              k;

	close_fid(s->ep ? &s->ep->fid : NULL, "endpoint");
	s->ep = NULL;
	rmq_ep_shards_close(s);
	close_fid(s->av ? &s->av->fid : NULL, "address vector");
	s->av = NULL;
	for (k = 0; k < s->nshards; k++)
		close_fid(s->shards[k].av ? &s->shards[k].av->fid : NULL,
		          "address vector");
	free(s->shards);
	s->shards  = NULL;
	s->nshards = 0;
	memset(s->shard_peers, 0, sizeof(s->shard_peers));
	close_fid(s->cq ? &s->cq->fid : NULL, "completion queue");
	s->cq = NULL;
	for (sl = s->slabs; sl != NULL; sl = next) {
		next = sl->next;
		/* Its registration goes with the domain; an rmq_msg that
		 * still points into it frees it with the last reference. */
		if (sl->mr != NULL)
			fi_close(&sl->mr->fid);
		sl->mr = NULL;
		rmq_slab_unref(sl);
	}
	s->slabs   = NULL;
	s->spent   = NULL;
	s->nposted = 0;
	if (s->info != NULL)
		fi_freeinfo(s->info);
	s->info = NULL;
	if (s->dom != NULL)
		rmq_dom_put(s->ctx, s->dom);
	s->dom  = NULL;
	s->prov = NULL;
}
