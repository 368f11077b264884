/*
 * efa: AWS Elastic Fabric Adapter, RDM (SRD underneath).
 *
 * From fi_efa(7), libfabric 1.17; NOT run here (no EFA device):
 * FI_MR_LOCAL, FI_MR_ALLOCATED, FI_MR_PROV_KEY, FI_MR_VIRT_ADDR; the RDM
 * endpoint's inject_size is ~4 KiB but the device inlines only 32 bytes,
 * so the row caps inject there; cq_data_size 8 in 1.17's RxR, 4 from 1.18
 * (efa_rdm_cq.h); RDMA read only
 * on devices that have it (else emulated by the provider); no CQ wait fd
 * before libfabric 2.5; messages may be delivered out of order unless
 * FI_ORDER_SAS is requested.  Addresses are opaque (FI_ADDR_EFA).
 */
#include "rmq.h"
#include "prov.h"

const struct rmq_prov rmq_prov_efa = {
	.name         = "efa",
	.fi_prov      = "efa",
	.flags        = RMQ_PROV_NO_WAIT_FD | RMQ_PROV_HW |
	                RMQ_PROV_UNORDERED_RMA,
	.inject_max   = 32,
	.eager_max    = 8192,     /* one MTU-sized packet */
	.ring_max     = 0,        /* SRD reorders writes: no ring at all */
	.rma_chunk    = 1u << 30,
	.cq_data_size = 4,
	.rndv         = "rndv_read",
	.fanout_log   = 4, /* NOT measured (no NIC) */
	.notes        = "not run on hardware here (no EFA device)",
	.domain_key   = "efa.domain",
	.domain_help  = "efa: the device, as fi_info names its domain (e.g. "
	                "rdmap0s6-rdm); empty = the provider's first",
	.measured_on  = "none (written from the 1.17 and 1.18 sources)",
};
