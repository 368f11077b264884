/*
 * NUMA placement: find the NIC a fabric domain uses in the hwloc topology,
 * choose the node its sockets' memory goes on, allocate there, and say why
 * (rmq_info prints it).
 *
 * The NIC comes from fi_info->nic's PCI address.  Providers that leave nic
 * NULL (tcp;ofi_rxm in 1.17, among others) still name their device in the
 * domain name ("eth0", "mlx5_0"), which hwloc knows as an OS device, so
 * that is tried second.  shm and loopback have no NIC: the node of the
 * thread that opens the domain.
 *
 * Memory is mmap'd and bound with hwloc_set_area_membind() rather than
 * taken from hwloc_alloc_membind(), whose memory must go back through
 * hwloc_free() with the topology: a slab can outlive its socket and even
 * its context (an rmq_msg holds it), so freeing must need nothing but the
 * pointer and struct rmq_numa_mem.  The binding is not strict: on Linux
 * that makes the node preferred, so a full node spills over to another
 * instead of waking the OOM killer as a strict bind would -- placement is
 * an optimisation, not a promise.
 *
 * Policy cpuset (numa.cpuset) names CPUs instead: the progress thread is
 * pinned to those of them this machine has, and memory goes on their
 * node(s).  Several nodes are bound as one set, with the same non-strict
 * bind; hwloc releases that predate Linux's MPOL_PREFERRED_MANY ask for
 * MPOL_PREFERRED, which prefers only the first node of the set.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rmq_config.h"
#include "numa.h"
#include "rmq.h"
#include "util.h"

#if RMQ_HAVE_HWLOC
#include <hwloc.h>
#if HWLOC_API_VERSION < 0x00020000
#error "librmq needs hwloc 2.x (I/O filters, memory-child NUMA nodes)"
#endif
#endif

static size_t
page_size(void)
{
	long ps = sysconf(_SC_PAGESIZE);

	return ps > 0 ? (size_t) ps : 4096;
}

static void
place_init(struct rmq_numa_place *pl)
{
	memset(pl, 0, sizeof(*pl));
	pl->node = -1;
}

static void *
alloc_first_touch(struct rmq_numa *n, size_t len, struct rmq_numa_mem *m)
{
	void *p = NULL;

	if (posix_memalign(&p, page_size(), len > 0 ? len : 1) != 0)
		return NULL;
	m->len = len;
	m->how = RMQ_NUMA_MEM_FIRST_TOUCH;
	if (n != NULL)
		atomic_fetch_add(&n->nfirst_touch, 1);
	return p;
}

void
rmq_numa_free(void *p, struct rmq_numa_mem *m)
{
	if (p == NULL)
		return;
	switch (m->how) {
	case RMQ_NUMA_MEM_BOUND:
		if (munmap(p, m->len) != 0)
			rmq_log(RMQ_LOG_WARN, "munmap(%zu bytes): %s", m->len,
			        strerror(errno));
		break;
	case RMQ_NUMA_MEM_FIRST_TOUCH:
		free(p);
		break;
	default:
		/* Not from rmq_numa_alloc: leaking beats freeing wrongly. */
		rmq_log(RMQ_LOG_ERROR, "rmq_numa_free: %p was not allocated "
		        "by rmq_numa_alloc", p);
		return;
	}
	m->len = 0;
	m->how = RMQ_NUMA_MEM_NONE;
}

#if RMQ_HAVE_HWLOC

