/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef MODSIGN_CLIENT_VERIFY_H
#define MODSIGN_CLIENT_VERIFY_H

/* A module signature that failed the kernel's rules (pkcs7_verify_module()'s
 * @r), in words: for verify, and for attach and sign-file -s, which check
 * a signature before they write it in. */
const char *verify_reason(int r);

#endif
