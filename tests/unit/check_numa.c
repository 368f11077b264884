/*
 * Unit tests for lib/numa.c: which NUMA node a domain's memory goes on,
 * why, and where the memory really went.
 *
 * This machine has one NUMA node and no RDMA NIC, so the choices are
 * tested on hwloc XML topologies in tests/data (hand-written, checked with
 * hwloc-info --input):
 *   numa_two_nodes.xml  nodes 0 (PUs 0-1) and 1 (PUs 2-3); eth0 at
 *                       0000:01:00.0 on node 0, mlx5_0/ib0 at
 *                       0000:81:00.0 on node 1
 *   numa_four_nics.xml  nodes 0-3 (PUs 2n, 2n+1); mlx5_0 0000:01:00.0 on
 *                       node 0, mlx5_1 0000:41:00.0 on node 3, mlx5_2
 *                       0000:81:00.0 on package 1 (nodes 2-3), mlx5_3
 *                       0000:c1:00.0 on the machine (nodes 0-3)
 *   numa_one_node.xml   one node, two PUs, no PCI
 * An XML topology is some other machine: where the calling thread runs is
 * unknown there (unless the test sets n.caller_cpu), and nothing is bound.
 * The allocation tests run on this machine's real topology and ask hwloc
 * where the pages are.  fi_info values are built on the stack:
 * fi_allocinfo() gives no nic, and fi_freeinfo() would fi_close() one.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkmain.h"
#include "rmq_config.h"
#include "conn/peer.h"
#include "ep.h"
#include "msg.h"
#include "paths/path.h"
#include "paths/ring.h"
#include "paths/tx.h"
#include "socket.h"
#include "testutil.h"

#if RMQ_HAVE_HWLOC
#include <hwloc.h>
#endif

#ifndef RMQ_TEST_DATA_DIR
#error "RMQ_TEST_DATA_DIR must be defined"
#endif

#define XML_TWO  RMQ_TEST_DATA_DIR "/numa_two_nodes.xml"
#define XML_FOUR RMQ_TEST_DATA_DIR "/numa_four_nics.xml"
#define XML_ONE  RMQ_TEST_DATA_DIR "/numa_one_node.xml"

/* An fi_info with only what rmq_numa_choose reads. */
struct fake_info {
	struct fi_info        info;
	struct fi_domain_attr dom;
	struct fid_nic        nic;
	struct fi_device_attr dev;
	struct fi_bus_attr    bus;
};

/* No NIC; domain name as a provider would give it ("shm", "lo"). */
static const struct fi_info *
fake_no_nic(struct fake_info *f, const char *domain)
{
	memset(f, 0, sizeof(*f));
	f->dom.name         = (char *) domain;
	f->info.domain_attr = &f->dom;
	return &f->info;
}

/* A NIC at a PCI address, as verbs and efa report it. */
static const struct fi_info *
fake_pci(struct fake_info *f, uint16_t dom, uint8_t bus, uint8_t dev,
         uint8_t fn, const char *name)
{
	fake_no_nic(f, name);
	f->dev.name                 = (char *) name;
	f->bus.bus_type             = FI_BUS_PCI;
	f->bus.attr.pci.domain_id   = dom;
	f->bus.attr.pci.bus_id      = bus;
	f->bus.attr.pci.device_id   = dev;
	f->bus.attr.pci.function_id = fn;
	f->nic.device_attr          = &f->dev;
	f->nic.bus_attr             = &f->bus;
	f->info.nic                 = &f->nic;
	return &f->info;
}

#if RMQ_HAVE_HWLOC

static bool
starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

static void
open_xml(struct rmq_numa *n, const char *path)
{
	int rc = rmq_numa_open(n, path);

	ck_assert_msg(rc == 0, "%s: %s", path, n->err);
	ck_assert_ptr_nonnull(n->topo);
}

/* Choose under policy auto; pl->why is printed when a check fails. */
static void
choose(struct rmq_numa *n, const struct fi_info *info,
       struct rmq_numa_place *pl)
{
	ck_assert_int_eq(
	    rmq_numa_choose(n, info, RMQ_CFG_NUMA_AUTO, -1, NULL, pl), 0);
}

START_TEST(test_open_xml)
{
	struct rmq_numa n;

	open_xml(&n, XML_TWO);
	ck_assert_int_eq(n.nnodes, 2);
	ck_assert(!n.thissystem);
	ck_assert(!n.can_bind);
	ck_assert_int_eq(n.caller_cpu, -1);
	rmq_numa_close(&n);
	ck_assert_ptr_null(n.topo);
	rmq_numa_close(&n); /* twice is harmless */
}
END_TEST

/* A file that is not there: an error, and no node with the reason. */
START_TEST(test_open_missing_xml)
{
	struct rmq_numa_place pl;
	struct fake_info      f;
	struct rmq_numa       n;

	ck_assert_int_lt(rmq_numa_open(&n, RMQ_TEST_DATA_DIR "/nosuch.xml"), 0);
	ck_assert_ptr_null(n.topo);
	ck_assert_msg(strstr(n.err, "nosuch.xml") != NULL, "%s", n.err);
	choose(&n, fake_pci(&f, 0, 0x81, 0, 0, "mlx5_0"), &pl);
	ck_assert_int_eq(pl.node, -1);
	ck_assert(!pl.bind);
	ck_assert_msg(starts_with(pl.why, "no hwloc topology ("), "%s", pl.why);
	ck_assert_str_eq(pl.mem, "first touch (no topology)");
	rmq_numa_close(&n);
}
END_TEST

/* (a) Two nodes, the NIC on node 1. */
START_TEST(test_choose_nic_node1)
{
	struct rmq_numa_place pl;
	struct fake_info      f;
	struct rmq_numa       n;

	open_xml(&n, XML_TWO);
	choose(&n, fake_pci(&f, 0, 0x81, 0, 0, "mlx5_0"), &pl);
	ck_assert_int_eq(pl.node, 1);
	ck_assert_str_eq(pl.why, "NIC 0000:81:00.0 (mlx5_0) is on node 1");
	ck_assert_str_eq(pl.nic_pci, "0000:81:00.0");
	ck_assert_str_eq(pl.nic_name, "mlx5_0");
	ck_assert(pl.nic_in_topo);
	ck_assert_str_eq(pl.cpuset, "2-3");
	/* Not this machine: chosen, but nothing to bind to. */
	ck_assert(!pl.bind);
	ck_assert_str_eq(pl.mem,
	                 "first touch (the topology is not this machine's)");
	rmq_numa_close(&n);
}
END_TEST

/* The name comes from hwloc's RDMA device, not from fi_info's. */
START_TEST(test_choose_nic_name_from_topology)
{
	struct rmq_numa_place pl;
	struct fake_info      f;
	struct rmq_numa       n;

	open_xml(&n, XML_TWO);
	choose(&n, fake_pci(&f, 0, 0x81, 0, 0, "verbs-dev"), &pl);
	ck_assert_str_eq(pl.nic_name, "mlx5_0");
	/* An Ethernet NIC has only its interface. */
	choose(&n, fake_pci(&f, 0, 0x01, 0, 0, NULL), &pl);
	ck_assert_int_eq(pl.node, 0);
	ck_assert_str_eq(pl.why, "NIC 0000:01:00.0 (eth0) is on node 0");
	ck_assert_str_eq(pl.cpuset, "0-1");
	rmq_numa_close(&n);
}
END_TEST

