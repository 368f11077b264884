/*
 * Contexts (ctx.c) and the fabric domains their sockets share (dom.c).
 *
 * Ownership: a context owns its domains (one per provider, fabric domain
 * and write ordering in use), the NUMA topology and the progress thread;
 * each socket holds a reference on its domain.
 */
#ifndef RMQ_CTX_H
#define RMQ_CTX_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

#include "caps.h"
#include "config.h"
#include "numa.h"
#include "rmq.h"
#include "thread.h"

struct rmq_path_ops;

struct rmq_dom {
	struct rmq_dom       *next;
	char                  key[160]; /* prov_name/fabric/domain[/ordered] */
	struct fi_info       *info;
	struct fid_fabric    *fabric;
	struct fid_domain    *domain;
	struct rmq_caps       caps;
	struct rmq_numa_place place; /* where its sockets' memory goes */
	int                   refs;
};

struct rmq_ctx {
	pthread_mutex_t   lock;      /* domains, socket count, numa loading */
	struct rmq_config cfg;
	struct rmq_dom   *doms;
	int               nsockets;
	struct rmq_numa   numa;      /* loaded at the first domain */
	bool              numa_tried;
	struct rmq_thread progress;  /* progress: thread; fixed at rmq_ctx_new */
	atomic_bool       shut;      /* rmq_ctx_shutdown was called */
	int               shut_fd;   /* an eventfd, readable from then on:
	                              * in every wait's poll set */
	uint8_t          *auth_key;  /* auth.key_file's secret, or NULL */
	size_t            auth_key_len;
};

/*
 * Open (or share) a domain for a provider and source address (node, may
 * be NULL).  ordered: writes ordered with sends (the ring mixed with other
 * paths).  rows: the path rows its caps answer for (caps.h).  *infop: the
 * fi_info for the endpoint, the caller's to free.
 */
int  rmq_dom_get(rmq_ctx *ctx, const struct rmq_prov *prov, const char *node,
                 bool ordered, const struct rmq_path_ops *const *rows,
                 struct rmq_dom **domp, struct fi_info **infop);
void rmq_dom_put(rmq_ctx *ctx, struct rmq_dom *dom);

#endif /* RMQ_CTX_H */
