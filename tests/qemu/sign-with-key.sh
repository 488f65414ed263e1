#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# sign-with-key.sh: a MODULE_SIGN_CMD that signs with a named modsignd key
# whose certificate is not the one the kernel was configured with.
#
#	make modules_sign MODULE_SIGN_CMD="sign-with-key.sh CLIENT NAME CERT"
#
# kbuild appends sign-file's arguments, <hash> <key> <x509> <module>, where
# <key> is CONFIG_MODULE_SIG_KEY and <x509> is certs/signing_key.x509, the
# certificate of that key.  This keeps <hash> and <module> and replaces the
# other two with modsign:NAME and CERT, so that "CLIENT sign-file" signs
# with daemon key NAME and still refuses if NAME's certificate is not CERT.
# CERT must be a certificate the kernel trusts (here it is in
# CONFIG_SYSTEM_TRUSTED_KEYS).  When the key is the kernel's own
# CONFIG_MODULE_SIG_KEY, plain MODULE_SIGN_CMD="modsign-client sign-file"
# is enough and this wrapper is not needed.
#
# As a MODULE_SIGN_BATCH_CMD ("sign-with-key.sh CLIENT NAME CERT --batch"),
# kbuild appends <hash> <key> <x509> and the modules are on standard input:
# this calls "CLIENT sign-file --batch" the same way.
if [ $# -eq 7 ] && [ "$4" = --batch ]; then
	exec "$1" sign-file --batch "$5" "modsign:$2" "$3"
fi
if [ $# -ne 7 ]; then
	echo "usage: sign-with-key.sh CLIENT NAME CERT [--batch] <hash> <key> <x509> [<module>]" >&2
	exit 2
fi
exec "$1" sign-file "$4" "modsign:$2" "$3" "$7"
