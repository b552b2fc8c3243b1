//! What an https notice target's certificate may chain to: a root of the system's store (as
//! `rustls-native-certs` finds it: `SSL_CERT_FILE` / `SSL_CERT_DIR`, else the distribution's
//! bundle) or a certificate of `--notify-ca`. The configuration is rustls with the `ring`
//! provider (the one NATS uses), made for the notices' client alone: nothing process-wide is set.

use rustls::pki_types::{CertificateDer, pem::PemObject};
use rustls::{ClientConfig, RootCertStore, crypto};
use std::path::Path;
use std::sync::Arc;

/// How many roots a TLS configuration trusts, and from where.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Roots {
    pub system: usize,
    pub extra: usize,
}

/// The TLS configuration of https targets: TLS 1.3 and 1.2, trusting the system's roots and the
/// certificates of the PEM file `ca`; and how many of each. An error when `ca` cannot be read
/// or holds no certificate, or when no root is trusted at all.
pub fn config(ca: Option<&Path>) -> Result<(ClientConfig, Roots), String> {
    let mut roots = RootCertStore::empty();
    let native = rustls_native_certs::load_native_certs();
    let (system, _) = roots.add_parsable_certificates(native.certs);
    for error in &native.errors {
        tracing::warn!(%error, "loading the system's root certificates for https notices");
    }
    let mut extra = 0;
    if let Some(ca) = ca {
        let shown = ca.display();
        let certs = CertificateDer::pem_file_iter(ca)
            .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
            .map_err(|e| format!("--notify-ca {shown}: {e}"))?;
        if certs.is_empty() {
            return Err(format!("--notify-ca {shown} holds no PEM certificate"));
        }
        for cert in certs {
            roots
                .add(cert)
                .map_err(|e| format!("--notify-ca {shown}: {e}"))?;
            extra += 1;
        }
    }
    if roots.is_empty() {
        let why = native
            .errors
            .first()
            .map(|e| format!(" ({e})"))
            .unwrap_or_default();
        return Err(format!(
            "an https --notify target, and no root certificate to check it with: the system's \
             store is empty or missing{why}; install the CA certificates (ca-certificates), \
             point SSL_CERT_FILE at a bundle, or give --notify-ca FILE"
        ));
    }
    Ok((trusting(roots)?, Roots { system, extra }))
}

/// A configuration of its own `ring` provider trusting `roots`. No ALPN: hyper-rustls wants
/// none given, and offers none for HTTP/1.1 alone (servers take that as HTTP/1.1).
pub fn trusting(roots: RootCertStore) -> Result<ClientConfig, String> {
    Ok(
        ClientConfig::builder_with_provider(Arc::new(crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS: {e}"))?
            .with_root_certificates(roots)
            .with_no_client_auth(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/tls")
            .join(name)
    }

    #[test]
    fn the_config_trusts_the_given_ca_besides_the_system_with_its_own_provider() {
        let (config, roots) = config(Some(&fixture("ca.pem"))).unwrap();
        assert_eq!(roots.extra, 1);
        // Its own provider, whatever the process's default is (none is set).
        assert!(
            config
                .crypto_provider()
                .cipher_suites
                .iter()
                .any(|s| s.version().version == rustls::ProtocolVersion::TLSv1_3)
        );
    }

    #[test]
    fn a_ca_file_without_a_certificate_is_refused() {
        let missing = config(Some(&fixture("absent.pem"))).unwrap_err();
        assert!(missing.starts_with("--notify-ca "), "{missing}");
        // A key is PEM, but no certificate.
        let key = config(Some(&fixture("server.key"))).unwrap_err();
        assert!(key.contains("holds no PEM certificate"), "{key}");
    }

    #[test]
    fn rustls_is_built_with_one_provider_which_async_nats_tls_then_picks() {
        // async-nats's TLS (a tls:// NATS URL) calls this, which panics when rustls has two
        // providers (aws-lc-rs beside ring) and none is installed process-wide.
        let _ = ClientConfig::builder();
    }
}
