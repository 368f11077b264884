/*
 * NUMA placement (numa.c): where a domain's memory goes and where the
 * progress thread runs.
 */
#ifndef RMQ_NUMA_H
#define RMQ_NUMA_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include <rdma/fabric.h>


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

/* Pin thread t to pl's CPUs (the progress thread); 0 or -error. */
int  rmq_numa_bind_thread(struct rmq_numa *n, const struct rmq_numa_place *pl,
                          pthread_t t);

#endif /* RMQ_NUMA_H */