int
rmq_numa_open(struct rmq_numa *n, const char *xml)
{
	const struct hwloc_topology_support *sup;
	hwloc_topology_t                     topo = NULL;
	int                                  rc;

	memset(n, 0, sizeof(*n));
	atomic_init(&n->warned, 0);
	atomic_init(&n->nbound, 0);
	atomic_init(&n->nfirst_touch, 0);
	n->caller_cpu = -1;
	errno         = 0;
	if (hwloc_topology_init(&topo) != 0) {
		topo = NULL;
		goto fail;
	}
	/* Not the GPU plugins: hwloc's GL one probes X displays :0 to :9
	 * (TCP ports 6000-6009 and their sockets), a delay measured in every
	 * first rmq_bind or rmq_connect (INTERNALS §17); NICs are what we
	 * place by.
	 * (Unknown names are ignored, hence no check.) */
	(void) hwloc_topology_set_components(
	    topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "gl");
	(void) hwloc_topology_set_components(
	    topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "opencl");
	/* hwloc 2 leaves I/O devices out unless asked; "important" keeps
	 * network and InfiniBand devices and the bridges above them. */
	if (hwloc_topology_set_io_types_filter(
	        topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT) != 0 ||
	    (xml != NULL && hwloc_topology_set_xml(topo, xml) != 0) ||
	    hwloc_topology_load(topo) != 0)
		goto fail;
	n->topo       = topo;
	n->thissystem = hwloc_topology_is_thissystem(topo) != 0;
	sup           = hwloc_topology_get_support(topo);
	/* A topology from XML describes some other machine: binding to its
	 * node numbers here would be meaningless. */
	n->can_bind = n->thissystem && sup->membind->set_area_membind &&
	              sup->membind->bind_membind;
	n->nnodes = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
	return 0;
fail:
	rc = errno != 0 ? -errno : -RMQ_EINVAL;
	snprintf(n->err, sizeof(n->err), "%s: %s",
	         xml != NULL ? xml : "loading the hwloc topology",
	         strerror(-rc));
	if (topo != NULL)
		hwloc_topology_destroy(topo);
	return rc;
}

void
rmq_numa_close(struct rmq_numa *n)
{
	if (n->topo != NULL)
		hwloc_topology_destroy(n->topo);
	n->topo = NULL;
}

static hwloc_obj_t
first_node(struct rmq_numa *n)
{
	return hwloc_get_obj_by_type(n->topo, HWLOC_OBJ_NUMANODE, 0);
}

/*
 * The node the calling thread runs on, or NULL; *how names it for the
 * why text.  A topology from XML is some other machine: where we run
 * means nothing there, unless it has one node only.
 */
static hwloc_obj_t
caller_node(struct rmq_numa *n, const char **how)
{
	hwloc_bitmap_t set;
	hwloc_obj_t    pu = NULL, node = NULL;
	int            cpu = n->caller_cpu;

	if (cpu < 0 && n->thissystem && (set = hwloc_bitmap_alloc()) != NULL) {
		if (hwloc_get_last_cpu_location(n->topo, set,
		                                HWLOC_CPUBIND_THREAD) == 0)
			cpu = hwloc_bitmap_first(set);
		hwloc_bitmap_free(set);
	}
	if (cpu >= 0)
		pu = hwloc_get_pu_obj_by_os_index(n->topo, (unsigned) cpu);
	if (pu != NULL)
		node = hwloc_get_next_obj_covering_cpuset_by_type(
		    n->topo, pu->cpuset, HWLOC_OBJ_NUMANODE, NULL);
	if (node != NULL) {
		*how = "the calling thread's node";
		return node;
	}
	if (n->nnodes == 1) {
		*how = "the only node";
		return first_node(n);
	}
	*how = n->thissystem ? "the calling thread's node is unknown"
	                     : "the calling thread's node is unknown "
	                       "(topology not of this machine)";
	return NULL;
}

/* The name of a PCI device's OS device: the RDMA one first ("mlx5_0"),
 * then the network interface ("ib0"), else any; NULL if none. */
static const char *
pci_osdev_name(hwloc_obj_t pci)
{
	hwloc_obj_t o, net = NULL, any = NULL;

	for (o = pci->io_first_child; o != NULL; o = o->next_sibling) {
		if (o->type != HWLOC_OBJ_OS_DEVICE || o->name == NULL)
			continue;
		if (o->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS)
			return o->name;
		if (o->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK && net == NULL)
			net = o;
		if (any == NULL)
			any = o;
	}
	return net != NULL ? net->name : any != NULL ? any->name : NULL;
}

