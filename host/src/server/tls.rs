//! TLS for `weft serve` (issue 28): rustls with ring, the certificate chain and its key read
//! from PEM files, and read again when either file changes, so that a renewed certificate
//! (certbot, cert-manager, a corporate CA's job) is served without a restart. The files are
//! looked at when a handshake comes, at most once a second; a renewal that does not read
//! (a file half written, a key that does not match) keeps the last good pair and is logged,
//! and the next change is tried again. A server does not start with a pair that does not
//! read.

use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// How often a handshake looks whether the files changed.
const LOOK_EVERY: Duration = Duration::from_secs(1);

/// The certificate chain and key files (PEM).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Files {
    /// The certificate chain, the server's first.
    pub cert: PathBuf,
    /// Its private key (PKCS #8, PKCS #1 or SEC1).
    pub key: PathBuf,
}

/// What the files were when last read: each one's modification time and length.
type Stamp = [(Option<SystemTime>, u64); 2];

fn stamp(files: &Files) -> Stamp {
    let one =
        |p: &PathBuf| std::fs::metadata(p).map_or((None, 0), |m| (m.modified().ok(), m.len()));
    [one(&files.cert), one(&files.key)]
}

/// Reads the pair.
///
/// # Errors
///
/// What does not read, naming the file.
pub fn load(files: &Files) -> Result<CertifiedKey, String> {
    let cert = files.cert.display();
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&files.cert)
        .map_err(|e| format!("the certificate file {cert} cannot be read: {e}"))?
        .collect::<Result<_, _>>()
        .map_err(|e| format!("the certificate file {cert} does not read as PEM: {e}"))?;
    if certs.is_empty() {
        return Err(format!(
            "the certificate file {cert} holds no certificate (-----BEGIN CERTIFICATE-----)"
        ));
    }
    let key_path = files.key.display();
    let key = PrivateKeyDer::from_pem_file(&files.key)
        .map_err(|e| format!("the key file {key_path} holds no private key that reads: {e}"))?;
    let signing = rustls::crypto::ring::sign::any_supported_type(&key)
        .map_err(|e| format!("the key in {key_path} cannot sign: {e}"))?;
    let pair = CertifiedKey::new(certs, signing);
    pair.keys_match().map_err(|e| {
        format!("the key in {key_path} is not the key of the certificate in {cert}: {e}")
    })?;
    Ok(pair)
}

/// The pair served, read again when its files change.
#[derive(Debug)]
struct Reloading {
    files: Files,
    current: Mutex<Current>,
}

#[derive(Debug)]
struct Current {
    pair: Arc<CertifiedKey>,
    stamp: Stamp,
    looked: Instant,
}

impl ResolvesServerCert for Reloading {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let mut current = self.current.lock().ok()?;
        if current.looked.elapsed() >= LOOK_EVERY {
            current.looked = Instant::now();
            let now = stamp(&self.files);
            if now != current.stamp {
                current.stamp = now;
                match load(&self.files) {
                    Ok(pair) => {
                        current.pair = Arc::new(pair);
                        tracing::info!(
                            message = "The TLS certificate changed on disk and is served from now on.",
                            cert = %self.files.cert.display()
                        );
                    }
                    Err(e) => tracing::error!(
                        message = "The TLS certificate changed on disk but does not read; the last good one is served until it does.",
                        error = %e
                    ),
                }
            }
        }
        Some(Arc::clone(&current.pair))
    }
}

/// The acceptor of TLS connections for `files`: HTTP/1.1, TLS 1.2 and 1.3, rustls's safe
/// defaults.
///
/// # Errors
///
/// The pair does not read (with why), or the configuration cannot be made.
pub fn acceptor(files: &Files) -> Result<tokio_rustls::TlsAcceptor, String> {
    let pair = load(files)?;
    let resolver = Reloading {
        current: Mutex::new(Current {
            pair: Arc::new(pair),
            stamp: stamp(files),
            looked: Instant::now(),
        }),
        files: files.clone(),
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS cannot be set up: {e}"))?
        .with_no_client_auth()
        .with_cert_resolver(Arc::new(resolver));
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}
