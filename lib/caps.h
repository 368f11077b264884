/*
 * Capability negotiation (caps.c): what a provider can do, from the
 * fi_info it returned merged with its row in providers/.  The rest of the
 * engine branches on struct rmq_caps, never on a provider's name.
 */
#ifndef RMQ_CAPS_H
#define RMQ_CAPS_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>

#include "fi_api.h" /* the API version librmq asks for */

#include "config.h"
#include "prov.h"
#include "rmq.h"

struct rmq_path_ops;

struct rmq_caps {
	const struct rmq_prov *prov;
	/* The path rows (the registry, paths/path.c), handed down by whoever
	 * opens the domain: what rmq_path_can and the path table ask. */
	const struct rmq_path_ops *const *rows;
	uint64_t caps;         /* fi_info->caps */
	uint64_t mode;         /* fi_info->mode */
	uint64_t mr_mode;      /* domain_attr->mr_mode */
	uint64_t msg_order;    /* tx_attr->msg_order */
	size_t   inject_size;  /* tx_attr->inject_size */
	size_t   cq_data_size; /* domain_attr->cq_data_size */
	size_t   max_msg_size; /* ep_attr->max_msg_size */
	size_t   mr_key_size;
	int      data_progress;
	bool     inject;       /* inject_size holds at least our header */
	bool     tagged;       /* FI_TAGGED: rndv_send possible */
	bool     rma_read;     /* FI_RMA|FI_READ|FI_REMOTE_READ granted */
	bool     rma_write;    /* FI_RMA|FI_WRITE|FI_REMOTE_WRITE granted */
	bool     rma_native;   /* hardware RMA (row: not emulated) */
	bool     ordered;      /* writes ordered with sends: the ring */
	bool     rx_cq_data;   /* each writedata consumes a posted receive */
	bool     strict;       /* verbs/efa rules applied (rmq_paths(7)) */
	bool     multi_recv;
	bool     wait_fd;      /* try a CQ wait fd */
	bool     mr_local;     /* descriptors for local buffers */
	bool     in_place;     /* sends may post the caller's buffer: no
	                        * FI_MR_LOCAL, two iovecs per send/write,
	                        * completions without the peer (row) */
	bool     mr_virt_addr; /* remote addresses are VAs, else offsets */
	bool     mr_prov_key;  /* provider picks keys */
	bool     mr_endpoint;  /* MRs must be bound to the endpoint */
	bool     mr_allocated; /* only allocated memory can be registered */
	bool     need_context; /* FI_CONTEXT / FI_CONTEXT2 mode */
	size_t   inject_max;   /* payload bytes that go inject, header inline */
	bool     inject_data;  /* header in 8 bytes of CQ data instead: */
	size_t   inject_data_max; /* then inject carries up to inject_size */
	size_t   eager_max;    /* payload bytes that go eager */
	size_t   eager_cap;    /* eager_max never above (SIZE_MAX: none) */
	size_t   rma_chunk;    /* largest fi_read/fi_write posted */
	size_t   ring_max;     /* payload bytes that may go by ring */
	int      rndv_path;    /* above: RNDV_READ/_WRITE/_SEND or SEG */
};

/* Our slabs take messages of at least this payload (seg pieces). */
#define RMQ_SLAB_MSG_MIN 8192

/* Strict mode cuts RMA into chunks no larger than this. */
#define RMQ_STRICT_RMA_CHUNK (1u << 20)

int rmq_caps_from_info(struct rmq_caps *c, const struct fi_info *info,
                       const struct rmq_prov *row,
                       const struct rmq_config *cfg,
                       const struct rmq_path_ops *const *rows);
/* Fill fi_getinfo hints for this provider (caller frees with fi_freeinfo). */
struct fi_info *rmq_caps_hints(const struct rmq_prov *row);
/* level 0 = all we can use, 1 = no write ordering, 2 = no RMA. */
struct fi_info *rmq_caps_hints_level(const struct rmq_prov *row, int level);
#define RMQ_HINT_LEVELS 3
/*
 * Does a posted receive take one message on what fi_getinfo gave (info)?
 * Only on a RMQ_PROV_ONE_RECV row whose calls reach the provider's own
 * endpoint: where tcp;ofi_rxm keeps its own protocol (FI_PROTO_RXM:
 * libfabric was initialised before librmq set FI_OFI_RXM_ENABLE_PASSTHRU,
 * or the user set it to 0), it reads every message off the stream into
 * its own buffers, and one that finds no receive posted waits in rxm's
 * queue while writes behind it (the ring) complete: measured, a PULL of
 * 64 pushers got a pusher's third message before its first.  There the
 * receives are multi-receive slabs, as before (dom.c asks again).
 */
bool rmq_caps_one_recv(const struct rmq_prov *row,
                       const struct fi_info *info);
/* Does fi_getinfo offer this provider at a level rmq_dom_get accepts? */
bool rmq_prov_available(const struct rmq_prov *row);
/*
 * Provider auto: the first of cfg->provider_order this machine has, or
 * NULL (then why says what was tried and what there is).
 */
const struct rmq_prov *rmq_prov_auto(const struct rmq_config *cfg,
                                     char *why, size_t whylen);

/* "tcp, sockets, shm": the providers this machine has, or "none". */
void rmq_prov_available_list(char *buf, size_t len);

/* The values of a provider's knobs (its row names the config keys). */
struct rmq_knobs {
	const char *iface;      /* interface name, or NULL */
	const char *iface_key;  /* its config key: "tcp.interface" */
	const char *domain;     /* fi_info domain name, or NULL */
	const char *domain_key; /* "verbs.domain" */
	bool iface_is_domain;   /* the provider names domains after
	                         * interfaces (tcp, sockets) */
};
void rmq_prov_knobs(const struct rmq_config *cfg, const struct rmq_prov *p,
                    struct rmq_knobs *k);

/* What a row's usable() answers: ok, or not with reason in *why (why may
 * be NULL). */
static inline bool
rmq_caps_need(bool ok, const char *reason, const char **why)
{
	if (why != NULL)
		*why = ok ? NULL : reason;
	return ok;
}

/* Can it fi_writedata with 4 bytes of immediate (what the rows that write
 * into a peer's memory and tell it need)?  Else *why says why. */
bool rmq_caps_writedata(const struct rmq_caps *c, const char **why);

/* Can this provider carry path (its row's usable)?  If not, *why says
 * why (for messages). */
bool rmq_path_can(const struct rmq_caps *c, int path, const char **why);

#endif /* RMQ_CAPS_H */
