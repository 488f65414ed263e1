/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <openssl/err.h>

#include "tlsgroups.h"

int tlsgroups_set(SSL_CTX *ctx, const struct sslcalls *ssl)
{
	/* SSL_CTX_set1_groups_list(ctx, TLSGROUPS_LIST), spelt out */
	if (ssl->ctx_ctrl(ctx, SSL_CTRL_SET_GROUPS_LIST, 0, (char *)TLSGROUPS_LIST) == 1)
		return 0;
	ERR_clear_error();
	return -EINVAL;
}