/* The PCI device of a network or RDMA OS device named name, or NULL. */
static hwloc_obj_t
pci_by_osdev_name(struct rmq_numa *n, const char *name)
{
	hwloc_obj_t o = NULL;

	while ((o = hwloc_get_next_osdev(n->topo, o)) != NULL) {
		if (o->name == NULL || strcmp(o->name, name) != 0 ||
		    (o->attr->osdev.type != HWLOC_OBJ_OSDEV_NETWORK &&
		     o->attr->osdev.type != HWLOC_OBJ_OSDEV_OPENFABRICS))
			continue;
		/* Virtual interfaces hang off a CPU-side object: no NIC. */
		if (o->parent != NULL && o->parent->type == HWLOC_OBJ_PCI_DEVICE)
			return o->parent;
	}
	return NULL;
}

enum nic_state {
	NIC_NONE,        /* fi_info names no NIC, nor does the domain name */
	NIC_NOT_PCI,     /* fi_info's NIC has no PCI address */
	NIC_NOT_IN_TOPO, /* a PCI address hwloc does not know */
	NIC_FOUND,       /* by its PCI address */
	NIC_BY_NAME,     /* by the domain's name */
};

/* Find the NIC of info in the topology; fills pl->nic_*. */
static enum nic_state
find_nic(struct rmq_numa *n, const struct fi_info *info,
         struct rmq_numa_place *pl, hwloc_obj_t *pcip)
{
	const struct fi_pci_attr *pa;
	const char               *name = NULL;
	hwloc_obj_t               pci  = NULL;
	enum nic_state            st;

	*pcip = NULL;
	if (info != NULL && info->nic != NULL && info->nic->device_attr != NULL)
		name = info->nic->device_attr->name;
	if (info != NULL && info->nic != NULL && info->nic->bus_attr != NULL &&
	    info->nic->bus_attr->bus_type == FI_BUS_PCI) {
		pa = &info->nic->bus_attr->attr.pci;
		snprintf(pl->nic_pci, sizeof(pl->nic_pci), "%04x:%02x:%02x.%x",
		         pa->domain_id, pa->bus_id, pa->device_id,
		         pa->function_id);
		pci = hwloc_get_pcidev_by_busid(n->topo, pa->domain_id,
		                                pa->bus_id, pa->device_id,
		                                pa->function_id);
		st = pci != NULL ? NIC_FOUND : NIC_NOT_IN_TOPO;
	} else if (info != NULL && info->nic != NULL) {
		st = NIC_NOT_PCI;
	} else {
		st = NIC_NONE;
		if (info != NULL && info->domain_attr != NULL &&
		    info->domain_attr->name != NULL &&
		    (pci = pci_by_osdev_name(n, info->domain_attr->name)) !=
		        NULL) {
			st   = NIC_BY_NAME;
			name = info->domain_attr->name;
			snprintf(pl->nic_pci, sizeof(pl->nic_pci),
			         "%04x:%02x:%02x.%x", pci->attr->pcidev.domain,
			         pci->attr->pcidev.bus, pci->attr->pcidev.dev,
			         pci->attr->pcidev.func);
		}
	}
	if (pci != NULL && st == NIC_FOUND && pci_osdev_name(pci) != NULL)
		name = pci_osdev_name(pci);
	if (name != NULL)
		snprintf(pl->nic_name, sizeof(pl->nic_name), "%s", name);
	pl->nic_in_topo = pci != NULL;
	*pcip           = pci;
	return st;
}

/*
 * The node near a NIC: its first non-I/O ancestor's.  That ancestor may
 * span several nodes (a NIC on a package of sub-NUMA clusters, or on the
 * machine): then the caller's node if it is one of them, else the first.
 * Appends to why; NULL if the NIC has no node.
 */
