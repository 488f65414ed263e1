/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The TLS transport of a client linked without it (the lean client):
 * tls: servers are refused.  main-lean.c hands them to
 * modsign-client-full before any connection, so this is only the
 * stand-in that keeps libssl out of the link.
 */
#include <errno.h>

#include "conn-internal.h"
#include "macro.h"

int conn_open_tls(struct conn *c _unused_, const char *host_port _unused_,
		  const struct conn_tls *tls _unused_, const char **ret_err)
{
	*ret_err = "tls: servers need modsign-client-full";
	return -EPROTONOSUPPORT;
}
