//! `cargo run -p shortlink-core --example codes -- KEYFILE [ID...]`: prints the
//! code of each id under the key (a fresh key file is written if none exists),
//! and one string that fails the check character. A tool for trying the edge
//! before any link exists.

use std::path::Path;

use shortlink_core::{Codec, DeploymentKey};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args.next().ok_or("usage: codes KEYFILE [ID...]")?;
    let path = Path::new(&path);
    if !path.exists() {
        DeploymentKey::generate()?.write_new(path)?;
        eprintln!("wrote a new key to {}", path.display());
    }
    let codec = Codec::new(&DeploymentKey::load(path)?);
    let ids: Vec<u64> = args.map(|a| a.parse()).collect::<Result<_, _>>()?;
    for id in if ids.is_empty() {
        vec![Codec::first_id_of_length(7)]
    } else {
        ids
    } {
        let code = codec.encode(id);
        println!("valid {code} {id}");
        let mut bad = code.as_bytes().to_vec();
        let last = bad.len() - 1;
        for c in b'0'..=b'z' {
            bad[last] = c;
            if c.is_ascii_alphanumeric() && codec.decode(&bad).is_err() {
                break;
            }
        }
        println!("invalid {}", String::from_utf8_lossy(&bad));
    }
    Ok(())
}