static hwloc_obj_t
nic_node(struct rmq_numa *n, hwloc_obj_t pci, char *why, size_t len)
{
	hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(n->topo, pci), node;
	hwloc_obj_t caller;
	const char *how;
	char        list[64];
	size_t      used = strlen(why);

	if (anc == NULL || anc->nodeset == NULL ||
	    hwloc_bitmap_iszero(anc->nodeset))
		return NULL;
	if (hwloc_bitmap_weight(anc->nodeset) == 1) {
		node = hwloc_get_numanode_obj_by_os_index(
		    n->topo, (unsigned) hwloc_bitmap_first(anc->nodeset));
		if (node != NULL)
			snprintf(why + used, len - used, " is on node %u",
			         node->os_index);
		return node;
	}
	hwloc_bitmap_list_snprintf(list, sizeof(list), anc->nodeset);
	caller = caller_node(n, &how);
	if (caller != NULL &&
	    hwloc_bitmap_isset(anc->nodeset, caller->os_index)) {
		snprintf(why + used, len - used, " is near nodes %s: %s %u",
		         list, how, caller->os_index);
		return caller;
	}
	node = hwloc_get_numanode_obj_by_os_index(
	    n->topo, (unsigned) hwloc_bitmap_first(anc->nodeset));
	if (node != NULL && caller != NULL)
		snprintf(why + used, len - used,
		         " is near nodes %s: the first, node %u (the calling "
		         "thread is on node %u)",
		         list, node->os_index, caller->os_index);
	else if (node != NULL)
		snprintf(why + used, len - used,
		         " is near nodes %s: the first, node %u (%s)", list,
		         node->os_index, how);
	return node;
}

/* policy auto: the NIC's node, else the caller's.  Appends to why. */
static hwloc_obj_t
choose_auto(struct rmq_numa *n, const struct fi_info *info,
            struct rmq_numa_place *pl, char *why, size_t len)
{
	hwloc_obj_t    pci, node = NULL;
	enum nic_state st = find_nic(n, info, pl, &pci);
	const char    *how;
	size_t         used = strlen(why);

	switch (st) {
	case NIC_FOUND:
		snprintf(why + used, len - used, "NIC %s (%s)", pl->nic_pci,
		         pl->nic_name[0] ? pl->nic_name : "no name");
		break;
	case NIC_BY_NAME:
		snprintf(why + used, len - used,
		         "NIC %s (%s, found by the domain's name: fi_info has "
		         "no PCI address)",
		         pl->nic_name, pl->nic_pci);
		break;
	case NIC_NOT_IN_TOPO:
		snprintf(why + used, len - used, "NIC %s not in the topology",
		         pl->nic_pci);
		break;
	case NIC_NOT_PCI:
		snprintf(why + used, len - used,
		         "fi_info's NIC%s%s has no PCI address",
		         pl->nic_name[0] ? " " : "", pl->nic_name);
		break;
	case NIC_NONE:
		snprintf(why + used, len - used,
		         "no NIC in fi_info (shm/loopback)");
		break;
	}
	if (pci != NULL) {
		node = nic_node(n, pci, why, len);
		if (node != NULL)
			return node;
		used = strlen(why);
		snprintf(why + used, len - used, " has no NUMA node");
	}
	used = strlen(why);
	node = caller_node(n, &how);
	if (node != NULL)
		snprintf(why + used, len - used, ": %s %u", how,
		         node->os_index);
	else
		snprintf(why + used, len - used, ": %s", how);
	return node;
}

/*
 * policy cpuset: the CPUs of text that this machine has, into pl->cpuset,
 * and their node(s), into nodes; *nodep is the first of them.  Writes
 * pl->why; when none of the CPUs is here (or text names none), *nodep is
 * NULL and pl->why ends in "as auto: " for choose_auto.  Returns 0 or
 * -RMQ_ENOMEM.
 */