/* (b) Several NICs: the one fi_info names. */
START_TEST(test_choose_several_nics)
{
	struct rmq_numa_place pl;
	struct fake_info      f;
	struct rmq_numa       n;

	open_xml(&n, XML_FOUR);
	ck_assert_int_eq(n.nnodes, 4);
	choose(&n, fake_pci(&f, 0, 0x01, 0, 0, NULL), &pl);
	ck_assert_int_eq(pl.node, 0);
	ck_assert_str_eq(pl.why, "NIC 0000:01:00.0 (mlx5_0) is on node 0");
	ck_assert_str_eq(pl.cpuset, "0-1");
	choose(&n, fake_pci(&f, 0, 0x41, 0, 0, NULL), &pl);
	ck_assert_int_eq(pl.node, 3);
	ck_assert_str_eq(pl.why, "NIC 0000:41:00.0 (mlx5_1) is on node 3");
	ck_assert_str_eq(pl.cpuset, "6-7");
	/* The caller's node does not matter when the NIC has one node. */
	n.caller_cpu = 0;
	choose(&n, fake_pci(&f, 0, 0x41, 0, 0, NULL), &pl);
	ck_assert_int_eq(pl.node, 3);
	rmq_numa_close(&n);
}
END_TEST

/* A NIC near several nodes: the caller's if among them, else the first. */
START_TEST(test_choose_nic_spans_nodes)
{
	struct rmq_numa_place pl;
	struct fake_info      f;
	struct rmq_numa       n;

	open_xml(&n, XML_FOUR);
	choose(&n, fake_pci(&f, 0, 0x81, 0, 0, NULL), &pl);
	ck_assert_int_eq(pl.node, 2);
	ck_assert_str_eq(pl.why,
	                 "NIC 0000:81:00.0 (mlx5_2) is near nodes 2-3: the "
	                 "first, node 2 (the calling thread's node is unknown "
	                 "(topology not of this machine))");
	n.caller_cpu = 7; /* node 3 */
	choose(&n, fake_pci(&f, 0, 0x81, 0, 0, NULL), &pl);
	ck_assert_int_eq(pl.node, 3);
	ck_assert_str_eq(pl.why, "NIC 0000:81:00.0 (mlx5_2) is near nodes "
	                         "2-3: the calling thread's node 3");
	ck_assert_str_eq(pl.cpuset, "6-7");
	n.caller_cpu = 1; /* node 0: not near this NIC */
	choose(&n, fake_pci(&f, 0, 0x81, 0, 0, NULL), &pl);
	ck_assert_int_eq(pl.node, 2);
	ck_assert_str_eq(pl.why, "NIC 0000:81:00.0 (mlx5_2) is near nodes "
	                         "2-3: the first, node 2 (the calling thread "
	                         "is on node 0)");
	/* On the machine: every node is near it. */
	n.caller_cpu = 4;
	choose(&n, fake_pci(&f, 0, 0xc1, 0, 0, NULL), &pl);
	ck_assert_int_eq(pl.node, 2);
	ck_assert_str_eq(pl.why, "NIC 0000:c1:00.0 (mlx5_3) is near nodes "
	                         "0-3: the calling thread's node 2");
	rmq_numa_close(&n);
}
END_TEST

/*
 * (c) No NIC (shm): the caller's node.  In an XML topology that is
 * unknown: no node, first touch, and the reason says so.
 */
START_TEST(test_choose_no_nic_caller_unknown)
{
	struct rmq_numa_place pl;
	struct fake_info      f;
	struct rmq_numa       n;

	open_xml(&n, XML_TWO);
	choose(&n, fake_no_nic(&f, "shm"), &pl);
	ck_assert_int_eq(pl.node, -1);
	ck_assert_str_eq(pl.why, "no NIC in fi_info (shm/loopback): the "
	                         "calling thread's node is unknown (topology "
	                         "not of this machine)");
	ck_assert_str_eq(pl.nic_pci, "");
	ck_assert_str_eq(pl.nic_name, "");
	ck_assert(!pl.nic_in_topo);
	ck_assert_str_eq(pl.cpuset, "");
	ck_assert(!pl.bind);
	ck_assert_str_eq(pl.mem, "first touch (no node)");
	/* No fi_info at all: the same. */
	choose(&n, NULL, &pl);
	ck_assert_int_eq(pl.node, -1);
	rmq_numa_close(&n);
}
END_TEST

/* (c) No NIC, the caller on PU 3: node 1. */
START_TEST(test_choose_no_nic_caller_node)
{
	struct rmq_numa_place pl;
	struct fake_info      f;
	struct rmq_numa       n;

	open_xml(&n, XML_TWO);
	n.caller_cpu = 3;
	choose(&n, fake_no_nic(&f, "shm"), &pl);
	ck_assert_int_eq(pl.node, 1);
	ck_assert_str_eq(pl.why, "no NIC in fi_info (shm/loopback): the "
	                         "calling thread's node 1");
	ck_assert_str_eq(pl.cpuset, "2-3");
	/* A CPU the topology does not have: unknown. */
	n.caller_cpu = 42;
	choose(&n, fake_no_nic(&f, "shm"), &pl);
	ck_assert_int_eq(pl.node, -1);
	rmq_numa_close(&n);
}
END_TEST

/* (c) One node: the caller's node even when where it runs is unknown. */
START_TEST(test_choose_no_nic_one_node)
{
	struct rmq_numa_place pl;
	struct fake_info      f;
	struct rmq_numa       n;

	open_xml(&n, XML_ONE);
	choose(&n, fake_no_nic(&f, "shm"), &pl);
	ck_assert_int_eq(pl.node, 0);
	ck_assert_str_eq(pl.why, "no NIC in fi_info (shm/loopback): the only "
	                         "node 0");
	ck_assert_str_eq(pl.cpuset, "0-1");
	rmq_numa_close(&n);
}
END_TEST

/* (d) A PCI address the topology does not have: the caller's node. */
START_TEST(test_choose_nic_not_in_topology)
{
	struct rmq_numa_place pl;
	struct fake_info      f;
	struct rmq_numa       n;

	open_xml(&n, XML_TWO);
	choose(&n, fake_pci(&f, 0, 0x99, 0, 1, "mlx5_9"), &pl);
	ck_assert_int_eq(pl.node, -1);
	ck_assert_str_eq(pl.why, "NIC 0000:99:00.1 not in the topology: the "
	                         "calling thread's node is unknown (topology "
	                         "not of this machine)");
	ck_assert_str_eq(pl.nic_pci, "0000:99:00.1");
	ck_assert_str_eq(pl.nic_name, "mlx5_9"); /* fi_info's */
	ck_assert(!pl.nic_in_topo);
	n.caller_cpu = 1;
	choose(&n, fake_pci(&f, 1, 0x81, 0, 0, NULL), &pl); /* domain 1 */
	ck_assert_int_eq(pl.node, 0);
	ck_assert_str_eq(pl.why, "NIC 0001:81:00.0 not in the topology: the "
	                         "calling thread's node 0");
	rmq_numa_close(&n);
}
END_TEST

