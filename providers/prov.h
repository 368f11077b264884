/*
 * Provider rows.  One const row per libfabric provider librmq knows: what
 * to ask fi_getinfo for, quirks that fi_info does not tell, and the path
 * thresholds measured for it.  Code tests the flags, never the names
 * (Mercury's NA_OFI_PROV_TYPES is the model).
 */
#ifndef RMQ_PROV_H
#define RMQ_PROV_H

#include <stddef.h>
#include <stdint.h>

/* Quirk and property flags. */
#define RMQ_PROV_LOCAL_ONLY    (1u << 0) /* same host only (shm) */
#define RMQ_PROV_RMA_EMULATED  (1u << 1) /* RMA done in software */
#define RMQ_PROV_TARGET_PROG   (1u << 2) /* RMA lands only when the target
                                          * progresses (tcp;ofi_rxm) */
#define RMQ_PROV_NO_WAIT_FD    (1u << 3) /* CQ has no wait fd: spin/sleep */
#define RMQ_PROV_ADDR_SOCKADDR (1u << 4) /* fabric address is a sockaddr
                                          * we may patch (INADDR_ANY) */
#define RMQ_PROV_UNSAFE_KEYS   (1u << 5) /* RMA not protected by keys
                                          * (shm 1.17, measured) */
#define RMQ_PROV_HW            (1u << 6) /* needs an RDMA NIC */
#define RMQ_PROV_UNORDERED_RMA (1u << 7) /* writes may land out of order:
                                          * no ring even when forced
                                          * (efa's SRD) */
#define RMQ_PROV_IFACE_DOMAIN  (1u << 8) /* it names its domains after
                                          * network interfaces (tcp,
                                          * sockets: "eth0", "lo") */
#define RMQ_PROV_NO_WILDCARD   (1u << 9) /* its endpoint must not be
                                          * opened on 0.0.0.0 or ::
                                          * (tcp;ofi_rxm: see addr.c) */
#define RMQ_PROV_ONE_RECV      (1u << 10) /* a posted receive takes one
                                          * message: no FI_MULTI_RECV
                                          * asked (ep.c) */
#define RMQ_PROV_TX_LOCAL_DONE (1u << 11) /* a send or write of up to
                                          * 64 KiB completes without
                                          * the peer's help, the peer
                                          * stopped: sends in place
                                          * (tx.c) may wait for it */

struct rmq_prov {
	const char *name;     /* librmq's name: scheme and config value */
	const char *fi_prov;  /* fi_info prov_name, layering spelled out */
	uint32_t    flags;    /* RMQ_PROV_* */
	size_t      inject_max; /* cap on inject payload; 0: fi_info's */
	size_t      eager_max;  /* above this: ring or rendezvous (measured) */
	size_t      ring_max;   /* above eager_max up to this: ring (0: none) */
	size_t      rma_chunk;  /* largest single fi_read we post */
	int         cq_data_size; /* bytes of immediate the HW carries */
	int         rndv_path;  /* RMQ_PATH_RNDV_READ or RMQ_PATH_RNDV_SEND */
	int         fanout_log; /* PUB: subscribers at which they read its
	                         * log (rmq_pubsub(7)); 0: never */
	int         max_peers;  /* peers one endpoint can address (its AV
	                         * holds no more); 0: no limit known */
	const char *notes;    /* printed by rmq_info and in rmq(7) */
	/* Its knobs: the config keys (schema.c) that name the network
	 * interface and the device (fi_info's domain) it uses; NULL: none. */
	const char *iface_key;  /* "tcp.interface" */
	const char *domain_key; /* "verbs.domain" */
	/* Provider variables librmq sets (NAME, VALUE, NAME, VALUE, ...,
	 * NULL) unless the environment has them, before libfabric's first
	 * call in the process reads them. */
	const char *const *env_defaults;
};

extern const struct rmq_prov rmq_prov_shm;
extern const struct rmq_prov rmq_prov_tcp;
extern const struct rmq_prov rmq_prov_sockets;
extern const struct rmq_prov rmq_prov_verbs;
extern const struct rmq_prov rmq_prov_efa;

/* Registry, in order of preference for provider "auto" (fabric://). */
const struct rmq_prov *rmq_prov_by_name(const char *name);
const struct rmq_prov *const *rmq_prov_all(void);

#endif /* RMQ_PROV_H */