static int
choose_cpuset(struct rmq_numa *n, const char *text, struct rmq_numa_place *pl,
              hwloc_nodeset_t nodes, hwloc_obj_t *nodep)
{
	hwloc_const_cpuset_t have = hwloc_topology_get_allowed_cpuset(n->topo);
	hwloc_bitmap_t       want = NULL, miss = NULL;
	hwloc_obj_t          node = NULL;
	char                 here[64], gone[64], list[64];
	size_t               used;
	int                  rc = 0;

	hwloc_bitmap_zero(nodes);
	if (text == NULL || text[0] == '\0') {
		snprintf(pl->why, sizeof(pl->why),
		         "policy cpuset without numa.cpuset; as auto: ");
		rmq_log(RMQ_LOG_WARN, "numa.policy cpuset without "
		        "numa.cpuset: policy auto instead");
		goto out;
	}
	want = hwloc_bitmap_alloc();
	miss = hwloc_bitmap_alloc();
	if (want == NULL || miss == NULL) {
		rc = -RMQ_ENOMEM;
		goto out;
	}
	hwloc_bitmap_list_snprintf(here, sizeof(here), have);
	if (hwloc_bitmap_list_sscanf(want, text) != 0) {
		snprintf(pl->why, sizeof(pl->why),
		         "policy cpuset '%s' from the config: not a CPU list; "
		         "as auto: ", text);
		rmq_log(RMQ_LOG_WARN, "numa.cpuset '%s' is not a CPU list: "
		        "policy auto instead", text);
		goto out;
	}
	hwloc_bitmap_andnot(miss, want, have);
	hwloc_bitmap_and(want, want, have);
	if (hwloc_bitmap_iszero(want)) {
		/* As for policy node: one file may serve machines of
		 * several shapes. */
		snprintf(pl->why, sizeof(pl->why),
		         "policy cpuset %s from the config: none of these "
		         "CPUs here (CPUs %s); as auto: ", text, here);
		rmq_log(RMQ_LOG_WARN, "numa.cpuset %s: none of these CPUs is "
		        "here (CPUs %s): policy auto instead", text, here);
		goto out;
	}
	if (hwloc_cpuset_to_nodeset(n->topo, want, nodes) == 0 &&
	    !hwloc_bitmap_iszero(nodes))
		node = hwloc_get_numanode_obj_by_os_index(
		    n->topo, (unsigned) hwloc_bitmap_first(nodes));
	hwloc_bitmap_list_snprintf(pl->cpuset, sizeof(pl->cpuset), want);
	if (node == NULL) {
		hwloc_bitmap_zero(nodes);
		pl->cpuset[0] = '\0';
		snprintf(pl->why, sizeof(pl->why),
		         "policy cpuset %s from the config: its CPUs have no "
		         "NUMA node; as auto: ", text);
		goto out;
	}
	if (!hwloc_bitmap_iszero(miss)) {
		hwloc_bitmap_list_snprintf(gone, sizeof(gone), miss);
		snprintf(pl->why, sizeof(pl->why),
		         "policy cpuset %s from the config (CPUs %s not here: "
		         "using %s)", text, gone, pl->cpuset);
		rmq_log(RMQ_LOG_WARN, "numa.cpuset %s: CPUs %s are not on "
		        "this machine (CPUs %s): using %s", text, gone, here,
		        pl->cpuset);
	} else {
		snprintf(pl->why, sizeof(pl->why),
		         "policy cpuset %s from the config", text);
	}
	used = strlen(pl->why);
	if (hwloc_bitmap_weight(nodes) == 1) {
		snprintf(pl->why + used, sizeof(pl->why) - used, ": node %u",
		         node->os_index);
	} else {
		hwloc_bitmap_list_snprintf(list, sizeof(list), nodes);
		snprintf(pl->why + used, sizeof(pl->why) - used, ": nodes %s",
		         list);
	}
out:
	if (want != NULL)
		hwloc_bitmap_free(want);
	if (miss != NULL)
		hwloc_bitmap_free(miss);
	*nodep = node;
	return rc;
}