/* A NIC that is not on PCI: the caller's node. */
START_TEST(test_choose_nic_not_pci)
{
	struct rmq_numa_place pl;
	struct fake_info      f;
	struct rmq_numa       n;

	open_xml(&n, XML_TWO);
	n.caller_cpu = 2;
	fake_pci(&f, 0, 0x81, 0, 0, "cxi0");
	f.bus.bus_type = FI_BUS_UNKNOWN;
	choose(&n, &f.info, &pl);
	ck_assert_int_eq(pl.node, 1);
	ck_assert_str_eq(pl.why, "fi_info's NIC cxi0 has no PCI address: the "
	                         "calling thread's node 1");
	ck_assert_str_eq(pl.nic_pci, "");
	/* No bus attributes at all: the same. */
	f.nic.bus_attr = NULL;
	choose(&n, &f.info, &pl);
	ck_assert_int_eq(pl.node, 1);
	ck_assert_str_eq(pl.nic_name, "cxi0");
	rmq_numa_close(&n);
}
END_TEST

/* No nic, but the domain is named after a device hwloc knows. */
START_TEST(test_choose_by_domain_name)
{
	struct rmq_numa_place pl;
	struct fake_info      f;
	struct rmq_numa       n;

	open_xml(&n, XML_FOUR);
	choose(&n, fake_no_nic(&f, "mlx5_1"), &pl);
	ck_assert_int_eq(pl.node, 3);
	ck_assert_str_eq(pl.nic_pci, "0000:41:00.0");
	ck_assert_str_eq(pl.nic_name, "mlx5_1");
	ck_assert(pl.nic_in_topo);
	ck_assert_str_eq(pl.why, "NIC mlx5_1 (0000:41:00.0, found by the "
	                         "domain's name: fi_info has no PCI address) "
	                         "is on node 3");
	rmq_numa_close(&n);
	open_xml(&n, XML_TWO);
	choose(&n, fake_no_nic(&f, "ib0"), &pl); /* a network interface */
	ck_assert_int_eq(pl.node, 1);
	ck_assert_str_eq(pl.nic_pci, "0000:81:00.0");
	choose(&n, fake_no_nic(&f, "lo"), &pl); /* tcp on loopback */
	ck_assert_int_eq(pl.node, -1);
	ck_assert_str_eq(pl.nic_pci, "");
	choose(&n, fake_no_nic(&f, "mlx5"), &pl); /* names match whole */
	ck_assert_str_eq(pl.nic_pci, "");
	/* A PCI address wins over the name. */
	fake_pci(&f, 0, 0x01, 0, 0, NULL);
	f.dom.name = "ib0";
	choose(&n, &f.info, &pl);
	ck_assert_int_eq(pl.node, 0);
	rmq_numa_close(&n);
}
END_TEST

/* (e) policy off: no node, first touch; the NIC is still reported. */
START_TEST(test_policy_off)
{
	struct rmq_numa_place pl;
	struct fake_info      f;
	struct rmq_numa       n;

	open_xml(&n, XML_TWO);
	ck_assert_int_eq(rmq_numa_choose(&n, fake_pci(&f, 0, 0x81, 0, 0, NULL),
	                                 RMQ_CFG_NUMA_OFF, 1, NULL, &pl),
	                 0);
	ck_assert_int_eq(pl.node, -1);
	ck_assert(!pl.bind);
	ck_assert_str_eq(pl.why, "policy off (numa.policy)");
	ck_assert_str_eq(pl.mem, "first touch (policy off)");
	ck_assert_str_eq(pl.nic_pci, "0000:81:00.0");
	ck_assert_str_eq(pl.cpuset, "");
	rmq_numa_close(&n);
	/* Without a topology (the context loads none for policy off). */
	ck_assert_int_eq(rmq_numa_choose(NULL, &f.info, RMQ_CFG_NUMA_OFF, -1,
	                                 NULL, &pl),
	                 0);
	ck_assert_str_eq(pl.why, "policy off (numa.policy)");
}
END_TEST

/* (e) policy node N: N, whatever the NIC says. */
START_TEST(test_policy_node)
{
	struct rmq_numa_place pl;
	struct fake_info      f;
	struct rmq_numa       n;

	open_xml(&n, XML_TWO);
	ck_assert_int_eq(rmq_numa_choose(&n, fake_pci(&f, 0, 0x81, 0, 0, NULL),
	                                 RMQ_CFG_NUMA_NODE, 0, NULL, &pl),
	                 0);
	ck_assert_int_eq(pl.node, 0);
	ck_assert_str_eq(pl.why, "policy node 0 from the config");
	ck_assert_str_eq(pl.cpuset, "0-1");
	ck_assert_str_eq(pl.nic_pci, "0000:81:00.0");
	rmq_numa_close(&n);
}
END_TEST

/*
 * (e) policy node N with no node N here: not an error (one file may serve
 * machines of several shapes) but auto, and the reason says so.
 */
START_TEST(test_policy_node_out_of_range)
{
	struct rmq_numa_place pl;
	struct fake_info      f;
	struct rmq_numa       n;

	open_xml(&n, XML_TWO);
	ck_assert_int_eq(rmq_numa_choose(&n, fake_pci(&f, 0, 0x81, 0, 0, NULL),
	                                 RMQ_CFG_NUMA_NODE, 5, NULL, &pl),
	                 0);
	ck_assert_int_eq(pl.node, 1);
	ck_assert_str_eq(pl.why, "policy node 5 from the config: no such node "
	                         "here (nodes 0-1); as auto: NIC 0000:81:00.0 "
	                         "(mlx5_0) is on node 1");
	ck_assert_int_eq(rmq_numa_choose(&n, fake_no_nic(&f, "shm"),
	                                 RMQ_CFG_NUMA_NODE, -1, NULL, &pl),
	                 0);
	ck_assert_int_eq(pl.node, -1);
	ck_assert_msg(starts_with(pl.why, "policy node without numa.node; "
	                                  "as auto: no NIC"),
	              "%s", pl.why);
	ck_assert_int_eq(rmq_numa_choose(&n, NULL, 7, 0, NULL, &pl),
	                 -RMQ_EINVAL);
	ck_assert_int_eq(pl.node, -1);
	ck_assert_int_eq(rmq_numa_choose(&n, NULL, RMQ_CFG_NUMA_AUTO, -1, NULL,
	                                 NULL),
	                 -RMQ_EINVAL);
	rmq_numa_close(&n);
}
END_TEST

/* Choose under policy cpuset; pl->why is printed when a check fails. */
static void
choose_cpuset(struct rmq_numa *n, const struct fi_info *info,
              const char *cpuset, struct rmq_numa_place *pl)
{
	ck_assert_int_eq(rmq_numa_choose(n, info, RMQ_CFG_NUMA_CPUSET, -1,
	                                 cpuset, pl),
	                 0);
}

