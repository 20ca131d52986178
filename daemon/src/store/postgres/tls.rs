//! TLS to PostgreSQL, chosen by the URL's `sslmode` as libpq chooses it:
//!
//! | `sslmode` | encrypted | server certificate checked |
//! |---|---|---|
//! | `disable` | never | — |
//! | `prefer` (default) | when the server offers it | no |
//! | `require` | always | no (protects against eavesdropping only) |
//! | `verify-ca` | always | signed by `sslrootcert` |
//! | `verify-full` | always | signed by `sslrootcert` and names the host |
//!
//! `sslrootcert` is a PEM file of CA certificates, or `system` for the
//! operating system's store; the verifying modes need it. TLS runs over
//! TCP only: PostgreSQL does not speak it on a Unix socket.

use std::path::Path;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};
use tokio_postgres_rustls::MakeRustlsConnect;

use super::PgError;
use crate::config::SslMode;

/// The connector for `mode`, the roots read from `root_cert` (a PEM file,
/// or `system`) when the mode verifies.
pub fn connector(mode: SslMode, root_cert: Option<&str>) -> Result<MakeRustlsConnect, PgError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| PgError::Invalid(format!("TLS to PostgreSQL: {e}")))?;
    let verifier: Arc<dyn ServerCertVerifier> = if mode.verifies() {
        let roots = roots(root_cert.ok_or_else(|| {
            PgError::Invalid(
                "sslmode=verify-ca and verify-full need sslrootcert=FILE (PEM CA certificates) \
                 or sslrootcert=system"
                    .into(),
            )
        })?)?;
        let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
            .build()
            .map_err(|e| PgError::Invalid(format!("TLS to PostgreSQL: {e}")))?;
        if mode == SslMode::VerifyFull {
            webpki
        } else {
            Arc::new(AnyName(webpki))
        }
    } else {
        Arc::new(Unchecked(provider))
    };
    let config = builder
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    Ok(MakeRustlsConnect::new(config))
}

/// The CA certificates in `source`: a PEM file, or `system`.
fn roots(source: &str) -> Result<RootCertStore, PgError> {
    let mut roots = RootCertStore::empty();
    let certs: Vec<CertificateDer<'static>> = if source == "system" {
        let found = rustls_native_certs::load_native_certs();
        if found.certs.is_empty() {
            return Err(PgError::Invalid(format!(
                "sslrootcert=system: no CA certificates in the system's store ({} errors)",
                found.errors.len()
            )));
        }
        found.certs
    } else {
        let path = Path::new(source);
        CertificateDer::pem_file_iter(path)
            .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
            .map_err(|e| PgError::Invalid(format!("sslrootcert {}: {e}", path.display())))?
    };
    let (added, _) = roots.add_parsable_certificates(certs);
    if added == 0 {
        return Err(PgError::Invalid(format!(
            "sslrootcert {source}: no usable CA certificate in it"
        )));
    }
    Ok(roots)
}

/// `verify-ca`: the chain is checked, the name is not (libpq's meaning).
#[derive(Debug)]
struct AnyName(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// `prefer` and `require`: any certificate is taken (libpq's meaning: the
/// link is encrypted, the server not authenticated); the handshake's
/// signatures are still checked.
#[derive(Debug)]
struct Unchecked(Arc<CryptoProvider>);

impl ServerCertVerifier for Unchecked {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
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
        verify_tls13_signature(
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verifying_modes_need_roots_that_exist() {
        let e = connector(SslMode::VerifyFull, None).err().unwrap();
        assert!(e.to_string().contains("sslrootcert"), "{e}");
        let e = connector(SslMode::VerifyCa, Some("/nonexistent/ca.pem"))
            .err()
            .unwrap();
        assert!(e.to_string().contains("/nonexistent/ca.pem"), "{e}");
        assert!(connector(SslMode::Require, None).is_ok());
    }
}