/* Fills pl->mem for memory on node (or nodes, when several). */
static void
place_mem(struct rmq_numa *n, struct rmq_numa_place *pl, bool several)
{
	if (pl->bind && several)
		snprintf(pl->mem, sizeof(pl->mem),
		         "bound to nodes %s (hwloc; preferred: spills over "
		         "when full)", pl->nodeset);
	else if (pl->bind)
		snprintf(pl->mem, sizeof(pl->mem),
		         "bound to node %d (hwloc; preferred: spills over when "
		         "the node is full)", pl->node);
	else if (!n->thissystem)
		snprintf(pl->mem, sizeof(pl->mem),
		         "first touch (the topology is not this machine's)");
	else
		snprintf(pl->mem, sizeof(pl->mem),
		         "first touch (hwloc cannot bind memory here)");
}

int
rmq_numa_choose(struct rmq_numa *n, const struct fi_info *info, int policy,
                int node_opt, const char *cpuset, struct rmq_numa_place *pl)
{
	hwloc_nodeset_t nodes = NULL;
	hwloc_obj_t     node  = NULL, pci;
	char            list[64];
	int             rc = 0;

	if (pl == NULL)
		return -RMQ_EINVAL;
	place_init(pl);
	if (policy != RMQ_CFG_NUMA_AUTO && policy != RMQ_CFG_NUMA_OFF &&
	    policy != RMQ_CFG_NUMA_NODE && policy != RMQ_CFG_NUMA_CPUSET) {
		snprintf(pl->why, sizeof(pl->why), "unknown policy %d", policy);
		snprintf(pl->mem, sizeof(pl->mem), "first touch");
		rc = -RMQ_EINVAL;
		goto out;
	}
	if (policy == RMQ_CFG_NUMA_OFF) {
		if (n != NULL && n->topo != NULL)
			find_nic(n, info, pl, &pci); /* for rmq_info only */
		snprintf(pl->why, sizeof(pl->why), "policy off (numa.policy)");
		snprintf(pl->mem, sizeof(pl->mem), "first touch (policy off)");
		goto out;
	}
	if (n == NULL || n->topo == NULL) {
		snprintf(pl->why, sizeof(pl->why), "no hwloc topology (%s)",
		         n != NULL && n->err[0] ? n->err : "not loaded");
		snprintf(pl->mem, sizeof(pl->mem),
		         "first touch (no topology)");
		goto out;
	}
	nodes = hwloc_bitmap_alloc();
	if (nodes == NULL) {
		rc = -RMQ_ENOMEM;
		goto out;
	}
	if (policy == RMQ_CFG_NUMA_NODE) {
		if (node_opt >= 0)
			node = hwloc_get_numanode_obj_by_os_index(
			    n->topo, (unsigned) node_opt);
		if (node != NULL) {
			find_nic(n, info, pl, &pci);
			snprintf(pl->why, sizeof(pl->why),
			         "policy node %d from the config", node_opt);
		} else {
			/* A file shared by machines of different shapes
			 * should not stop one of them from working. */
			hwloc_bitmap_list_snprintf(
			    list, sizeof(list),
			    hwloc_get_root_obj(n->topo)->nodeset);
			if (node_opt >= 0) {
				snprintf(pl->why, sizeof(pl->why),
				         "policy node %d from the config: no "
				         "such node here (nodes %s); as auto: ",
				         node_opt, list);
				rmq_log(RMQ_LOG_WARN, "numa.node %d is not a "
				        "node here (nodes %s): policy auto "
				        "instead", node_opt, list);
			} else {
				snprintf(pl->why, sizeof(pl->why),
				         "policy node without numa.node; as "
				         "auto: ");
				rmq_log(RMQ_LOG_WARN, "numa.policy node "
				        "without numa.node: policy auto "
				        "instead");
			}
		}
	} else if (policy == RMQ_CFG_NUMA_CPUSET) {
		rc = choose_cpuset(n, cpuset, pl, nodes, &node);
		if (rc != 0)
			goto out;
		if (node != NULL)
			find_nic(n, info, pl, &pci); /* for rmq_info only */
	}
	if (node == NULL)
		node = choose_auto(n, info, pl, pl->why, sizeof(pl->why));
	if (node == NULL) {
		snprintf(pl->mem, sizeof(pl->mem), "first touch (no node)");
		goto out;
	}
	pl->node = (int) node->os_index;
	if (hwloc_bitmap_iszero(nodes))
		hwloc_bitmap_only(nodes, node->os_index);
	hwloc_bitmap_list_snprintf(pl->nodeset, sizeof(pl->nodeset), nodes);
	/* Policy cpuset has set its own CPUs, not the whole node's. */
	if (pl->cpuset[0] == '\0' && node->cpuset != NULL)
		hwloc_bitmap_list_snprintf(pl->cpuset, sizeof(pl->cpuset),
		                           node->cpuset);
	pl->bind = n->can_bind;
	place_mem(n, pl, hwloc_bitmap_weight(nodes) > 1);
out:
	if (rc == -RMQ_ENOMEM) {
		place_init(pl);
		snprintf(pl->why, sizeof(pl->why), "out of memory");
		snprintf(pl->mem, sizeof(pl->mem),
		         "first touch (out of memory)");
	}
	if (nodes != NULL)
		hwloc_bitmap_free(nodes);
	return rc;
}