/*
 * policy cpuset on one node's CPUs: that node, as policy node would, but
 * the thread goes on the CPUs named, not on the whole node.
 */
START_TEST(test_policy_cpuset_one_node)
{
	struct rmq_numa_place pl;
	struct fake_info      f;
	struct rmq_numa       n;

	open_xml(&n, XML_TWO);
	/* The NIC is on node 0: the CPUs win. */
	choose_cpuset(&n, fake_pci(&f, 0, 0x01, 0, 0, NULL), "3", &pl);
	ck_assert_int_eq(pl.node, 1);
	ck_assert_str_eq(pl.nodeset, "1");
	ck_assert_str_eq(pl.cpuset, "3");
	ck_assert_str_eq(pl.why, "policy cpuset 3 from the config: node 1");
	ck_assert_str_eq(pl.nic_pci, "0000:01:00.0"); /* still reported */
	ck_assert(!pl.bind);
	ck_assert_str_eq(pl.mem,
	                 "first touch (the topology is not this machine's)");
	/* The whole node, written another way. */
	choose_cpuset(&n, NULL, "3,2", &pl);
	ck_assert_int_eq(pl.node, 1);
	ck_assert_str_eq(pl.cpuset, "2-3");
	ck_assert_str_eq(pl.why, "policy cpuset 3,2 from the config: node 1");
	/* Bound like policy node's where it can bind. */
	n.can_bind = true; /* the text only: nothing is allocated */
	choose_cpuset(&n, NULL, "2", &pl);
	ck_assert(pl.bind);
	ck_assert_str_eq(pl.mem, "bound to node 1 (hwloc; preferred: spills "
	                         "over when the node is full)");
	rmq_numa_close(&n);
}
END_TEST

/* CPUs on several nodes: memory on all of them, and the text says so. */
START_TEST(test_policy_cpuset_two_nodes)
{
	struct rmq_numa_place pl;
	struct fake_info      f;
	struct rmq_numa       n;

	open_xml(&n, XML_TWO);
	choose_cpuset(&n, fake_pci(&f, 0, 0x81, 0, 0, NULL), "1-2", &pl);
	ck_assert_int_eq(pl.node, 0); /* the first */
	ck_assert_str_eq(pl.nodeset, "0-1");
	ck_assert_str_eq(pl.cpuset, "1-2");
	ck_assert_str_eq(pl.why, "policy cpuset 1-2 from the config: nodes "
	                         "0-1");
	ck_assert(!pl.bind);
	n.can_bind = true; /* the text only: nothing is allocated */
	choose_cpuset(&n, NULL, "1-2", &pl);
	ck_assert(pl.bind);
	ck_assert_str_eq(pl.mem, "bound to nodes 0-1 (hwloc; preferred: "
	                         "spills over when full)");
	rmq_numa_close(&n);
	/* Nodes that are not neighbours: 0 and 3, not 0-3. */
	open_xml(&n, XML_FOUR);
	choose_cpuset(&n, fake_pci(&f, 0, 0x81, 0, 0, NULL), "0,7", &pl);
	ck_assert_int_eq(pl.node, 0);
	ck_assert_str_eq(pl.nodeset, "0,3");
	ck_assert_str_eq(pl.cpuset, "0,7");
	ck_assert_str_eq(pl.why, "policy cpuset 0,7 from the config: nodes "
	                         "0,3");
	rmq_numa_close(&n);
}
END_TEST

/* CPUs partly on this machine: the ones it has, and the why says so. */
START_TEST(test_policy_cpuset_partly_outside)
{
	struct rmq_numa_place pl;
	struct fake_info      f;
	struct rmq_numa       n;

	open_xml(&n, XML_TWO);
	choose_cpuset(&n, fake_pci(&f, 0, 0x01, 0, 0, NULL), "3-5,9", &pl);
	ck_assert_int_eq(pl.node, 1);
	ck_assert_str_eq(pl.nodeset, "1");
	ck_assert_str_eq(pl.cpuset, "3");
	ck_assert_str_eq(pl.why, "policy cpuset 3-5,9 from the config (CPUs "
	                         "4-5,9 not here: using 3): node 1");
	rmq_numa_close(&n);
}
END_TEST

/*
 * None of the CPUs here: not an error (one file may serve machines of
 * several shapes) but auto, and the reason says so.
 */
START_TEST(test_policy_cpuset_outside)
{
	struct rmq_numa_place pl;
	struct fake_info      f;
	struct rmq_numa       n;

	open_xml(&n, XML_TWO);
	choose_cpuset(&n, fake_pci(&f, 0, 0x81, 0, 0, NULL), "8-11", &pl);
	ck_assert_int_eq(pl.node, 1);
	ck_assert_str_eq(pl.nodeset, "1");
	ck_assert_str_eq(pl.cpuset, "2-3"); /* auto's: the NIC's node */
	ck_assert_str_eq(pl.why, "policy cpuset 8-11 from the config: none of "
	                         "these CPUs here (CPUs 0-3); as auto: NIC "
	                         "0000:81:00.0 (mlx5_0) is on node 1");
	/* ... and no NIC: auto does not know either. */
	choose_cpuset(&n, fake_no_nic(&f, "shm"), "8", &pl);
	ck_assert_int_eq(pl.node, -1);
	ck_assert_str_eq(pl.nodeset, "");
	ck_assert_str_eq(pl.cpuset, "");
	ck_assert_str_eq(pl.mem, "first touch (no node)");
	ck_assert_msg(starts_with(pl.why, "policy cpuset 8 from the config: "
	                                  "none of these CPUs here (CPUs "
	                                  "0-3); as auto: no NIC"),
	              "%s", pl.why);
	rmq_numa_close(&n);
}
END_TEST

/* Policy cpuset without CPUs (rmq_ctx_new refuses it): auto, no crash. */
START_TEST(test_policy_cpuset_empty)
{
	struct rmq_numa_place pl;
	struct fake_info      f;
	struct rmq_numa       n;

	open_xml(&n, XML_TWO);
	choose_cpuset(&n, fake_pci(&f, 0, 0x81, 0, 0, NULL), "", &pl);
	ck_assert_int_eq(pl.node, 1);
	ck_assert_str_eq(pl.cpuset, "2-3");
	ck_assert_str_eq(pl.why, "policy cpuset without numa.cpuset; as auto: "
	                         "NIC 0000:81:00.0 (mlx5_0) is on node 1");
	choose_cpuset(&n, fake_pci(&f, 0, 0x81, 0, 0, NULL), NULL, &pl);
	ck_assert_int_eq(pl.node, 1);
	ck_assert_str_eq(pl.why, "policy cpuset without numa.cpuset; as auto: "
	                         "NIC 0000:81:00.0 (mlx5_0) is on node 1");
	/* Not a list (the schema checks it; this must not crash either). */
	choose_cpuset(&n, fake_pci(&f, 0, 0x81, 0, 0, NULL), "two", &pl);
	ck_assert_int_eq(pl.node, 1);
	ck_assert_msg(starts_with(pl.why, "policy cpuset 'two' from the "
	                                  "config: not a CPU list; as auto: "
	                                  "NIC"),
	              "%s", pl.why);
	rmq_numa_close(&n);
}
END_TEST

