//! TLS for PostgreSQL connections, with rustls (ring): `sslmode` as libpq reads it, except
//! `verify-ca`, which is not offered (`verify-full` checks the chain and the host name).
//!
//! - `disable`: no TLS;
//! - `prefer` (the default) and `require`: TLS (`prefer` goes on without it when the server
//!   offers none), the server's certificate not checked, as libpq does for these modes;
//! - `verify-full`: TLS, the certificate checked against `sslrootcert` (a PEM file) or, without
//!   it, Mozilla's roots, and the host name against the certificate.

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use std::sync::Arc;
use tokio_postgres::config::SslMode;
pub use tokio_postgres_rustls::MakeRustlsConnect;

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The mode and connector of `sslmode` `mode` (with `sslrootcert` `root_cert`).
///
/// # Errors
///
/// An unknown mode, or a root certificate file that cannot be read.
pub fn connector(
    mode: &str,
    root_cert: Option<&str>,
) -> Result<(SslMode, MakeRustlsConnect), String> {
    let ssl = crate::ssl_mode_of(mode).ok_or_else(|| {
        format!("sslmode is disable, prefer, require or verify-full, not `{mode}`")
    })?;
    let builder = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?;
    let config = if mode == "verify-full" {
        let mut roots = RootCertStore::empty();
        match root_cert {
            Some(path) => {
                let certs = CertificateDer::pem_file_iter(path)
                    .and_then(|i| i.collect::<Result<Vec<_>, _>>())
                    .map_err(|e| format!("sslrootcert {path}: {e}"))?;
                let (added, _) = roots.add_parsable_certificates(certs);
                if added == 0 {
                    return Err(format!("sslrootcert {path}: no certificate in it"));
                }
            }
            None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
        }
        builder.with_root_certificates(roots).with_no_client_auth()
    } else {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(Unchecked(provider())))
            .with_no_client_auth()
    };
    Ok((ssl, MakeRustlsConnect::new(config)))
}

/// Accepts any server certificate (`prefer`, `require`): the connection is encrypted, the
/// server not authenticated. Signatures are still checked.
#[derive(Debug)]
struct Unchecked(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for Unchecked {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
