/*
 * verbs: InfiniBand / RoCE / iWARP through ofi_rxm (RDM over verbs RC).
 *
 * From fi_verbs(7) and fi_rxm(7), libfabric 1.17; NOT run here (no RDMA
 * NIC): FI_MR_LOCAL, FI_MR_VIRT_ADDR, FI_MR_ALLOCATED and FI_MR_PROV_KEY;
 * 4 bytes of immediate data; native RDMA read; a CQ wait fd.  Unit tests feed
 * recorded fi_info values through capability negotiation.
 */
#include "rmq.h"
#include "prov.h"

const struct rmq_prov rmq_prov_verbs = {
	.name         = "verbs",
	.fi_prov      = "verbs;ofi_rxm",
	.flags        = RMQ_PROV_ADDR_SOCKADDR | RMQ_PROV_HW,
	.inject_max   = 0,        /* rxm over verbs: fi_info's */
	.eager_max    = 16384,    /* rxm's eager buffer size default */
	.ring_max     = 65536,    /* NOT measured (no NIC) */
	.rma_chunk    = 1u << 30, /* max_msg_size of RC is 1 GiB */
	.cq_data_size = 4,
	.rndv         = "rndv_read",
	.fanout_log   = 4, /* NOT measured (no NIC) */
	.notes        = "not run on hardware here (no RDMA NIC)",
	.iface_key    = "verbs.interface",
	.iface_help   = "verbs: the IP interface (e.g. ib0) whose device is "
	                "used; empty = any",
	.domain_key   = "verbs.domain",
	.domain_help  = "verbs: the device, as fi_info names its domain (e.g. "
	                "mlx5_0); empty = the provider's first",
	.measured_on  = "none (written from the 1.17 and 1.18 sources)",
};
