/*
 * tcp: the tcp provider under the ofi_rxm utility (RDM over MSG).
 *
 * Measured here: inject_size 64, a CQ wait fd, FI_SOCKADDR_IN addresses, RMA
 * emulated over the TCP stream: a read completes only while the target
 * progresses, and a bad RMA reports success at the initiator and kills the
 * connection.  The first send to a new peer can return -FI_EAGAIN until both
 * sides have progressed the connection.
 */
#include "rmq.h"
#include "prov.h"

const struct rmq_prov rmq_prov_tcp = {
	.name         = "tcp",
	.fi_prov      = "tcp;ofi_rxm",
	.flags        = RMQ_PROV_RMA_EMULATED | RMQ_PROV_TARGET_PROG |
	                RMQ_PROV_ADDR_SOCKADDR,
	.inject_max   = 0,        /* fi_info: 64 */
	.eager_max    = 65536,    /* perf/compare.sh, see rmq(7) */
	.rma_chunk    = 0,
	.cq_data_size = 8,
	.rndv_path    = RMQ_PATH_RNDV_SEND,
	.notes        = "RMA emulated: needs target progress",
};
