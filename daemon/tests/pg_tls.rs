//! TLS to PostgreSQL as the URL's `sslmode` asks, against a real server
//! with a certificate from a test CA: `verify-full` checks chain and name,
//! `verify-ca` the chain alone, `require` encrypts without checking,
//! `disable` does not encrypt; a failed check names the certificate.

mod pg_common;

use pg_common::config_for;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use shortlinkd::config::{Config, DatabaseUrl};
use shortlinkd::store::postgres::{self, PgError};
use testpg::PgCluster;

/// A CA named `name`: its certificate (PEM) and what signs with it.
fn ca(name: &str) -> (String, Issuer<'static, KeyPair>) {
    let mut params = CertificateParams::new(Vec::new()).unwrap();
    params.distinguished_name.push(DnType::CommonName, name);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let key = KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    (cert.pem(), Issuer::new(params, key))
}

/// A server certificate for `name` signed by `issuer`, and its key.
fn server_cert(name: &str, issuer: &Issuer<'static, KeyPair>) -> (String, String) {
    let params = CertificateParams::new(vec![name.to_string()]).unwrap();
    let key = KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, issuer).unwrap();
    (cert.pem(), key.serialize_pem())
}

/// `config`'s URL with `query` appended.
fn with_params(config: &Config, query: &str) -> Config {
    let url = config.database.as_ref().unwrap().to_string();
    Config {
        database: Some(DatabaseUrl::parse(&format!("{url}?{query}")).unwrap()),
        ..config.clone()
    }
}

/// Whether the session `config` opens is encrypted.
async fn encrypted(config: &Config) -> Result<bool, PgError> {
    let pg = postgres::connect(config).await?;
    let row = pg
        .get()
        .await?
        .query_one(
            "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
            &[],
        )
        .await
        .unwrap();
    Ok(row.get(0))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sslmode_encrypts_and_checks_as_libpq_does() {
    let cluster = PgCluster::start("tls");
    let (ca_pem, issuer) = ca("shortlink test CA");
    let (other_ca_pem, _) = ca("another CA");
    // The certificate names db.example; the tests connect to 127.0.0.1.
    let (cert, key) = server_cert("db.example", &issuer);
    cluster.set_tls(Some((&cert, &key)));
    let ca_file = cluster.dir.join("ca.pem");
    let other_ca_file = cluster.dir.join("other-ca.pem");
    std::fs::write(&ca_file, ca_pem).unwrap();
    std::fs::write(&other_ca_file, other_ca_pem).unwrap();
    let base = config_for(&cluster, "tls");
    let ca = ca_file.display();
    let other = other_ca_file.display();

    // verify-ca: the chain is ours, the name is not checked.
    let c = with_params(&base, &format!("sslmode=verify-ca&sslrootcert={ca}"));
    assert!(encrypted(&c).await.unwrap());
    // require and prefer: encrypted, nothing checked.
    assert!(encrypted(&with_params(&base, "sslmode=require"))
        .await
        .unwrap());
    assert!(encrypted(&with_params(&base, "sslmode=prefer"))
        .await
        .unwrap());
    assert!(encrypted(&base).await.unwrap(), "prefer is the default");
    // disable: plain text even though the server offers TLS.
    assert!(!encrypted(&with_params(&base, "sslmode=disable"))
        .await
        .unwrap());

    // verify-full: 127.0.0.1 is not the name in the certificate.
    let c = with_params(&base, &format!("sslmode=verify-full&sslrootcert={ca}"));
    let e = encrypted(&c).await.unwrap_err().to_string();
    assert!(
        e.contains("certificate not valid for name \"127.0.0.1\""),
        "{e}"
    );
    // Another CA: refused by verify-ca too.
    let c = with_params(&base, &format!("sslmode=verify-ca&sslrootcert={other}"));
    let e = encrypted(&c).await.unwrap_err().to_string();
    assert!(
        e.contains("invalid peer certificate") && e.contains("UnknownIssuer"),
        "{e}"
    );

    // A server without TLS: require refuses it, prefer goes on in plain text.
    cluster.set_tls(None);
    let e = encrypted(&with_params(&base, "sslmode=require"))
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("TLS") || e.contains("SSL"), "{e}");
    assert!(!encrypted(&base).await.unwrap());
}
