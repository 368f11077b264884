/*
 * Fabric domains (ctx.h): one per provider, fabric domain and write
 * ordering in use, shared by a context's sockets, with the capabilities
 * negotiated for it and the NUMA node its memory goes on.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "caps.h"
#include "ctx.h"
#include "util.h"

/*
 * Where d's memory goes.  The topology is loaded at the first domain, not
 * in rmq_ctx_new: finding the PCI devices reads sysfs (slow: INTERNALS
 * §17), which programs that never open a socket should not pay, and
 * policy off skips it.  Called with ctx->lock held.
 */
static void
dom_place(rmq_ctx *ctx, struct rmq_dom *d, const struct fi_info *info)
{
	struct rmq_numa_place *pl = &d->place;

	if (!ctx->numa_tried && ctx->cfg.numa_policy != RMQ_CFG_NUMA_OFF) {
		ctx->numa_tried = true;
		if (rmq_numa_open(&ctx->numa, NULL) != 0)
			rmq_log(RMQ_LOG_INFO, "numa: %s: memory is first touch",
			        ctx->numa.err);
	}
	rmq_numa_choose(&ctx->numa, info, ctx->cfg.numa_policy,
	                ctx->cfg.numa_node, ctx->cfg.numa_cpuset, pl);
	rmq_log(RMQ_LOG_INFO, "%s: NUMA node %d: %s; memory %s", d->key,
	        pl->node, pl->why, pl->mem);
	/* The progress thread runs next to the first domain's NIC (or the
	 * caller's node): where its completions and slabs are; under
	 * policy cpuset, on numa.cpuset's CPUs. */
	if (ctx->progress.on && !ctx->progress.pinned && pl->node >= 0) {
		ctx->progress.pinned = true;
		if (rmq_numa_bind_thread(&ctx->numa, pl, ctx->progress.thr) == 0)
			rmq_log(RMQ_LOG_INFO, "progress thread pinned to CPUs %s",
			        pl->cpuset);
		else
			rmq_log(RMQ_LOG_INFO, "progress thread not pinned "
			        "(CPUs '%s')", pl->cpuset);
	}
}

static void
dom_free(struct rmq_dom *d)
{
	int rc;

	if (d->domain != NULL && (rc = fi_close(&d->domain->fid)) != 0)
		rmq_log(RMQ_LOG_WARN, "closing domain %s: %s", d->key,
		        fi_strerror(-rc));
	if (d->fabric != NULL && (rc = fi_close(&d->fabric->fid)) != 0)
		rmq_log(RMQ_LOG_WARN, "closing fabric %s: %s", d->key,
		        fi_strerror(-rc));
	if (d->info != NULL)
		fi_freeinfo(d->info);
	free(d);
}

/*
 * The config names a domain (or an interface) the provider did not give
 * us: say which key, and what domains the provider has here.
 */
static void
no_domain(rmq_ctx *ctx, const struct rmq_prov *prov,
          const struct rmq_knobs *knobs, const char *want, const char *node)
{
	struct fi_info *hints, *info = NULL, *i;
	char            where[300], have[256] = "";
	size_t          n = 0;

	rmq_config_where(&ctx->cfg,
	              knobs->domain != NULL ? knobs->domain_key
	                                    : knobs->iface_key,
	              where, sizeof(where));
	hints = rmq_caps_hints_level(prov, 1);
	if (hints != NULL &&
	    fi_getinfo(rmq_fi_api(), NULL, NULL, 0, hints, &info) == 0)
		for (i = info; i != NULL; i = i->next)
			rmq_list_add(have, sizeof(have), &n,
			             i->domain_attr->name);
	if (info != NULL)
		fi_freeinfo(info);
	if (hints != NULL)
		fi_freeinfo(hints);
	rmq_log(RMQ_LOG_ERROR,
	        "%s: provider %s has no domain '%s'%s%s here (its domains: %s)",
	        where, prov->name, want, node ? " for address " : "",
	        node ? node : "", n ? have : "none");
}

/* Keep the first entry of list (in domain want, if not NULL); free the
 * rest.  NULL if no entry is in want. */
static struct fi_info *
take_domain(struct fi_info *list, const char *want)
{
	struct fi_info *i, *prev = NULL;

	for (i = list; i != NULL; prev = i, i = i->next)
		if (want == NULL || strcmp(i->domain_attr->name, want) == 0)
			break;
	if (i == NULL) {
		fi_freeinfo(list);
		return NULL;
	}
	if (prev != NULL) {
		prev->next = NULL; /* detach i and what follows */
		fi_freeinfo(list);
	}
	if (i->next != NULL) {
		fi_freeinfo(i->next);
		i->next = NULL;
	}
	return i;
}

int
rmq_dom_get(rmq_ctx *ctx, const struct rmq_prov *prov, const char *node,
            bool ordered, const struct rmq_path_ops *const *rows,
            struct rmq_dom **domp, struct fi_info **infop)
{
	struct fi_info  *hints, *info = NULL;
	struct rmq_dom  *d;
	struct rmq_knobs knobs;
	const char      *want;
	char             key[160];
	int              rc = 0, level;

