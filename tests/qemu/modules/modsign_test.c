// SPDX-License-Identifier: GPL-2.0
/*
 * The smallest module the modsign QEMU test loads: it says hello, so the
 * test can see that its init function ran, and carries a marker string
 * that the tamper case changes one byte of.
 */
#include <linux/module.h>
#include <linux/printk.h>

static const char modsign_marker[] = "MODSIGN-TAMPER-TARGET";

static int __init modsign_test_init(void)
{
	pr_info("modsign_test: init ran (%s)\n", modsign_marker);
	return 0;
}

static void __exit modsign_test_exit(void)
{
}

module_init(modsign_test_init);
module_exit(modsign_test_exit);
MODULE_DESCRIPTION("modsign QEMU test module");
MODULE_LICENSE("GPL");