/* Policy cpuset without a topology: first touch, as the others. */
START_TEST(test_policy_cpuset_no_topology)
{
	struct rmq_numa_place pl;
	struct fake_info      f;
	struct rmq_numa       n;

	ck_assert_int_lt(rmq_numa_open(&n, RMQ_TEST_DATA_DIR "/none.xml"), 0);
	choose_cpuset(&n, fake_pci(&f, 0, 0x81, 0, 0, NULL), "0", &pl);
	ck_assert_int_eq(pl.node, -1);
	ck_assert(!pl.bind);
	ck_assert_str_eq(pl.cpuset, "");
	ck_assert_msg(starts_with(pl.why, "no hwloc topology ("), "%s",
	              pl.why);
	ck_assert_str_eq(pl.mem, "first touch (no topology)");
	choose_cpuset(NULL, NULL, "0", &pl);
	ck_assert_str_eq(pl.why, "no hwloc topology (not loaded)");
	rmq_numa_close(&n);
}
END_TEST

/* A node chosen in an XML topology is never bound to on this machine. */
START_TEST(test_alloc_xml_first_touch)
{
	struct rmq_numa_place pl;
	struct rmq_numa_mem   m = {0};
	struct fake_info      f;
	struct rmq_numa       n;
	uint8_t              *p;

	open_xml(&n, XML_TWO);
	choose(&n, fake_pci(&f, 0, 0x81, 0, 0, NULL), &pl);
	ck_assert_int_eq(pl.node, 1);
	p = rmq_numa_alloc(&n, &pl, 100000, &m);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq((uintptr_t) p % 4096, 0);
	ck_assert_int_eq(m.how, RMQ_NUMA_MEM_FIRST_TOUCH);
	ck_assert_uint_eq(m.len, 100000);
	ck_assert_uint_eq(atomic_load(&n.nfirst_touch), 1);
	ck_assert_uint_eq(atomic_load(&n.nbound), 0);
	memset(p, 0xa5, 100000);
	ck_assert_int_eq(rmq_numa_where(&n, p, 100000), -1); /* unknowable */
	rmq_numa_free(p, &m);
	ck_assert_int_eq(m.how, RMQ_NUMA_MEM_NONE);
	rmq_numa_free(NULL, &m); /* harmless */
	rmq_numa_close(&n);
}
END_TEST

/*
 * (f) This machine: the caller's node (the only one here), and the pages
 * really are there.  Bound when hwloc can bind here; if it cannot, the
 * fallback is what is checked, and the log says so.
 */
START_TEST(test_alloc_real_caller_node)
{
	const struct hwloc_topology_support *sup;
	struct rmq_numa_place                pl;
	struct rmq_numa_mem                  m = {0};
	struct fake_info                     f;
	struct rmq_numa                      n;
	hwloc_membind_policy_t               pol;
	hwloc_bitmap_t                       set;
	size_t                               len = 1 << 20;
	uint8_t                             *p;
	bool                                 can;

	ck_assert_int_eq(rmq_numa_open(&n, NULL), 0);
	ck_assert(n.thissystem);
	choose(&n, fake_no_nic(&f, "shm"), &pl);
	ck_assert_msg(pl.node >= 0, "%s", pl.why);
	if (n.nnodes == 1) {
		ck_assert_int_eq(pl.node,
		                 (int) hwloc_get_obj_by_type(
		                     n.topo, HWLOC_OBJ_NUMANODE, 0)->os_index);
		ck_assert_msg(strstr(pl.why, "the calling thread's node") !=
		                  NULL,
		              "%s", pl.why);
	}
	sup = hwloc_topology_get_support(n.topo);
	can = sup->membind->set_area_membind && sup->membind->bind_membind;
	ck_assert_int_eq(n.can_bind, can);
	p = rmq_numa_alloc(&n, &pl, len, &m);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq((uintptr_t) p % 4096, 0);
	memset(p, 0x5a, len);
	ck_assert_int_eq(rmq_numa_where(&n, p, len), pl.node);
	if (can) {
		ck_assert_int_eq(m.how, RMQ_NUMA_MEM_BOUND);
		ck_assert_uint_eq(atomic_load(&n.nbound), 1);
		ck_assert_msg(starts_with(pl.mem, "bound to node"), "%s",
		              pl.mem);
		/* The policy is on the pages, not just luck. */
		set = hwloc_bitmap_alloc();
		ck_assert_int_eq(hwloc_get_area_membind(n.topo, p, len, set,
		                                        &pol,
		                                        HWLOC_MEMBIND_BYNODESET),
		                 0);
		ck_assert_int_eq(hwloc_bitmap_weight(set), 1);
		ck_assert_int_eq(hwloc_bitmap_first(set), pl.node);
		hwloc_bitmap_free(set);
	} else {
		fprintf(stderr, "check_numa: hwloc cannot bind memory here "
		        "(set_area_membind %d, bind_membind %d): checking the "
		        "first-touch fallback\n",
		        sup->membind->set_area_membind,
		        sup->membind->bind_membind);
		ck_assert_int_eq(m.how, RMQ_NUMA_MEM_FIRST_TOUCH);
		ck_assert_str_eq(pl.mem,
		                 "first touch (hwloc cannot bind memory here)");
	}
	rmq_numa_free(p, &m);
	rmq_numa_close(&n);
}
END_TEST

/* Lengths that are not a page multiple are rounded for the mapping. */
START_TEST(test_alloc_real_odd_length)
{
	struct rmq_numa_place pl;
	struct rmq_numa_mem   m = {0};
	struct fake_info      f;
	struct rmq_numa       n;
	long                  ps = sysconf(_SC_PAGESIZE);
	uint8_t              *p;

	ck_assert_int_eq(rmq_numa_open(&n, NULL), 0);
	choose(&n, fake_no_nic(&f, "shm"), &pl);
	p = rmq_numa_alloc(&n, &pl, 1000, &m);
	ck_assert_ptr_nonnull(p);
	memset(p, 1, 1000);
	if (m.how == RMQ_NUMA_MEM_BOUND)
		ck_assert_uint_eq(m.len, (size_t) ps);
	else
		ck_assert_uint_eq(m.len, 1000);
	ck_assert_int_eq(rmq_numa_where(&n, p, 1000), pl.node);
	rmq_numa_free(p, &m);
	rmq_numa_close(&n);
}
END_TEST

/* policy off on this machine: first touch, still somewhere real. */
START_TEST(test_alloc_real_policy_off)
{
	struct rmq_numa_place pl;
	struct rmq_numa_mem   m = {0};
	struct fake_info      f;
	struct rmq_numa       n;
	uint8_t              *p;

	ck_assert_int_eq(rmq_numa_open(&n, NULL), 0);
	ck_assert_int_eq(rmq_numa_choose(&n, fake_no_nic(&f, "shm"),
	                                 RMQ_CFG_NUMA_OFF, -1, NULL, &pl),
	                 0);
	p = rmq_numa_alloc(&n, &pl, 65536, &m);
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(m.how, RMQ_NUMA_MEM_FIRST_TOUCH);
	ck_assert_uint_eq(atomic_load(&n.nbound), 0);
	if (n.nnodes == 1)
		ck_assert_int_ge(rmq_numa_where(&n, p, 65536), 0);
	rmq_numa_free(p, &m);
	rmq_numa_close(&n);
}
END_TEST