/*
 * mmap and bind to pl->nodeset (pl->node if it has none); NULL if binding
 * is impossible (the caller falls back).
 */
static void *
alloc_bound(struct rmq_numa *n, const struct rmq_numa_place *pl, size_t len,
            struct rmq_numa_mem *m)
{
	size_t         ps = page_size(), rlen = (len + ps - 1) / ps * ps;
	hwloc_bitmap_t set = hwloc_bitmap_alloc();
	void          *p;
	char           where[64];
	int            rc = -1, err = ENOMEM;

	p = mmap(NULL, rlen, PROT_READ | PROT_WRITE,
	         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		p = NULL;
	if (p != NULL && set != NULL) {
		if (pl->nodeset[0] == '\0' ||
		    hwloc_bitmap_list_sscanf(set, pl->nodeset) != 0 ||
		    hwloc_bitmap_iszero(set))
			hwloc_bitmap_only(set, (unsigned) pl->node);
		/* Untouched pages: the policy applies as they fault in. */
		rc  = hwloc_set_area_membind(n->topo, p, rlen, set,
		                             HWLOC_MEMBIND_BIND,
		                             HWLOC_MEMBIND_BYNODESET);
		err = errno;
	}
	hwloc_bitmap_free(set);
	if (rc != 0) {
		if (p != NULL)
			munmap(p, rlen);
		if (pl->nodeset[0] != '\0')
			snprintf(where, sizeof(where), "%s", pl->nodeset);
		else
			snprintf(where, sizeof(where), "%d", pl->node);
		if (atomic_exchange(&n->warned, 1) == 0)
			rmq_log(RMQ_LOG_WARN,
			        "numa: cannot bind memory to node%s %s (%s): "
			        "first touch instead",
			        strpbrk(where, ",-") != NULL ? "s" : "", where,
			        strerror(err));
		return NULL;
	}
	m->len = rlen;
	m->how = RMQ_NUMA_MEM_BOUND;
	atomic_fetch_add(&n->nbound, 1);
	return p;
}

void *
rmq_numa_alloc(struct rmq_numa *n, const struct rmq_numa_place *pl,
               size_t len, struct rmq_numa_mem *m)
{
	void *p;

	if (n != NULL && n->topo != NULL && n->can_bind && pl != NULL &&
	    pl->bind && pl->node >= 0 && len > 0) {
		p = alloc_bound(n, pl, len, m);
		if (p != NULL)
			return p;
	}
	return alloc_first_touch(n, len, m);
}

int
rmq_numa_where(struct rmq_numa *n, void *p, size_t len)
{
	volatile uint8_t *b = p;
	hwloc_bitmap_t    set;
	size_t            ps = page_size(), off;
	int               node = -1;

	if (p == NULL || len == 0)
		return -1;
	/* Untouched pages are on no node yet. */
	for (off = 0; off < len; off += ps)
		b[off] = b[off];
	b[len - 1] = b[len - 1];
	if (n == NULL || n->topo == NULL || !n->thissystem ||
	    (set = hwloc_bitmap_alloc()) == NULL)
		return -1;
	if (hwloc_get_area_memlocation(n->topo, p, len, set,
	                               HWLOC_MEMBIND_BYNODESET) == 0 &&
	    hwloc_bitmap_weight(set) == 1)
		node = hwloc_bitmap_first(set);
	hwloc_bitmap_free(set);
	return node;
}

int
rmq_numa_bind_thread(struct rmq_numa *n, const struct rmq_numa_place *pl,
                     pthread_t t)
{
	hwloc_bitmap_t set;
	int            rc = -RMQ_ENOTSUP;

	/* Only the machine's own topology: an XML one is not these CPUs. */
	if (n->topo == NULL || !n->thissystem || pl->cpuset[0] == '\0')
		return rc;
	set = hwloc_bitmap_alloc();
	if (set == NULL)
		return -RMQ_ENOMEM;
	if (hwloc_bitmap_list_sscanf(set, pl->cpuset) == 0 &&
	    hwloc_set_thread_cpubind(n->topo, t, set, 0) == 0)
		rc = 0;
	hwloc_bitmap_free(set);
	return rc;
}

#else /* !RMQ_HAVE_HWLOC */

int
rmq_numa_bind_thread(struct rmq_numa *n, const struct rmq_numa_place *pl,
                     pthread_t t)
{
	RMQ_UNUSED(n);
	RMQ_UNUSED(pl);
	RMQ_UNUSED(t);
	return -RMQ_ENOTSUP;
}

int
rmq_numa_open(struct rmq_numa *n, const char *xml)
{
	RMQ_UNUSED(xml);
	memset(n, 0, sizeof(*n));
	atomic_init(&n->warned, 0);
	atomic_init(&n->nbound, 0);
	atomic_init(&n->nfirst_touch, 0);
	n->caller_cpu = -1;
	snprintf(n->err, sizeof(n->err), "built without hwloc");
	return -RMQ_ENOTSUP;
}

void
rmq_numa_close(struct rmq_numa *n)
{
	RMQ_UNUSED(n);
}

int
rmq_numa_choose(struct rmq_numa *n, const struct fi_info *info, int policy,
                int node_opt, const char *cpuset, struct rmq_numa_place *pl)
{
	RMQ_UNUSED(n);
	RMQ_UNUSED(info);
	RMQ_UNUSED(node_opt);
	RMQ_UNUSED(cpuset);
	if (pl == NULL)
		return -RMQ_EINVAL;
	place_init(pl);
	snprintf(pl->why, sizeof(pl->why), "%s",
	         policy == RMQ_CFG_NUMA_OFF ? "policy off (numa.policy)"
	                                    : "built without hwloc");
	snprintf(pl->mem, sizeof(pl->mem), "first touch (%s)",
	         policy == RMQ_CFG_NUMA_OFF ? "policy off"
	                                    : "built without hwloc");
	return 0;
}

void *
rmq_numa_alloc(struct rmq_numa *n, const struct rmq_numa_place *pl,
               size_t len, struct rmq_numa_mem *m)
{
	RMQ_UNUSED(pl);
	return alloc_first_touch(n, len, m);
}

int
rmq_numa_where(struct rmq_numa *n, void *p, size_t len)
{
	RMQ_UNUSED(n);
	RMQ_UNUSED(p);
	RMQ_UNUSED(len);
	return -1;
}

#endif /* RMQ_HAVE_HWLOC */
