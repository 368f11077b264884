/*
 * librmq internals: the structures of the engine.  Not installed.
 *
 * Data flows socket (pattern) -> path selector -> path -> libfabric endpoint;
 * completions come back through rmq_progress(), which the calling thread
 * drives (progress mode "inline").
 *
 * Ownership, in one place:
 *   ctx    owns its domains (one per provider and fabric domain in use).
 *   socket owns its endpoint, CQ, AV, slabs, tx slots, peers, listeners.
 *   peer   lives while it is connected or still has queued messages.
 *   rxent  (a received message) holds a reference on the slab it lies in.
 *   rmq_msg given to the user may hold a slab reference too; a slab whose
 *          socket has closed is freed by the last rmq_msg_free().
 */
#ifndef RMQ_INT_H
#define RMQ_INT_H

#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "config.h"
#include "prov.h"
#include "rmq.h"
#include "wire.h"

#define RMQ_UNUSED(x) ((void) (x))

#define rmq_container_of(ptr, type, member) \
	((type *) (void *) ((char *) (ptr) - offsetof(type, member)))

/* ---- logging, time (util.c) ---- */
void rmq_log(int level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void    rmq_log_set_level(int level);
int64_t rmq_now_ns(void);
/* Deadline in ns from a timeout in ms (-1: forever -> INT64_MAX). */
int64_t rmq_deadline(int timeout_ms);
uint64_t rmq_random64(void);

/* ---- capabilities (caps.c) ---- */

/* What a provider can do, from the fi_info it returned plus its row. */
struct rmq_caps {
	const struct rmq_prov *prov;
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
	bool     mr_virt_addr; /* remote addresses are VAs, else offsets */
	bool     mr_prov_key;  /* provider picks keys */
	bool     mr_endpoint;  /* MRs must be bound to the endpoint */
	bool     mr_allocated; /* only allocated memory can be registered */
	bool     need_context; /* FI_CONTEXT / FI_CONTEXT2 mode */
	size_t   inject_max;   /* payload bytes that go inject, header inline */
	bool     inject_data;  /* header in 8 bytes of CQ data instead: */
	size_t   inject_data_max; /* then inject carries up to inject_size */
	size_t   eager_max;    /* payload bytes that go eager */
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
                       const struct rmq_config *cfg);
/* Fill fi_getinfo hints for this provider (caller frees with fi_freeinfo). */
struct fi_info *rmq_caps_hints(const struct rmq_prov *row);
/* level 0 = all we can use, 1 = no write ordering, 2 = no RMA. */
struct fi_info *rmq_caps_hints_level(const struct rmq_prov *row, int level);
#define RMQ_HINT_LEVELS 3
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

/* The provider knobs of the config that apply to one provider. */
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
/*
 * The first IPv4 address of interface iface: 0, -RMQ_ENODEV (no such
 * interface) or -RMQ_EADDR (no IPv4 address); have lists the interfaces
 * (or that one's addresses) for messages.
 */
int rmq_iface_ipv4(const char *iface, struct in_addr *addr, char *have,
                   size_t havelen);
/* Append name to the ", "-separated list in buf[len] (end at *pos), once. */
void rmq_list_add(char *buf, size_t len, size_t *pos, const char *name);
/* Is addr one of iface's addresses? */
bool rmq_iface_has(const char *iface, struct in_addr addr);
/* "FILE:LINE:COL: key", "RMQ_VAR" or "key": where a config key was set. */
void rmq_cfg_where(const struct rmq_config *cfg, const char *key, char *buf,
                   size_t len);
/* Can this provider carry path?  If not, *why says why (for messages). */
bool rmq_path_can(const struct rmq_caps *c, int path, const char **why);

/* ---- path selector (select.c) ---- */

/* Where a threshold came from. */
enum rmq_src {
	RMQ_SRC_ROW = 0, /* the provider row (measured) */
	RMQ_SRC_INFO,    /* what fi_info allows */
	RMQ_SRC_FILE,    /* the YAML file */
	RMQ_SRC_ENV,     /* an RMQ_* variable */
	RMQ_SRC_TUNED,   /* a file rmq_tune wrote */
	RMQ_SRC_OPT,     /* a socket option */
	RMQ_SRC_CAPS,    /* asked-for path impossible: the next best */
	RMQ_SRC_NAMED,   /* the file's thresholds.sockets.NAME section */
};
const char *rmq_src_name(int src);

enum { RMQ_TH_INJECT, RMQ_TH_EAGER, RMQ_TH_RING, RMQ_TH_RNDV, RMQ_TH_FORCE,
       RMQ_TH_COUNT };

struct rmq_path_table {
	bool    inject;     /* inject possible at all */
	bool    ring_ok;    /* ring possible (provider and ring.slots) */
	bool    ring;       /* ... and mixed with other paths by size
	                     * (the domain orders writes with sends) */
	size_t  inject_max; /* payload <= inject_max: inject */
	size_t  eager_max;  /* payload <= eager_max: eager */
	size_t  ring_max;   /* payload <= ring_max: ring (if ring) */
	size_t  ring_cap;   /* largest payload one ring message can hold */
	int     rndv_path;  /* larger: RNDV_READ/_WRITE/_SEND or SEG */
	int     force;      /* -1, or the one path for every message */
	uint8_t src[RMQ_TH_COUNT]; /* RMQ_SRC_* of each */
};

/* pat: RMQ_CFG_PAT_* of the socket's pattern, or -1. */
/* The file's thresholds.sockets section for socket name (NULL: none);
 * call after rmq_path_table_init, before the socket options. */
void rmq_path_table_named(struct rmq_path_table *t, const struct rmq_caps *c,
                          const struct rmq_config *cfg, const char *name);
void rmq_path_table_init(struct rmq_path_table *t, const struct rmq_caps *c,
                         const struct rmq_config *cfg, int pat);
/* Keep the thresholds consistent after a change. */
void rmq_path_table_fix(struct rmq_path_table *t, const struct rmq_caps *c);
/* Returns the RMQ_PATH_* for a message of len bytes. */
int rmq_path_select(const struct rmq_path_table *t, size_t len);

/* ---- NUMA (numa.c) ---- */

/*
 * Where a domain's memory goes: the NUMA node of the NIC it uses (found in
 * the hwloc topology from fi_info's PCI address), else the node of the
 * thread that opened it; or the config's numa.node, or the node(s) of the
 * config's numa.cpuset.  Built without hwloc, every answer is "no node"
 * and memory is first-touch.
 */
struct hwloc_topology;

/*
 * One topology, loaded once per context.  A zeroed struct is a valid one
 * without a topology (every placement falls back to first touch).
 */
struct rmq_numa {
	struct hwloc_topology *topo; /* NULL: none (policy off, no hwloc,
	                              * or it failed to load: see err) */
	bool        thissystem; /* the topology is this machine's (not XML) */
	bool        can_bind;   /* ... and hwloc can bind memory areas here */
	int         nnodes;
	int         caller_cpu; /* -1: ask hwloc where the calling thread
	                         * runs; tests set a PU os index instead */
	char        err[128];   /* why there is no topology */
	atomic_uint warned;     /* a failed binding was logged */
	atomic_ulong nbound;    /* allocations bound to their node */
	atomic_ulong nfirst_touch; /* allocations left to first touch */
};

/* The choice for one domain; plain data, nothing to free. */
struct rmq_numa_place {
	int  node;         /* NUMA node os index, -1: none (first touch);
	                    * the first of nodeset when there are several */
	bool bind;         /* rmq_numa_alloc binds to nodeset */
	bool nic_in_topo;  /* the NIC was found in the topology */
	char nic_pci[16];  /* "0000:81:00.0"; "" if fi_info gives none */
	char nic_name[32]; /* "mlx5_0"; "" if unknown */
	char nodeset[64];  /* the node(s) memory goes on, hwloc list syntax:
	                    * node alone ("1"), or several for policy cpuset
	                    * ("0-1"); "": none */
	char cpuset[128];  /* the progress thread's pinning, hwloc list
	                    * syntax: node's CPUs ("2-3"), or for policy
	                    * cpuset the configured ones here; "": none */
	char why[256];     /* how node was chosen (rmq_info, logs) */
	char mem[128];     /* how memory will be placed, and why */
};

/* How one allocation was made: all rmq_numa_free needs (not the topology,
 * which may be gone: a slab can outlive its socket and context). */
enum rmq_numa_how {
	RMQ_NUMA_MEM_NONE = 0,
	RMQ_NUMA_MEM_BOUND,       /* mmap, bound by hwloc: munmap */
	RMQ_NUMA_MEM_FIRST_TOUCH, /* posix_memalign: free */
};

struct rmq_numa_mem {
	size_t len; /* as mapped (a page multiple when bound) */
	int    how; /* RMQ_NUMA_MEM_* */
};

/* Load this machine's topology (xml NULL) or an XML file (tests).  Returns
 * 0, or -errno with n usable and n->err saying why. */
int  rmq_numa_open(struct rmq_numa *n, const char *xml);
void rmq_numa_close(struct rmq_numa *n);
/*
 * Choose the node(s) for a domain opened from info under policy
 * (RMQ_CFG_NUMA_*; node_opt for RMQ_CFG_NUMA_NODE, cpuset, the
 * numa.cpuset list, for RMQ_CFG_NUMA_CPUSET: NULL or "" is none).  Always
 * fills pl; a node or CPUs the topology does not have fall back to auto
 * (pl->why says so).  n may be NULL or without a topology.  Returns 0,
 * -RMQ_EINVAL or -RMQ_ENOMEM.
 */
int  rmq_numa_choose(struct rmq_numa *n, const struct fi_info *info,
                     int policy, int node_opt, const char *cpuset,
                     struct rmq_numa_place *pl);
/*
 * len bytes, page-aligned, bound to pl->nodeset when pl->bind (else, or if
 * binding fails, first touch); *m says which, for rmq_numa_free.  NULL
 * when out of memory.
 */
void *rmq_numa_alloc(struct rmq_numa *n, const struct rmq_numa_place *pl,
                     size_t len, struct rmq_numa_mem *m);
void  rmq_numa_free(void *p, struct rmq_numa_mem *m);
/*
 * The node the pages of [p, p+len) are on, or -1 (unknown, or spread over
 * several).  Touches every page first (reads and writes back one byte), so
 * only for memory no one else is writing (tests, rmq_info).
 */
int  rmq_numa_where(struct rmq_numa *n, void *p, size_t len);

/* ---- context and domains (ctx.c) ---- */
struct rmq_dom {
	struct rmq_dom     *next;
	char                key[160];  /* prov_name/fabric/domain */
	struct fi_info     *info;
	struct fid_fabric  *fabric;
	struct fid_domain  *domain;
	struct rmq_caps     caps;
	struct rmq_numa_place place; /* where its sockets' memory goes */
	int                 refs;
};

struct rmq_ctx {
	pthread_mutex_t   lock;      /* domains, socket count, numa loading */
	struct rmq_config cfg;
	struct rmq_dom   *doms;
	int               nsockets;
	struct rmq_numa   numa;      /* loaded at the first domain */
	bool              numa_tried;
	/* progress: thread (thread.c); fixed at rmq_ctx_new */
	bool              thread;    /* sockets lock their API calls */
	bool              pinned;    /* thread pinned near the first domain */
	pthread_t         thr;
	atomic_bool       stop;
	pthread_mutex_t   socks_lock; /* the list below */
	struct rmq_socket *socks;
};

/* Pin thread t to pl's CPUs (the progress thread); 0 or -error. */
int  rmq_numa_bind_thread(struct rmq_numa *n, const struct rmq_numa_place *pl,
                          pthread_t t);

/* The progress thread: start at rmq_ctx_new, stop before destroying. */
int  rmq_thread_start(rmq_ctx *ctx);
void rmq_thread_stop(rmq_ctx *ctx);
void rmq_thread_add(rmq_ctx *ctx, struct rmq_socket *s);
void rmq_thread_remove(rmq_ctx *ctx, struct rmq_socket *s);

/* Open (or share) a domain for a provider and source address. */
/* ordered: writes ordered with sends (the ring mixed with other paths). */
int rmq_dom_get(rmq_ctx *ctx, const struct rmq_prov *prov, const char *node,
                bool ordered, struct rmq_dom **domp, struct fi_info **infop);
void rmq_dom_put(rmq_ctx *ctx, struct rmq_dom *dom);

/* ---- operations handed to libfabric as contexts ---- */
enum rmq_op_kind {
	RMQ_OP_SLAB = 1, /* a posted multi-recv slab */
	RMQ_OP_TX,       /* an eager send from a tx slot */
	RMQ_OP_READ,     /* one chunk of a rendezvous read */
	RMQ_OP_TSEND,    /* rndv_send: the payload, sender side */
	RMQ_OP_WRITE,    /* rndv_write: one chunk, sender side */
};

struct rmq_op {
	struct fi_context2 fctx; /* first: what libfabric sees */
	int                kind;
};

/* A registered multi-recv slab. */
struct rmq_slab {
	struct rmq_op    op;
	struct rmq_slab *next;   /* on the socket's list of all slabs */
	struct rmq_socket *sock; /* the socket that made it (for reposting) */
	uint8_t         *buf;
	size_t           size;
	struct rmq_numa_mem mem; /* how buf was allocated: freed without the
	                          * socket, which may be gone */
	struct fid_mr   *mr;
	void            *desc;
	/*
	 * Queued messages and rmq_msg in it, plus one held by its socket
	 * until the socket closes: whoever drops the last frees it.  Atomic:
	 * rmq_msg_free may run in any thread (and beside a progress thread).
	 */
	atomic_int       refs;
	bool             posted;
};

/* A registered eager send buffer. */
struct rmq_tx {
	struct rmq_op  op;
	struct rmq_tx *next_free;
	uint8_t       *buf;
	struct rmq_peer *peer;
};

struct rmq_rndv_tx;

/* rndv_write: one fi_write / fi_writedata chunk. */
struct rmq_write_op {
	struct rmq_op       op;
	struct rmq_rndv_tx *r;
};

/*
 * A rendezvous send waiting for FIN (rndv_read), its tsend (rndv_send) or
 * its writes (rndv_write).
 */
struct rmq_rndv_tx {
	struct rmq_op       op;    /* rndv_send: the fi_tsend's context */
	struct rmq_rndv_tx *next;
	const void         *src;
	size_t              len;
	void               *desc;
	bool                by_send; /* rndv_send */
	bool                by_write; /* rndv_write */
	bool                cts;     /* CTS/GRANT came: post the tsend/writes */
	bool                posted;  /* tsend posted */
	bool                tsend_out; /* posted, completion not yet in */
	struct rmq_peer    *peer;
	uint32_t            cookie;
	struct fid_mr      *mr;
	void               *owned; /* copy we free at the end, or NULL */
	rmq_msg            *msg;   /* message we free at the end, or NULL */
	bool                done;
	bool                waited; /* a blocked rmq_send frees it */
	int                 status; /* 0 or -errno */
	/* rndv_write: the receiver's grant and our chunks */
	uint64_t            raddr, rkey;
	uint32_t            grant_id;
	struct rmq_write_op *wops;
	size_t              nw, wnext;  /* chunks, next to post */
	size_t              wpending;   /* posted, not completed */
	int                 wstatus;
};

/* rndv_write, receiver side: a buffer granted, waiting for the writes. */
struct rmq_grant {
	struct rmq_grant *next;
	struct rmq_peer  *peer;
	uint32_t          id;
	bool              done;
	int               status;
};

/* A message received and not yet delivered. */
struct rmq_rxent {
	struct rmq_rxent *next;
	struct rmq_peer  *peer;
	uint32_t          msgid;
	int               path;     /* RMQ_PATH_* */
	size_t            len;
	uint8_t          *data;     /* eager: in slab or heap */
	struct rmq_slab  *slab;     /* reference held, or NULL */
	void             *heap;     /* pulled rendezvous or copied eager */
	struct rmq_rts    rts;      /* rendezvous: where to read from */
	uint64_t          ring_end; /* ring: slots taken through this one */
	bool              pulling;  /* background pull in progress */
	int               pull_status;
};

/* A rendezvous read in progress (one per delivery). */
struct rmq_read {
	size_t            nchunks;
	size_t            pending;
	int               status;
	bool              orphaned; /* failed by a context-less error */
	struct fid_mr    *mr;       /* local registration (FI_MR_LOCAL) */
};

struct rmq_read_op {
	struct rmq_op    op;
	struct rmq_read *rd;
};

enum rmq_peer_state {
	RMQ_PEER_LIVE = 1,
	RMQ_PEER_CLOSING, /* said BYE: gone once its messages are in */
	RMQ_PEER_DEAD,
};

struct rmq_peer {
	uint32_t          id;        /* our id for it: slot | gen << 16 */
	uint32_t          rid;       /* its id for us: goes in our headers */
	int               fd;        /* control channel, -1 once closed */
	fi_addr_t         fiaddr;
	int               state;
	int64_t           credits;   /* messages we may still send it */
	uint32_t          owed;      /* messages consumed, not yet granted */
	uint32_t          rcvhwm;    /* its grant at handshake */
	uint64_t          maxmsg;    /* its limit */
	size_t            eager_max; /* its slabs' limit per message */
	uint64_t          sent;      /* DATA, RTS and FIN sent to it */
	uint64_t          recvd;     /* DATA, RTS and FIN received from it */
	uint64_t          bye_count; /* its BYE: messages it sent us */
	bool              bye_acked; /* it confirmed all ours arrived */
	bool              bye_sent;  /* we said BYE */
	uint8_t           cbuf[32];  /* partial control frame */
	size_t            chave;
	struct rmq_rxent *qhead, *qtail; /* queued messages from it */
	size_t            qlen;
	int               pending;   /* ops (tx, rndv) referring to it */
	char              name[160]; /* for logs: its control address */
	int64_t           closing_deadline; /* CLOSING: give up waiting */

	/* Our ring for its writes (NULL: none). */
	uint8_t          *ring;
	struct rmq_numa_mem ring_mem;
	struct fid_mr    *ring_mr;
	uint32_t          ring_slots;
	size_t            ring_slot;
	uint32_t          ring_head;  /* slot the next message starts at */
	uint64_t          ring_taken; /* slots filled so far (with padding) */
	uint64_t          ring_freed; /* slots the application let go */
	uint32_t          ring_owed;  /* freed, not yet told */
	/* Its ring, which we write (rring_slots 0: none). */
	uint64_t          rring_addr, rring_key;
	uint32_t          rring_slots;
	size_t            rring_slot;
	uint32_t          rring_tail; /* next slot we write */
	int64_t           rring_free; /* slots we may fill */
	/* seg: the message being reassembled from it. */
	struct rmq_rxent *seg;
	size_t            seg_have;
	uint64_t          seg_skip;   /* bytes of a dropped message to eat */
};

struct rmq_listener {
	struct rmq_listener *next;
	int                  fd;
	char                 endpoint[256];
};

/* An accepted control connection whose HELLO has not arrived yet. */
struct rmq_pending {
	struct rmq_pending *next;
	int                 fd;
	int64_t             deadline;
	size_t              have;
	uint8_t             buf[RMQ_CTRL_HDR_SIZE + RMQ_CTRL_BODY_MAX];
	char                name[64];
};

struct rmq_pattern_ops;

struct rmq_socket {
	rmq_ctx                     *ctx;
	/* Thread mode: held by every API call and by the progress thread
	 * (which only tries it: it never waits for the application). */
	pthread_mutex_t              mu;
	struct rmq_socket           *ctx_next; /* ctx->socks */
	const struct rmq_pattern_ops *ops;
	void                        *pstate;  /* pattern's private state */
	int                          type;

	/* options */
	int      sndtimeo, rcvtimeo, linger, connect_ms, handshake_ms;
	int      sndhwm, rcvhwm, spin_us;
	int64_t  maxmsg;
	size_t   inject_max_opt, eager_max_opt, ring_max_opt; /* 0: table */
	bool     ring_max_set;   /* RMQ_RING_MAX given (0 = no ring) */
	int      rndv_path_opt;  /* 0: from the table */
	int      force_opt;      /* RMQ_PATH: -2 unset, -1 by size, path */
	char     name[RMQ_CFG_NAME_MAX]; /* RMQ_NAME, "" = none */

	/* fabric objects, created at the first bind/connect */
	const struct rmq_prov *prov;
	struct rmq_dom    *dom;
	struct fi_info    *info;
	struct fid_ep     *ep;
	struct fid_cq     *cq;
	struct fid_av     *av;
	int                cq_fd;      /* -1: no wait fd */
	uint8_t            fabaddr[RMQ_ADDR_MAX];
	size_t             fabaddr_len;
	struct rmq_path_table paths;
	size_t             min_multi;  /* FI_OPT_MIN_MULTI_RECV */

	struct rmq_slab   *slabs;      /* all slabs */
	int                nposted;
	struct rmq_tx     *txs;        /* array of tx slots */
	struct fid_mr     *tx_mr;
	void              *tx_desc;
	uint8_t           *tx_mem;
	struct rmq_numa_mem tx_numa;   /* how tx_mem was allocated */
	size_t             tx_slot;    /* bytes per slot */
	int                ntx;
	struct rmq_tx     *tx_free;
	int                inflight;   /* tx slots + rndv sends busy */

	struct rmq_rndv_tx *rndv;      /* rendezvous sends waiting FIN */
	uint32_t           next_cookie;
	uint32_t           next_msgid;

	struct rmq_peer  **peers;      /* slot array */
	int                npeers;     /* slots in use (live or draining) */
	int                peers_cap;
	uint16_t          *peer_gen;
	int                rr;         /* round-robin cursor (send) */
	int                rr_rx;      /* fair-queue cursor (recv) */
	int                nlive;
	bool               lost_peer;  /* a peer died: report once */

	struct rmq_listener *listeners;
	struct rmq_pending  *pendings;
	int64_t            next_ctrl_poll;

	size_t             nqueued;    /* messages queued on all peers */
	struct rmq_rxent  *rx_free;    /* spare entries: none malloc'd per
	                                * message in the steady state */
	int                nrx_free;
	struct rmq_read   *cur_read;   /* the rendezvous fetch under way */
	unsigned           ticks;      /* progress calls, for cheap timers */
	int                cts_pending; /* rndv_send/_write: posts to make */
	struct rmq_grant  *grants;     /* rndv_write: buffers granted */
	uint32_t           next_grant;
	struct rmq_stats   stats;
	char               last_endpoint[256];
};

/* ---- endpoint (ep.c) ---- */
int  rmq_ep_open(struct rmq_socket *s, const struct rmq_prov *prov,
                 const char *node);
void rmq_ep_close(struct rmq_socket *s);
/*
 * Will a socket mix the ring with other paths by size?  Then its domain
 * must order writes with sends, asked for only then (caps.c says why).
 */
bool rmq_wants_ring(const struct rmq_config *cfg, const struct rmq_prov *prov,
                    const char *name,
                    int pat, size_t eager_opt, bool ring_set,
                    size_t ring_opt);
/* Build the socket's path table (config, pattern, options); checks. */
int  rmq_sock_paths(struct rmq_socket *s);
int  rmq_mr_reg(struct rmq_socket *s, void *buf, size_t len, uint64_t access,
                struct fid_mr **mrp, void **descp, uint64_t *keyp);
void rmq_slab_unref(struct rmq_slab *sl);
int  rmq_slabs_replenish(struct rmq_socket *s);

/* ---- control channel (ctrl.c) ---- */
struct rmq_addr {
	const struct rmq_prov *prov;
	bool   unix_name;   /* shm://NAME: abstract Unix socket */
	char   host[128];
	char   port[16];
	char   name[96];
};

int  rmq_addr_parse(rmq_ctx *ctx, const char *endpoint, struct rmq_addr *a);
int  rmq_ctrl_listen(struct rmq_socket *s, const struct rmq_addr *a);
int  rmq_ctrl_connect(struct rmq_socket *s, const struct rmq_addr *a);
/* Accept, read handshakes, watch peers' channels (timeout 0 = poll). */
int  rmq_ctrl_poll(struct rmq_socket *s, int timeout_ms);
void rmq_ctrl_bye(struct rmq_socket *s, struct rmq_peer *p);
/* A CLOSING peer whose messages are all in: acknowledge and let it go. */
void rmq_ctrl_closing(struct rmq_socket *s, struct rmq_peer *p,
                      int64_t now);

/* ---- peers (peer.c) ---- */
struct rmq_peer *rmq_peer_new(struct rmq_socket *s);
struct rmq_peer *rmq_peer_lookup(struct rmq_socket *s, uint32_t id);
/* Mark dead: fail its pending operations, keep delivered data. */
void rmq_peer_fail(struct rmq_socket *s, struct rmq_peer *p, int err,
                   const char *why);
/* Free the slot if it is dead and has nothing left. */
void rmq_peer_reap(struct rmq_socket *s, struct rmq_peer *p);
void rmq_peer_destroy(struct rmq_socket *s, struct rmq_peer *p);
bool rmq_peer_usable(const struct rmq_peer *p);
/* Keep p allocated across progress calls that may kill it. */
void rmq_peer_hold(struct rmq_peer *p);
void rmq_peer_release(struct rmq_socket *s, struct rmq_peer *p);

/* ---- progress (progress.c) ---- */
/* Drain the CQ and poll the control channels; returns events handled. */
int  rmq_progress(struct rmq_socket *s);
/* Drain the CQ only. */
int  rmq_progress_cq(struct rmq_socket *s);

/*
 * A wait with a timeout.  The clock is read only once waiting really
 * starts (most sends and receives never wait), then every 64 spins.
 */
struct rmq_waiter {
	int64_t  start;      /* 0 until the first idle round */
	int64_t  deadline;
	int      timeout_ms; /* -1 forever */
	int      backoff_us;
	unsigned spins;
};
void rmq_waiter_init(struct rmq_waiter *w, int timeout_ms);
/*
 * Called when a progress pass found nothing: spin, then sleep.  Returns
 * -RMQ_EAGAIN once the deadline passed, else 0.
 */
int rmq_wait_idle(struct rmq_socket *s, struct rmq_waiter *w);

/* ---- the core send/receive machinery (xfer.c) ---- */
struct rmq_out {
	const void *buf;
	size_t      len;
	rmq_msg    *msg; /* non-NULL: zero-copy, ownership passes on success */
};

/* Send one message to one peer.  Returns 0 or -error. */
int rmq_xfer_send(struct rmq_socket *s, struct rmq_peer *p,
                  const struct rmq_out *o, uint32_t msgid, int flags);
/* Send a FIN or CREDIT control message. */
int rmq_xfer_ctl(struct rmq_socket *s, struct rmq_peer *p, int type,
                 uint32_t msgid, uint32_t status);
/* Handle one received fabric message (from the progress engine). */
/* data: the header as remote CQ data (a big inject), else NULL. */
void rmq_xfer_rx(struct rmq_socket *s, struct rmq_slab *sl, uint8_t *buf,
                 size_t len, const uint64_t *data);
/* Take the next queued message of p off its queue. */
struct rmq_rxent *rmq_rxq_pop(struct rmq_socket *s, struct rmq_peer *p);
/*
 * Deliver e: copy/read its payload into buf (cap bytes), or into a new
 * rmq_msg (msgp != NULL).  Frees e.  Returns the full size or -error.
 */
ssize_t rmq_xfer_deliver(struct rmq_socket *s, struct rmq_rxent *e,
                         void *buf, size_t cap, rmq_msg **msgp);
/* Discard e (REQ: stale reply).  Frees e; tells a rendezvous sender. */
void rmq_xfer_discard(struct rmq_socket *s, struct rmq_rxent *e);
/* Pull queued rendezvous messages into heap buffers (avoids deadlock). */
void rmq_xfer_pull_pending(struct rmq_socket *s);
void rmq_rxent_free(struct rmq_socket *s, struct rmq_rxent *e);
void rmq_rxent_cache_drop(struct rmq_socket *s);
void rmq_rndv_complete(struct rmq_socket *s, struct rmq_rndv_tx *r,
                       int status);
/* rndv_send: the provider finished (or failed) our tsend. */
void rmq_rndv_tsend_done(struct rmq_socket *s, struct rmq_rndv_tx *r,
                         int err);
/* rndv_send: post the tsends whose CTS has come. */
void rmq_xfer_post_tsends(struct rmq_socket *s);

/* Shared by the paths (xfer.c, ring.c). */
bool rmq_post_again(struct rmq_socket *s, struct rmq_peer *p,
                    struct rmq_waiter *w, ssize_t *rc, const char *what);
void rmq_hdr_fill(struct rmq_hdr *h, struct rmq_peer *p, int type,
                  uint32_t msgid, uint32_t len);
int  rmq_tx_get(struct rmq_socket *s, struct rmq_peer *p,
                struct rmq_waiter *w, struct rmq_tx **txp);
void rmq_tx_put(struct rmq_socket *s, struct rmq_tx *tx);
struct rmq_rxent *rmq_rxent_new(struct rmq_socket *s);
void rmq_rxq_push(struct rmq_socket *s, struct rmq_peer *p,
                  struct rmq_rxent *e);
/* The application took (or we dropped) a message of p: a credit back. */
void rmq_consumed(struct rmq_socket *s, struct rmq_peer *p);
/* ring: send one message (tx slot, writedata); counts like eager. */
int  rmq_ring_send(struct rmq_socket *s, struct rmq_peer *p,
                   struct rmq_waiter *w, const void *src, size_t len,
                   uint32_t msgid);
/* ring: slots of p up to end are free again (in order). */
void rmq_ring_release(struct rmq_socket *s, struct rmq_peer *p,
                      uint64_t end);
/* ring: our ring for peer p (none if the socket has no ring). */
int  rmq_ring_rx_init(struct rmq_socket *s, struct rmq_peer *p);
void rmq_ring_rx_free(struct rmq_peer *p);
/* A remote CQ data completion (ring message or rndv_write done). */
void rmq_xfer_imm(struct rmq_socket *s, uint64_t data);
/* rndv_write: one of our chunks completed. */
void rmq_xfer_write_done(struct rmq_socket *s, struct rmq_write_op *wo,
                         int err);
/* Strict mode: a local buffer posted without a descriptor is a bug. */
int  rmq_strict_desc(struct rmq_socket *s, const void *desc, const char *op);

/* ---- patterns (patterns/) ---- */
struct rmq_pattern_ops {
	const char *name;      /* "req" */
	const char *peer_name; /* "rep" */
	uint16_t    wire_id;   /* see pattern.h */
	int         cfg_pat;   /* RMQ_CFG_PAT_*: its thresholds section */
	int         max_peers; /* 0: any number */
	bool        report_lost; /* a dead peer fails the next operation */
	size_t      state_size; /* the core allocates and zeroes it */
	/* Send: 0 or -error; on success a msg in o is owned by the engine. */
	int (*send)(void *st, struct rmq_socket *s, const struct rmq_out *o,
	            int flags);
	/* Receive: take a message off a peer queue, return it in *e. */
	int (*recv)(void *st, struct rmq_socket *s, struct rmq_rxent **e,
	            int flags);
	/* A peer died or left (may be NULL). */
	void (*peer_gone)(void *st, struct rmq_socket *s, struct rmq_peer *p);
};

const struct rmq_pattern_ops *rmq_pattern_find(int type);
bool rmq_pattern_compatible(uint16_t ours, uint16_t theirs);

/* Helpers the patterns use (sock.c). */
/* Wait for a usable peer (round-robin from s->rr); -ENOTCONN if none can
 * ever come (no listener, never connected). */
int rmq_sock_next_peer(struct rmq_socket *s, int flags, int timeout_ms,
                       struct rmq_peer **pp);
/* Fair-queue: next peer with a queued message (round-robin). */
struct rmq_peer *rmq_sock_fair_peer(struct rmq_socket *s);
/*
 * Block until cond(arg) says 1 (done) or <0 (that error), or the timeout
 * passes (-RMQ_EAGAIN); progress meanwhile.
 */
int rmq_sock_wait(struct rmq_socket *s, int flags, int timeout_ms,
                  int (*cond)(struct rmq_socket *, void *), void *arg);
/* Fair-queued receive of the next message from any peer. */
int rmq_sock_recv_any(struct rmq_socket *s, int flags, struct rmq_rxent **e);

/* ---- messages (msg.c) ---- */
enum rmq_msg_kind {
	RMQ_MSGK_HEAP = 1, /* page-aligned heap, ours */
	RMQ_MSGK_SLAB,     /* points into a receive slab */
};

struct rmq_msg {
	int              kind;
	uint8_t         *data;
	size_t           size;
	void            *base;   /* heap allocation */
	struct rmq_slab *slab;   /* RMQ_MSGK_SLAB */
};

rmq_msg *rmq_msg_new_heap(size_t size);
rmq_msg *rmq_msg_new_slab(struct rmq_slab *sl, uint8_t *data, size_t size);

#endif /* RMQ_INT_H */