/* A thread that waits for the test to be done with it. */
static void *
idle_main(void *arg)
{
	pthread_barrier_wait(arg);
	return NULL;
}

/*
 * Policy cpuset "0" on this machine: the pages are on CPU 0's node, and a
 * thread bound with the choice runs on CPU 0 alone, not on the node.
 */
START_TEST(test_alloc_real_policy_cpuset)
{
	const struct hwloc_topology_support *sup;
	struct rmq_numa_place                pl;
	struct rmq_numa_mem                  m = {0};
	struct fake_info                     f;
	struct rmq_numa                      n;
	hwloc_membind_policy_t               pol;
	hwloc_bitmap_t                       set;
	hwloc_obj_t                          pu, node;
	pthread_barrier_t                    bar;
	pthread_t                            th;
	cpu_set_t                            cs;
	size_t                               len = 1 << 20;
	uint8_t                             *p;
	int                                  cpu;

	ck_assert_int_eq(rmq_numa_open(&n, NULL), 0);
	pu = hwloc_get_pu_obj_by_os_index(n.topo, 0);
	ck_assert_ptr_nonnull(pu);
	node = hwloc_get_next_obj_covering_cpuset_by_type(
	    n.topo, pu->cpuset, HWLOC_OBJ_NUMANODE, NULL);
	ck_assert_ptr_nonnull(node);
	choose_cpuset(&n, fake_no_nic(&f, "shm"), "0", &pl);
	ck_assert_int_eq(pl.node, (int) node->os_index);
	ck_assert_str_eq(pl.cpuset, "0");
	ck_assert_msg(starts_with(pl.why, "policy cpuset 0 from the config: "
	                                  "node "),
	              "%s", pl.why);

	p = rmq_numa_alloc(&n, &pl, len, &m);
	ck_assert_ptr_nonnull(p);
	memset(p, 0x3c, len);
	ck_assert_int_eq(rmq_numa_where(&n, p, len), pl.node);
	if (n.can_bind) {
		ck_assert_int_eq(m.how, RMQ_NUMA_MEM_BOUND);
		set = hwloc_bitmap_alloc();
		ck_assert_int_eq(hwloc_get_area_membind(n.topo, p, len, set,
		                                        &pol,
		                                        HWLOC_MEMBIND_BYNODESET),
		                 0);
		ck_assert_int_eq(hwloc_bitmap_weight(set), 1);
		ck_assert_int_eq(hwloc_bitmap_first(set), pl.node);
		hwloc_bitmap_free(set);
	} else {
		ck_assert_int_eq(m.how, RMQ_NUMA_MEM_FIRST_TOUCH);
	}
	rmq_numa_free(p, &m);

	sup = hwloc_topology_get_support(n.topo);
	if (!sup->cpubind->set_thread_cpubind) {
		fprintf(stderr, "skip: hwloc cannot bind threads here\n");
		rmq_numa_close(&n);
		return;
	}
	ck_assert_int_eq(pthread_barrier_init(&bar, NULL, 2), 0);
	ck_assert_int_eq(pthread_create(&th, NULL, idle_main, &bar), 0);
	ck_assert_int_eq(rmq_numa_bind_thread(&n, &pl, th), 0);
	ck_assert_int_eq(pthread_getaffinity_np(th, sizeof(cs), &cs), 0);
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++)
		ck_assert_msg((CPU_ISSET(cpu, &cs) != 0) == (cpu == 0),
		              "CPU %d: the affinity is not CPU 0 alone", cpu);
	set = hwloc_bitmap_alloc();
	ck_assert_int_eq(hwloc_get_thread_cpubind(n.topo, th, set, 0), 0);
	ck_assert_int_eq(hwloc_bitmap_weight(set), 1);
	ck_assert_int_eq(hwloc_bitmap_first(set), 0);
	hwloc_bitmap_free(set);
	pthread_barrier_wait(&bar);
	pthread_join(th, NULL);
	pthread_barrier_destroy(&bar);
	rmq_numa_close(&n);
}
END_TEST

/*
 * The peer: a PAIR socket in a thread on the same context (so that no
 * second process runs under valgrind).  It answers "k" and stays until
 * the test has looked at its own side and says "done".
 */
struct srv {
	rmq_ctx        *ctx;
	const char     *bind;
	char            ep[256];
	int             state; /* 0 starting, 1 bound, -1 failed */
	int             fails;
	pthread_mutex_t lock;
	pthread_cond_t  cond;
};

static void
srv_state(struct srv *t, int state)
{
	pthread_mutex_lock(&t->lock);
	t->state = state;
	pthread_cond_signal(&t->cond);
	pthread_mutex_unlock(&t->lock);
}

static void *
srv_main(void *arg)
{
	struct srv *t = arg;
	rmq_socket *s;
	char        buf[64];
	size_t      len = sizeof(t->ep);

	if (rmq_socket_open(t->ctx, RMQ_PAIR, &s) != 0) {
		srv_state(t, -1);
		return NULL;
	}
	if (rmq_bind(s, t->bind) != 0 ||
	    rmq_getopt(s, RMQ_LAST_ENDPOINT, t->ep, &len) != 0) {
		rmq_close(s);
		srv_state(t, -1);
		return NULL;
	}
	srv_state(t, 1);
	if (rmq_recv(s, buf, sizeof(buf), 0) != 5 ||
	    rmq_send(s, "k", 1, 0) != 1 ||
	    rmq_recv(s, buf, sizeof(buf), 0) != 4)
		t->fails++;
	rmq_close(s);
	return NULL;
}

/* Start the peer on bind and connect a socket of ctx to it. */
static void
srv_start(struct srv *t, pthread_t *th, rmq_ctx *ctx, rmq_socket **s,
          const char *bind)
{
	memset(t, 0, sizeof(*t));
	t->ctx  = ctx;
	t->bind = bind;
	pthread_mutex_init(&t->lock, NULL);
	pthread_cond_init(&t->cond, NULL);
	ck_assert_int_eq(pthread_create(th, NULL, srv_main, t), 0);
	pthread_mutex_lock(&t->lock);
	while (t->state == 0)
		pthread_cond_wait(&t->cond, &t->lock);
	pthread_mutex_unlock(&t->lock);
	ck_assert_int_eq(t->state, 1);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_PAIR, s), 0);
	ck_assert_int_eq(rmq_connect(*s, t->ep), 0);
	ck_assert_int_eq(rmq_send(*s, "hello", 5, 0), 5);
}

static void
srv_stop(struct srv *t, pthread_t th, rmq_socket *s)
{
	ck_assert_int_eq(rmq_send(s, "done", 4, 0), 4);
	ck_assert_int_eq(rmq_close(s), 0);
	pthread_join(th, NULL);
	ck_assert_int_eq(t->fails, 0);
	pthread_mutex_destroy(&t->lock);
	pthread_cond_destroy(&t->cond);
}