	/* The domain the config names (verbs.domain, tcp.interface ...). */
	rmq_prov_knobs(&ctx->cfg, prov, &knobs);
	want = knobs.domain != NULL ? knobs.domain
	       : knobs.iface_is_domain ? knobs.iface
	                               : NULL;
	/* Everything we can use first, then less (rmq_caps_hints_level). */
	for (level = ordered ? 0 : 1; level < RMQ_HINT_LEVELS; level++) {
		hints = rmq_caps_hints_level(prov, level);
		if (hints == NULL)
			return -RMQ_ENOMEM;
		/* An IPv6 node: an IPv6 endpoint (the tcp provider would
		 * otherwise find no IPv4 address there). */
		if (hints->addr_format == FI_SOCKADDR_IN && node != NULL &&
		    strchr(node, ':') != NULL)
			hints->addr_format = FI_SOCKADDR_IN6;
		rc = fi_getinfo(rmq_fi_api(), node, NULL,
		                node ? FI_SOURCE : 0, hints, &info);
		/* rxm's own protocol: multi-receive slabs (caps.h). */
		if (rc == 0 && !(hints->caps & FI_MULTI_RECV) &&
		    !rmq_caps_one_recv(prov, info)) {
			fi_freeinfo(info);
			info = NULL;
			hints->caps |= FI_MULTI_RECV;
			rc = fi_getinfo(rmq_fi_api(), node, NULL,
			                node ? FI_SOURCE : 0, hints, &info);
		}
		fi_freeinfo(hints);
		if (rc != -FI_ENODATA)
			break;
	}
	if (rc != 0 || info == NULL) {
		rmq_log(RMQ_LOG_INFO,
		        "provider %s (%s) not available here%s%s: %s",
		        prov->name, prov->fi_prov, node ? " for " : "",
		        node ? node : "", fi_strerror(-rc));
		return rc == -FI_ENODATA || rc == 0 ? -RMQ_ENODEV : rc;
	}
	/*
	 * The first entry is the provider's preferred one, or the first of
	 * the domain the config names.  We pick it from the list: measured
	 * with libfabric 1.17, tcp and sockets ignore a domain name in the
	 * hints (fi_info -d lo still lists eth0 first).
	 */
	info = take_domain(info, want);
	if (info == NULL) {
		no_domain(ctx, prov, &knobs, want, node);
		return -RMQ_ENODEV;
	}
	snprintf(key, sizeof(key), "%s/%s/%s%s", info->fabric_attr->prov_name,
	         info->fabric_attr->name, info->domain_attr->name,
	         level == 0 ? "/ordered" : "");

	pthread_mutex_lock(&ctx->lock);
	for (d = ctx->doms; d != NULL; d = d->next)
		if (strcmp(d->key, key) == 0)
			break;
	if (d == NULL) {
		d = calloc(1, sizeof(*d));
		if (d == NULL) {
			rc = -RMQ_ENOMEM;
			goto unlock;
		}
		snprintf(d->key, sizeof(d->key), "%s", key);
		d->info = fi_dupinfo(info);
		rc      = d->info ? fi_fabric(info->fabric_attr, &d->fabric, NULL)
		                  : -RMQ_ENOMEM;
		if (rc == 0)
			rc = fi_domain(d->fabric, info, &d->domain, NULL);
		if (rc == 0)
			rc = rmq_caps_from_info(&d->caps, info, prov, &ctx->cfg,
			                        rows);
		if (rc != 0) {
			rmq_log(RMQ_LOG_INFO, "cannot open %s: %s", key,
			        rmq_strerror(rc));
			dom_free(d);
			goto unlock;
		}
		dom_place(ctx, d, info);
		rmq_log(RMQ_LOG_INFO,
		        "%s: mr_mode %#llx mode %#llx inject %zu eager %zu "
		        "rma %s%s wait fd %s receives %s",
		        key, (unsigned long long) d->caps.mr_mode,
		        (unsigned long long) d->caps.mode, d->caps.inject_max,
		        d->caps.eager_max, d->caps.rma_read ? "yes" : "no",
		        d->caps.rma_native ? " (native)" : " (emulated)",
		        d->caps.wait_fd ? "yes" : "no",
		        d->caps.multi_recv ? "multi" : "one message");
		d->next   = ctx->doms;
		ctx->doms = d;
	}
	d->refs++;
	*domp  = d;
	*infop = info;
	info   = NULL;
unlock:
	pthread_mutex_unlock(&ctx->lock);
	if (info != NULL)
		fi_freeinfo(info);
	return rc;
}

void
rmq_dom_put(rmq_ctx *ctx, struct rmq_dom *dom)
{
	struct rmq_dom **pp;

	pthread_mutex_lock(&ctx->lock);
	if (--dom->refs == 0) {
		for (pp = &ctx->doms; *pp != NULL; pp = &(*pp)->next)
			if (*pp == dom) {
				*pp = dom->next;
				break;
			}
		dom_free(dom);
	}
	pthread_mutex_unlock(&ctx->lock);
}
