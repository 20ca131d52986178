//! Mutual authentication of the IPC link: each side proves it holds the
//! deployment key without sending it, so a local process that can reach the
//! socket (anyone in its group) but cannot read the key file can neither
//! pose as a worker (and forge clicks) nor as the daemon (and feed targets).
//!
//! ```text
//! edge   → daemon  Hello { protocol, fingerprint, pid }
//! daemon → edge    Challenge { nonce: daemon nonce }
//! edge   → daemon  Auth { nonce: edge nonce, proof: MAC("edge", daemon nonce, edge nonce, pid) }
//! daemon → edge    Welcome { .., proof: MAC("daemon", edge nonce, daemon nonce) }
//! ```
//!
//! The MAC is HMAC-SHA256 under a subkey of the deployment key used for
//! nothing else. Fresh random nonces on both sides make a recorded exchange
//! useless on a new connection.

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::key::DeploymentKey;

/// Bytes of a nonce.
pub const NONCE_LEN: usize = 16;
/// Bytes of a proof.
pub const PROOF_LEN: usize = 32;

/// A random challenge value.
pub type Nonce = [u8; NONCE_LEN];
/// A MAC that proves knowledge of the key.
pub type Proof = [u8; PROOF_LEN];

/// The subkey both sides compute their proofs with.
#[derive(Clone)]
pub struct LinkAuth {
    key: [u8; 32],
}

impl std::fmt::Debug for LinkAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LinkAuth(..)")
    }
}

impl LinkAuth {
    /// The IPC subkey of a deployment key.
    pub fn new(key: &DeploymentKey) -> Self {
        Self {
            key: key.derive(b"ipc-auth"),
        }
    }

    fn mac(&self, role: &[u8], parts: &[&[u8]]) -> Proof {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.key)
            .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
        mac.update(role);
        for part in parts {
            mac.update(part);
        }
        mac.finalize().into_bytes().into()
    }

    /// What the edge sends: bound to both nonces and its pid.
    pub fn edge_proof(&self, daemon_nonce: &Nonce, edge_nonce: &Nonce, pid: u32) -> Proof {
        self.mac(b"edge", &[daemon_nonce, edge_nonce, &pid.to_be_bytes()])
    }

    /// What the daemon sends back: bound to both nonces, in the other order
    /// and under another role, so an edge proof never passes as one.
    pub fn daemon_proof(&self, edge_nonce: &Nonce, daemon_nonce: &Nonce) -> Proof {
        self.mac(b"daemon", &[edge_nonce, daemon_nonce])
    }

    /// Checks an edge's proof in constant time.
    pub fn verify_edge(
        &self,
        daemon_nonce: &Nonce,
        edge_nonce: &Nonce,
        pid: u32,
        proof: &Proof,
    ) -> bool {
        equal(&self.edge_proof(daemon_nonce, edge_nonce, pid), proof)
    }

    /// Checks the daemon's proof in constant time.
    pub fn verify_daemon(&self, edge_nonce: &Nonce, daemon_nonce: &Nonce, proof: &Proof) -> bool {
        equal(&self.daemon_proof(edge_nonce, daemon_nonce), proof)
    }
}

/// A fresh nonce from the operating system's random source.
pub fn nonce() -> Result<Nonce, getrandom::Error> {
    let mut n = [0u8; NONCE_LEN];
    getrandom::getrandom(&mut n)?;
    Ok(n)
}

/// Constant-time comparison of two proofs.
fn equal(a: &Proof, b: &Proof) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proofs_bind_key_nonces_pid_and_role() {
        let a = LinkAuth::new(&DeploymentKey::from_bytes([1; 32]));
        let other = LinkAuth::new(&DeploymentKey::from_bytes([2; 32]));
        let (dn, en) = ([3u8; NONCE_LEN], [4u8; NONCE_LEN]);
        let p = a.edge_proof(&dn, &en, 77);
        assert!(a.verify_edge(&dn, &en, 77, &p));
        assert!(!other.verify_edge(&dn, &en, 77, &p), "another key");
        assert!(!a.verify_edge(&en, &dn, 77, &p), "nonces swapped");
        assert!(
            !a.verify_edge(&[5; NONCE_LEN], &en, 77, &p),
            "another challenge"
        );
        assert!(!a.verify_edge(&dn, &en, 78, &p), "another pid");
        let d = a.daemon_proof(&en, &dn);
        assert!(a.verify_daemon(&en, &dn, &d));
        assert!(
            !a.verify_daemon(&en, &dn, &p),
            "an edge proof is no daemon proof"
        );
        assert!(!other.verify_daemon(&en, &dn, &d));
        assert_ne!(nonce().unwrap(), nonce().unwrap());
    }
}