/*
 * A socket's slabs, send slots and its peer's ring go on the domain's
 * node.
 */
START_TEST(test_socket_memory_placed)
{
	struct rmq_socket *s;
	struct rmq_slab   *sl;
	struct rmq_peer   *p = NULL;
	struct srv         t;
	pthread_t          th;
	rmq_ctx           *ctx;
	rmq_msg           *msg;
	size_t             ring_len;
	void              *ring;
	struct rmq_numa_mem ring_mem;
	int                i, want, nslabs = 0;

	/* The provider's slabs and ring are what this looks at. */
	setenv("RMQ_LOCAL", "0", 1);
	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	srv_start(&t, &th, ctx, &s, "tcp://127.0.0.1:0");
	ck_assert_int_eq(rmq_msg_recv(s, &msg, 0), 0);
	ck_assert_uint_eq(rmq_msg_size(msg), 1);

	ck_assert_msg(s->dom->place.node >= 0, "%s", s->dom->place.why);
	want = ctx->numa.can_bind ? RMQ_NUMA_MEM_BOUND
	                          : RMQ_NUMA_MEM_FIRST_TOUCH;
	for (sl = s->slabs; sl != NULL; sl = sl->next, nslabs++) {
		ck_assert_int_eq(sl->mem.how, want);
		ck_assert_int_eq(rmq_numa_where(&ctx->numa, sl->buf, sl->size),
		                 s->dom->place.node);
	}
	ck_assert_int_ge(nslabs, 1);
	ck_assert_int_eq(s->ps->tx.blocks->numa.how, want);
	for (i = 0; i < s->peers->cap && p == NULL; i++)
		p = rmq_peer_at(s, i);
	ck_assert_ptr_nonnull(p);
	/* tcp has the ring path */
	ck_assert(rmq_ring_rx_area(p, &ring, &ring_len, &ring_mem));
	ck_assert_int_eq(ring_mem.how, want);
	ck_assert_int_eq(rmq_numa_where(&ctx->numa, ring, ring_len),
	                 s->dom->place.node);
	/* Ours and the peer's: slabs, tx slots and rings, all bound. */
	if (want == RMQ_NUMA_MEM_BOUND)
		ck_assert_uint_ge(atomic_load(&ctx->numa.nbound),
		                  (unsigned) nslabs + 2);
	else
		ck_assert_uint_eq(atomic_load(&ctx->numa.nbound), 0);

	/* tcp: one message per receive, copied out so that the receive
	 * goes up again at once (lib/paths/tx.c, rmq_rx_keep). */
	ck_assert(!s->dom->caps.multi_recv);
	ck_assert_int_eq(msg->kind, RMQ_MSGK_HEAP);
	srv_stop(&t, th, s);
	ck_assert_int_eq(rmq_ctx_destroy(ctx), 0);
	ck_assert_int_eq(((char *) rmq_msg_data(msg))[0], 'k');
	rmq_msg_free(msg);
}
END_TEST

/*
 * Where receives are multi-recv slabs (sockets here), a message taken
 * zero-copy points into its slab, which is on the domain's node and
 * outlives the socket and the context, freed without them.
 */
START_TEST(test_msg_slab_outlives_socket)
{
	struct rmq_socket *s;
	struct srv         t;
	pthread_t          th;
	rmq_ctx           *ctx;
	rmq_msg           *msg;
	int                want;

	setenv("RMQ_LOCAL", "0", 1);
	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	srv_start(&t, &th, ctx, &s, "sockets://127.0.0.1:0");
	ck_assert_int_eq(rmq_msg_recv(s, &msg, 0), 0);
	ck_assert_uint_eq(rmq_msg_size(msg), 1);
	want = ctx->numa.can_bind ? RMQ_NUMA_MEM_BOUND
	                          : RMQ_NUMA_MEM_FIRST_TOUCH;
	ck_assert(s->dom->caps.multi_recv);
	ck_assert_int_eq(msg->kind, RMQ_MSGK_SLAB);
	ck_assert_int_eq(msg->slab->mem.how, want);
	srv_stop(&t, th, s);
	ck_assert_int_eq(rmq_ctx_destroy(ctx), 0);
	/* The slab is the message's alone now; valgrind checks this. */
	ck_assert_int_eq(((char *) rmq_msg_data(msg))[0], 'k');
	rmq_msg_free(msg);
}
END_TEST

/* numa.policy off in a context: no topology loaded, first touch. */
START_TEST(test_socket_policy_off)
{
	struct rmq_socket *s;
	struct srv         t;
	pthread_t          th;
	rmq_ctx           *ctx;
	char               buf[8];

	setenv("RMQ_NUMA_POLICY", "off", 1);
	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	unsetenv("RMQ_NUMA_POLICY");
	ck_assert_int_eq(ctx->cfg.numa_policy, RMQ_CFG_NUMA_OFF);
	srv_start(&t, &th, ctx, &s, "tcp://127.0.0.1:0");
	ck_assert_int_eq(rmq_recv(s, buf, sizeof(buf), 0), 1);
	ck_assert_ptr_null(ctx->numa.topo);
	ck_assert_int_eq(s->dom->place.node, -1);
	ck_assert_str_eq(s->dom->place.why, "policy off (numa.policy)");
	ck_assert_int_eq(s->slabs->mem.how, RMQ_NUMA_MEM_FIRST_TOUCH);
	ck_assert_uint_eq(atomic_load(&ctx->numa.nbound), 0);
	ck_assert_uint_gt(atomic_load(&ctx->numa.nfirst_touch), 0);
	srv_stop(&t, th, s);
	ck_assert_int_eq(rmq_ctx_destroy(ctx), 0);
}
END_TEST

#else /* !RMQ_HAVE_HWLOC */

/* Built without hwloc: every placement is "none", memory first touch. */
START_TEST(test_no_hwloc)
{
	struct rmq_numa_place pl;
	struct rmq_numa_mem   m = {0};
	struct fake_info      f;
	struct rmq_numa       n;
	void                 *p;

	ck_assert_int_eq(rmq_numa_open(&n, XML_TWO), -RMQ_ENOTSUP);
	ck_assert_str_eq(n.err, "built without hwloc");
	ck_assert_int_eq(rmq_numa_choose(&n, fake_pci(&f, 0, 0x81, 0, 0, NULL),
	                                 RMQ_CFG_NUMA_AUTO, -1, NULL, &pl),
	                 0);
	ck_assert_int_eq(pl.node, -1);
	ck_assert_str_eq(pl.why, "built without hwloc");
	p = rmq_numa_alloc(&n, &pl, 4096, &m);
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(m.how, RMQ_NUMA_MEM_FIRST_TOUCH);
	ck_assert_int_eq(rmq_numa_where(&n, p, 4096), -1);
	rmq_numa_free(p, &m);
	rmq_numa_close(&n);
}
END_TEST

#endif /* RMQ_HAVE_HWLOC */

