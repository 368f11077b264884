/*
 * tcp: the tcp provider under the ofi_rxm utility (RDM over MSG).
 *
 * Measured here: inject_size 64, a CQ wait fd, FI_SOCKADDR_IN addresses, RMA
 * emulated over the TCP stream: a read completes only while the target
 * progresses, and a bad RMA reports success at the initiator and kills the
 * connection.  The first send to a new peer can return -FI_EAGAIN until both
 * sides have progressed the connection.
 *
 * Measured here (one-way p50): eager 7.3/22.1/31.8 us at 8/16/64 KiB,
 * rndv_read 18.3/19.8/27.0, rndv_send 16.3/17.7/40.6; at 1 MiB read 127,
 * send 135 (fi_pingpong: 158-166).  So: eager up to 8 KiB, rndv_read
 * above (rndv_send wins only near 16 KiB).
 */
#include "rmq.h"
#include "prov.h"

const struct rmq_prov rmq_prov_tcp = {
	.name         = "tcp",
	.fi_prov      = "tcp;ofi_rxm",
	.flags        = RMQ_PROV_RMA_EMULATED | RMQ_PROV_TARGET_PROG |
	                RMQ_PROV_ADDR_SOCKADDR,
	.inject_max   = 0,        /* fi_info: 64 */
	.eager_max    = 8192,     /* measured: rendezvous wins above */
	.ring_max     = 0,        /* measured: no gain (rmq_paths(7)) */
	.rma_chunk    = 0,
	.cq_data_size = 8,
	.rndv_path    = RMQ_PATH_RNDV_READ,
	.notes        = "RMA emulated: needs target progress",
};
