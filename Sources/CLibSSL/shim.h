#ifndef CLIBSSL_SHIM_H
#define CLIBSSL_SHIM_H
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509_vfy.h>

/* Macros that Swift cannot import directly. */
static inline int clibssl_set_min_tls12(SSL_CTX *ctx) { return (int)SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION); }
static inline int clibssl_set_sni(SSL *ssl, const char *name) { return (int)SSL_set_tlsext_host_name(ssl, name); }
static inline void clibssl_set_peer_verification(SSL_CTX *ctx) { SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL); }
static inline long clibssl_set_mode_auto_retry(SSL_CTX *ctx) { return SSL_CTX_set_mode(ctx, SSL_MODE_AUTO_RETRY); }
#endif