/* A zeroed struct rmq_numa (a context before its first domain). */
START_TEST(test_zeroed_numa)
{
	struct rmq_numa_place pl;
	struct rmq_numa_mem   m = {0};
	struct rmq_numa       n;
	void                 *p;

	memset(&n, 0, sizeof(n));
	ck_assert_int_eq(rmq_numa_choose(&n, NULL, RMQ_CFG_NUMA_AUTO, -1, NULL,
	                                 &pl),
	                 0);
	ck_assert_int_eq(pl.node, -1);
	p = rmq_numa_alloc(&n, &pl, 8192, &m);
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(m.how, RMQ_NUMA_MEM_FIRST_TOUCH);
	rmq_numa_free(p, &m);
	p = rmq_numa_alloc(NULL, NULL, 8192, &m);
	ck_assert_ptr_nonnull(p);
	rmq_numa_free(p, &m);
	rmq_numa_close(&n);
}
END_TEST

#if RMQ_HAVE_HWLOC
/*
 * progress: thread -- the thread is pinned to the CPUs of the first
 * domain's node (here the caller's: shm has no NIC), exactly those.
 */
START_TEST(test_progress_thread_pinned)
{
	const struct hwloc_topology_support *sup;
	rmq_ctx                             *ctx;
	rmq_socket                          *s;
	hwloc_bitmap_t                       want;
	cpu_set_t                            cs;
	int                                  cpu;

	setenv("RMQ_PROGRESS_MODE", "thread", 1);
	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	unsetenv("RMQ_PROGRESS_MODE");
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_PAIR, &s), 0);
	ck_assert_int_eq(rmq_bind(s, "shm://127.0.0.1:0"), 0);
	ck_assert_ptr_nonnull(ctx->numa.topo);
	sup = hwloc_topology_get_support(ctx->numa.topo);
	if (!sup->cpubind->set_thread_cpubind) {
		fprintf(stderr, "skip: hwloc cannot bind threads here\n");
		close_all(ctx, s);
		return;
	}
	ck_assert(ctx->progress.pinned);
	ck_assert_str_ne(s->dom->place.cpuset, "");
	want = hwloc_bitmap_alloc();
	ck_assert_int_eq(hwloc_bitmap_list_sscanf(want, s->dom->place.cpuset),
	                 0);
	ck_assert_int_eq(pthread_getaffinity_np(ctx->progress.thr, sizeof(cs), &cs), 0);
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++)
		ck_assert_msg((CPU_ISSET(cpu, &cs) != 0) ==
		                  (hwloc_bitmap_isset(want, (unsigned) cpu) != 0),
		              "CPU %d: affinity and cpuset %s disagree", cpu,
		              s->dom->place.cpuset);
	hwloc_bitmap_free(want);
	close_all(ctx, s);
}
END_TEST

/*
 * progress: thread with numa.policy cpuset -- the context hands
 * numa.cpuset down: the thread runs on those CPUs, not the whole node.
 */
START_TEST(test_progress_thread_pinned_cpuset)
{
	const struct hwloc_topology_support *sup;
	rmq_ctx                             *ctx;
	rmq_socket                          *s;
	cpu_set_t                            cs;
	int                                  cpu;

	setenv("RMQ_PROGRESS_MODE", "thread", 1);
	setenv("RMQ_NUMA_POLICY", "cpuset", 1);
	setenv("RMQ_NUMA_CPUSET", "0", 1);
	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	unsetenv("RMQ_PROGRESS_MODE");
	unsetenv("RMQ_NUMA_POLICY");
	unsetenv("RMQ_NUMA_CPUSET");
	ck_assert_int_eq(ctx->cfg.numa_policy, RMQ_CFG_NUMA_CPUSET);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_PAIR, &s), 0);
	ck_assert_int_eq(rmq_bind(s, "shm://127.0.0.1:0"), 0);
	ck_assert_ptr_nonnull(ctx->numa.topo);
	ck_assert_str_eq(s->dom->place.cpuset, "0");
	ck_assert_msg(starts_with(s->dom->place.why, "policy cpuset 0 from "
	                                             "the config: node "),
	              "%s", s->dom->place.why);
	sup = hwloc_topology_get_support(ctx->numa.topo);
	if (!sup->cpubind->set_thread_cpubind) {
		fprintf(stderr, "skip: hwloc cannot bind threads here\n");
		close_all(ctx, s);
		return;
	}
	ck_assert(ctx->progress.pinned);
	ck_assert_int_eq(pthread_getaffinity_np(ctx->progress.thr, sizeof(cs), &cs), 0);
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++)
		ck_assert_msg((CPU_ISSET(cpu, &cs) != 0) == (cpu == 0),
		              "CPU %d: the affinity is not CPU 0 alone", cpu);
	close_all(ctx, s);
}
END_TEST
#endif

static Suite *
numa_suite(void)
{
	Suite *s  = suite_create("numa");
	TCase *tc = tcase_create("numa");

	tcase_set_timeout(tc, 60);
#if RMQ_HAVE_HWLOC
	tcase_add_test(tc, test_open_xml);
	tcase_add_test(tc, test_open_missing_xml);
	tcase_add_test(tc, test_choose_nic_node1);
	tcase_add_test(tc, test_choose_nic_name_from_topology);
	tcase_add_test(tc, test_choose_several_nics);
	tcase_add_test(tc, test_choose_nic_spans_nodes);
	tcase_add_test(tc, test_choose_no_nic_caller_unknown);
	tcase_add_test(tc, test_choose_no_nic_caller_node);
	tcase_add_test(tc, test_choose_no_nic_one_node);
	tcase_add_test(tc, test_choose_nic_not_in_topology);
	tcase_add_test(tc, test_choose_nic_not_pci);
	tcase_add_test(tc, test_choose_by_domain_name);
	tcase_add_test(tc, test_policy_off);
	tcase_add_test(tc, test_policy_node);
	tcase_add_test(tc, test_policy_node_out_of_range);
	tcase_add_test(tc, test_policy_cpuset_one_node);
	tcase_add_test(tc, test_policy_cpuset_two_nodes);
	tcase_add_test(tc, test_policy_cpuset_partly_outside);
	tcase_add_test(tc, test_policy_cpuset_outside);
	tcase_add_test(tc, test_policy_cpuset_empty);
	tcase_add_test(tc, test_policy_cpuset_no_topology);
	tcase_add_test(tc, test_alloc_xml_first_touch);
	tcase_add_test(tc, test_alloc_real_caller_node);
	tcase_add_test(tc, test_alloc_real_odd_length);
	tcase_add_test(tc, test_alloc_real_policy_off);
	tcase_add_test(tc, test_alloc_real_policy_cpuset);
	tcase_add_test(tc, test_socket_memory_placed);
	tcase_add_test(tc, test_msg_slab_outlives_socket);
	tcase_add_test(tc, test_socket_policy_off);
	tcase_add_test(tc, test_progress_thread_pinned);
	tcase_add_test(tc, test_progress_thread_pinned_cpuset);
#else
	tcase_add_test(tc, test_no_hwloc);
#endif
	tcase_add_test(tc, test_zeroed_numa);
	suite_add_tcase(s, tc);
	return s;
}

RMQ_CHECK_MAIN(numa_suite)
