/*
 * sockets: libfabric's reference provider, RDM natively.
 *
 * Measured here: inject_size 255, auto progress from a provider thread
 * (set FI_SOCKETS_PE_WAITTIME=0 or latency is far worse on two cores),
 * FI_SOCKADDR_IN addresses, RMA emulated.
 */
#include "rmq.h"
#include "prov.h"

const struct rmq_prov rmq_prov_sockets = {
	.name         = "sockets",
	.fi_prov      = "sockets",
	.flags        = RMQ_PROV_RMA_EMULATED | RMQ_PROV_ADDR_SOCKADDR |
	                RMQ_PROV_IFACE_DOMAIN,
	.inject_max   = 0,        /* fi_info: 255 */
	.eager_max    = 65536,    /* measured: from 512 B no path is faster */
	.ring_max     = 0,        /* measured: no gain (rmq_paths(7)) */
	.rma_chunk    = 0,
	.cq_data_size = 8,
	.rndv         = "rndv_send",
	.fanout_log   = 0, /* measured (rmq_fanout): its reads are
	                           * far slower than push (INTERNALS §17) */
	.notes        = "reference provider; set FI_SOCKETS_PE_WAITTIME=0",
	.iface_key    = "sockets.interface",
	.iface_help   = "sockets: the network interface fabric traffic uses; "
	                "empty = the one the address routes by",
	.measured_on  = "1.17",
};
