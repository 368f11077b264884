/*
 * efa: AWS Elastic Fabric Adapter, RDM (SRD underneath).
 *
 * From fi_efa(7), libfabric 1.17; NOT run here (no EFA device):
 * FI_MR_LOCAL, FI_MR_ALLOCATED, FI_MR_PROV_KEY, FI_MR_VIRT_ADDR; inject
 * 32 bytes; 4 bytes of immediate data where the device reports them
 * (cq_data_size 8 in the RDM endpoint from 1.18, emulated); RDMA read only
 * on devices that have it (else emulated by the provider); no CQ wait fd
 * before libfabric 2.5; messages may be delivered out of order unless
 * FI_ORDER_SAS is requested.  Addresses are opaque (FI_ADDR_EFA).
 */
#include "prov.h"

const struct rmq_prov rmq_prov_efa = {
	.name         = "efa",
	.fi_prov      = "efa",
	.flags        = RMQ_PROV_NO_WAIT_FD | RMQ_PROV_HW,
	.inject_max   = 32,
	.eager_max    = 8192,     /* one MTU-sized packet */
	.rma_chunk    = 1u << 30,
	.cq_data_size = 4,
	.notes        = "not run on hardware here (no EFA device)",
};
